"""mistral.rs 0.6.0: with a draft model, sampling (T > 0) becomes greedy decoding - every token is the target's argmax.

``SpeculativePipeline::step`` (``mistralrs-core/src/pipeline/speculative.rs``, tag v0.6.0) draws the draft's gamma
tokens and verifies them with ``sample_target_sequence_speculative`` (``mistralrs-core/src/pipeline/sampling.rs``):
the target's token at each position is kept while it equals the draft's.  Both the draft and the target call
``sample_sequence(..., sample_speculative = true, ...)``, and ``Sampler::sample`` (``mistralrs-core/src/sampler.rs``)
then takes ``sample_speculative_top_kp_min_p``, which truncates the tempered law (top-k, top-p, min-p) and returns
its **argmax**; the RNG is never used.  So every token emitted with a draft model is the target's argmax whatever the
temperature, although the struct's doc comment describes rejection sampling (accept with p/q, resample from
norm(max(0, p - q))).  Without a draft the same request samples (``sample_top_kp_min_p`` -> ``sample_multinomial``).
The draft here is the target's own GGUF file (draft = target), so any lossless rule would leave the law unchanged.

Run (no statistics needed: the answers with the draft are all the same)::

    HF_HUB_OFFLINE=1 .venv-mistralrs/bin/python -m scripts.findings.mistralrs_argmax_at_t1

It prints the first new token of 12 requests at T = 1 with and without the draft, and the greedy one, and exits 1 when
every answer with the draft is the greedy token while the answers without it vary (the bug is present), 0 otherwise.
"""

from __future__ import annotations

import collections
import sys

PROMPT_TEXT = "Once upon a time, there was a"  # SmolLM2's next-token law here is flat: its top token has about 0.1
ROWS = 12
GAMMA = 2


_KEPT = []  # mistral.rs 0.6.0: a Runner built after another was dropped fails its dummy run ("Engine is dead"): keep them


def first_tokens(gamma: int | None, temperature: float, rows: int) -> list[int]:
    """The first new token id of ``rows`` requests (mistral.rs 0.6.0, SmolLM2-135M-Instruct Q4_1, text prompt)."""
    from specdec import SamplingSettings
    from specdec.adapters.mistralrs import MistralRsDecoder
    from specdec.decoding.models import GGUF_FILE, _gguf_dir

    decoder = MistralRsDecoder(str(_gguf_dir() / GGUF_FILE), settings=SamplingSettings(temperature=temperature), gamma=gamma)
    _KEPT.append(decoder)
    prompt = list(decoder.runner.tokenize_text(PROMPT_TEXT, False, None))
    return [row[0] for row in decoder([prompt] * rows, 1, 0)]


def main() -> int:
    import mistralrs  # noqa: F401 - fails early where the package is absent
    from importlib import metadata

    print(f"mistralrs {metadata.version('mistralrs')}, prompt {PROMPT_TEXT!r}, draft = target, gamma = {GAMMA}")
    greedy = first_tokens(None, 0.0, 1)[0]
    without = first_tokens(None, 1.0, ROWS)
    with_draft = first_tokens(GAMMA, 1.0, ROWS)
    print(f"greedy (T=0, no draft): {greedy}")
    print(f"T=1, no draft:   {dict(collections.Counter(without))}")
    print(f"T=1, draft model: {dict(collections.Counter(with_draft))}")
    bug = set(with_draft) == {greedy} and len(set(without)) > 1
    print("BUG: with a draft model every answer is the greedy token" if bug else "no bug: the answers with the draft vary")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
