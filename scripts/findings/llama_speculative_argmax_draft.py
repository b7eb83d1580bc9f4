"""llama.cpp's ``llama-speculative`` example (commit 0c1e570, as vendored in llama-cpp-python 0.3.36): at temperature > 0
it drafts the draft model's *most likely* token and verifies it with the rejection rule meant for a *sampled* draft,
so its output does not follow the target's law.

In ``examples/speculative/speculative.cpp`` (``main``) each draft step takes ``cur_p->data[0]`` after
``common_sampler_get_candidates(drafts[s].smpl, true)`` sorted the draft's candidates by probability: x = argmax q.
The stochastic verification then accepts x when ``r <= p(x) / q(x)`` and otherwise draws from the residual
``max(0, p - q)``.  That rule (Leviathan et al.; docs/reference.md F1) returns p only when x ~ q.  With x = argmax q
the drafted position emits x with probability min(1, p(x)/q(x)): with the draft model equal to the target (p = q,
the smallest case that isolates the rule) it emits argmax p almost surely, so ``--temp 1`` becomes greedy decoding
at every drafted position.  The first token of an answer is never drafted, so it is the second token that shows it.

Run (the binary of ``make llama-speculative``; about a minute on 2 cores)::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.findings.llama_speculative_argmax_draft [--n 60]

It asks for 2 tokens after the " cat"/" dog" prompt (fixtures/vllm_subjects.PROMPT), ``n`` seeded runs with
``--spec-draft-n-max 0`` (no draft) and ``n`` with ``--spec-draft-n-max 4``, both ``--temp 1 --top-k 0 --top-p 1
--min-p 0``, draft = target = SmolLM2-135M-Instruct Q4_1; prints how often the second token is the target's most
likely one against its probability under llama.cpp's own law (LlamaCppOracle), and exits 1 when the drafted runs
are off that law (a binomial test at 1e-6) while the undrafted runs are not: the bug is present.
"""

from __future__ import annotations

import argparse
import sys

from scipy.stats import binomtest

PROMPT = [9786, 2767, 2767, 2644, 2767, 2644, 2644, 2767, 2644, 2767, 2767, 2767, 2644, 2644, 2767, 2644, 2767, 2644]


def runs(k: int, n: int, seed: int) -> list[list[int]]:
    """``n`` answers of 2 tokens from llama-speculative with ``--spec-draft-n-max k`` at T = 1, no truncation."""
    from fixtures.llama_subjects import gguf_path
    from specdec import SamplingSettings
    from specdec.adapters.llama_cpp.speculative_example import SpeculativeExampleDecoder

    decoder = SpeculativeExampleDecoder(gguf_path(), num_draft_tokens=k, settings=SamplingSettings(temperature=1.0), processes=2)
    rows = decoder([PROMPT] * n, 2, seed)
    print(f"  K={k}: {decoder.speculation_counts()}")
    decoder.close()
    return rows


def second_token_law(first: int):
    """llama.cpp's law of the second token after ``first`` (the end-of-generation ids banned, as --ignore-eos does)."""
    from fixtures.llama_subjects import gguf_path
    from specdec import SamplingSettings
    from specdec.adapters.llama_cpp.oracle import LlamaCppOracle

    oracle = LlamaCppOracle(gguf_path(), settings=SamplingSettings(temperature=1.0, logit_bias={0: -100.0, 2: -100.0, 4: -100.0}))
    law = oracle.law(oracle.logits(PROMPT, [first, 0])[1], PROMPT, [first])  # the whole vocabulary's probabilities
    oracle.close()
    return law


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="runs per side")
    args = parser.parse_args(argv)
    sides = {k: runs(k, args.n, 1 + k) for k in (0, 4)}
    first = max({r[0] for r in sides[0]}, key=lambda t: sum(r[0] == t for r in sides[0]))  # the most frequent first token
    law = second_token_law(first)
    top = int(law.argmax())
    p_top = float(law[top])
    off = {}
    for k, rows in sides.items():
        after = [r[1] for r in rows if r[0] == first]
        hits = sum(t == top for t in after)
        test = binomtest(hits, len(after), p_top)
        off[k] = test.pvalue < 1e-6
        print(f"K={k}: after first token {first}, second token = {top} (the target's most likely) in {hits} of {len(after)} "
              f"({hits / max(len(after), 1):.3f}); llama.cpp's law gives it {p_top:.3f}; binomial p = {test.pvalue:.2e}")
    bug = off[4] and not off[0]
    print("BUG: the drafted runs do not follow the target's law" if bug else "no difference shown")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
