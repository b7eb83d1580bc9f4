"""onnxruntime-genai 0.18.0 (CPU): top-p keeps tokens outside the top-p nucleus - a minimal reproducer (issue 39).

Plain decoding, no speculation: the first token after a prompt, sampled at temperature 0.7 and top_p 0.8 with one seed per
request, is compared with the exact nucleus (the smallest set of most likely tokens whose probability reaches 0.8), computed
from the engine's own logits of that position (``Generator.get_logits``).  An exact top-p never emits a token outside it;
0.18.0 does, at about the rate its ``FindNucleus`` tail bound predicts (``src/sampling_distribution.h``, from PR #2085,
2026-04-20: it stops at the first sorted position i with ``prefix >= p * (prefix + (V - i - 1) * e_i)``, a lower bound
on the cumulative probability, which for a 49,152-token vocabulary keeps every token down to roughly 12 nats below the
top).  Run in ``.venv-ortgenai`` after ``make .peers/ortgenai/.exported``::

    HF_HUB_OFFLINE=1 .venv-ortgenai/bin/python scripts/findings/ortgenai_top_p_nucleus.py [--n 200]

Measured (2026-11-27, SmolLM2-135M-Instruct fp32 CPU export): see the printout; the report paragraph is in
peers/README.md (ONNX Runtime GenAI).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

PROMPT_TEXT = "Once upon a time, in a small village by the sea,"
TEMPERATURE, TOP_P = 0.7, 0.8


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=".peers/ortgenai/target")
    parser.add_argument("--n", type=int, default=200, help="requests (one seed each)")
    args = parser.parse_args(argv)
    import onnxruntime_genai as og

    model = og.Model(args.model)
    prompt = og.Tokenizer(model).encode(PROMPT_TEXT)

    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=len(prompt) + 1)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    logits = np.asarray(generator.get_logits()[0, -1], dtype=np.float64)
    probs = np.exp((logits - logits.max()) / TEMPERATURE)
    probs /= probs.sum()
    order = np.argsort(-probs)
    size = int(np.searchsorted(np.cumsum(probs[order]), TOP_P)) + 1
    nucleus = set(order[:size].tolist())

    outside, first = 0, None
    for seed in range(args.n):
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=True, temperature=TEMPERATURE, top_p=TOP_P, top_k=0, random_seed=seed,
                                  max_length=len(prompt) + 1)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt)
        generator.generate_next_token()
        token = int(generator.get_sequence(0)[-1])
        if token not in nucleus:
            outside += 1
            first = seed + 1 if first is None else first
    print(json.dumps({"onnxruntime_genai": og.__version__, "prompt": PROMPT_TEXT, "temperature": TEMPERATURE, "top_p": TOP_P,
                      "exact_nucleus_size": size, "requests": args.n, "tokens_outside_the_nucleus": outside,
                      "first_outside_at_request": first}, indent=1))
    return 1 if outside else 0


if __name__ == "__main__":
    raise SystemExit(main())
