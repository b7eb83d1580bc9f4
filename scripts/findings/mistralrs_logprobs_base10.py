"""mistral.rs 0.6.0: the ``logprob`` of an answer's tokens and of ``top_logprobs`` is a base-10 logarithm.

OpenAI's API, whose fields mistral.rs's requests and responses copy, means ``logprob`` as the natural logarithm of
the token's probability.  mistral.rs 0.6.0 takes ``probs[token].log(10.0)`` (``mistralrs-core/src/sampler.rs``,
``sample_multinomial`` and ``get_top_logprobs``, tag v0.6.0; also ``sample_argmax`` and the speculative path), so a
user who exponentiates reads wrong probabilities: at the first new token of "Once upon a time, there was a" (SmolLM2,
no draft, T = 1) the top entries read as about 0.30 each, and the exponentials of the 2,000 best entries sum to
about 45 (a law sums to 1).  Known upstream: mistral.rs #2327 ("return natural-log probabilities from `logprobs`,
not log10", merged 2026-07-09, after 0.6.0, the last CPU wheel that speculates without paged attention).

This script asks one answer with ``top_logprobs=2000`` from a Runner without a draft (the adapter's verbatim prompt:
the ids of that text, as the project's oracle sees them), and compares the first position's entries with the law of
transformers' float32 copy of the same weights (``specdec.decoding.models.load_smollm2``, the oracle of the project's
mistral.rs checks): the ratio of each of the 5 best entries' ``exp(logprob)`` and ``10 ** logprob`` to the copy's
probability of that id, and the two sums over the list.

Run::

    HF_HUB_OFFLINE=1 .venv-mistralrs/bin/python -m scripts.findings.mistralrs_logprobs_base10

It exits 1 when the exponentials of the list sum above 1 (no natural-log reading is possible) while ``10 ** logprob``
sums to the copy's mass of the same ids within 0.02 (the bug is present), 0 otherwise.  About 30 s.  Seen
2026-12-07: ``exp(logprob)`` 4.8-6.9 times the copy's probability of the 5 best ids, ``10 ** logprob`` 0.87-1.07 times
it (Q4_1 against the float32 copy); sums 44.7 and 0.9648, the copy's mass of the 2,000 ids 0.9648.
"""

from __future__ import annotations

import math
import sys

STORY = [6403, 1980, 253, 655, 28, 665, 436, 253]  # "Once upon a time, there was a"
TOP = 2000

_KEPT = []  # mistral.rs 0.6.0: a Runner built after another was dropped fails its dummy run ("Engine is dead"): keep them


def main() -> int:
    from importlib import metadata

    import torch
    from mistralrs import ChatCompletionRequest

    import specdec
    from specdec.adapters.mistralrs import MistralRsDecoder
    from specdec.decoding.models import GGUF_FILE, _gguf_dir, load_smollm2

    decoder = MistralRsDecoder(str(_gguf_dir() / GGUF_FILE), settings=specdec.SamplingSettings(temperature=1.0))
    runner = decoder.runner
    _KEPT.append(decoder)
    request = ChatCompletionRequest(messages=decoder._prompt_text(runner, STORY), model="specdec", max_tokens=1,
                                    logprobs=True, top_logprobs=TOP, temperature=1.0)
    top = [(t.token, t.logprob) for t in runner.send_chat_completion_request(request).choices[0].logprobs.content[0].top_logprobs]
    model, _ = load_smollm2()
    with torch.no_grad():
        law = model(torch.tensor([STORY])).logits[0, -1].double().softmax(-1)
    print(f"mistralrs {metadata.version('mistralrs')}, no draft, T = 1, first new token after {STORY} ({len(top)} entries)")
    print("   id   logprob   exp(logprob)/p   10**logprob/p   p (transformers' float32 copy)")
    for token, logprob in top[:5]:
        p = float(law[token])
        print(f"{token:5d} {logprob:9.4f} {math.exp(logprob) / p:16.3f} {10 ** logprob / p:15.3f}   {p:.4f}")
    natural = sum(math.exp(lp) for _, lp in top)
    decimal = sum(10 ** lp for _, lp in top)
    print(f"sum over the list: exp(logprob) {natural:.3f}, 10**logprob {decimal:.4f} "
          f"(the copy's mass of these ids {float(law[[t for t, _ in top]].sum()):.4f})")
    bug = natural > 1 and abs(decimal - float(law[[t for t, _ in top]].sum())) < 0.02
    print("BUG: the logprobs are base-10 logarithms" if bug else "no bug: the logprobs read as natural logarithms")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
