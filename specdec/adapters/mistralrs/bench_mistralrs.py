"""mistral.rs 0.6.0 with a draft model as a ``specdec bench run`` subject: ``...mistralrs.bench_mistralrs:draft_model`` (issue 39).

:func:`draft_model` is a factory of ``num_draft_tokens`` (:mod:`specdec.bench.pairs`, form 2): K >= 1 gives
:class:`.mistralrs_decoder.MistralRsDecoder` with the target's own GGUF as its draft (``speculative_gamma`` = K: draft
= target, so every draft is kept and the row shows the most a draft of this size can accept, not a realistic
speed-up); K = 0 its twin, the same engine without a draft (a Runner built without ``which_draft``: speculation off).
Greedy by default, the only setting where mistral.rs's output with a draft is the target's: 0.6.0 verifies by the
argmax of draft and target (:mod:`.mistralrs_decoder`), so at T > 0 the two sides would not decode the same law.

**Prompts as text.**  0.6.0 takes text prompts only, and :class:`MistralRsDecoder` refuses a prompt whose ids do not come
back from the engine's own encoding of their text.  The bench's prompts are made with transformers' chat template,
and one of them does not round-trip (the summarisation prompt's ``"\\n\\n"`` is two ids there, one for mistral.rs).
A benchmark needs the same work on both sides, not these exact ids, so :class:`TextPromptDecoder` sends each prompt's
text (``Runner.detokenize_text``) and lets the engine encode it: both sides decode the same text, which may be a
token shorter than the ids given.  Never use it for a conformance check (the prompt is not the one the oracle sees).

**Stop rule.**  mistral.rs 0.6.0 always stops a row at ``<|im_end|>`` (a logit bias cannot prevent it: 0.6.0
ignores the bias, scripts/findings/mistralrs_logit_bias_ignored.py), so a prompt whose greedy answer ends before
``--new-tokens`` makes the bench refuse the pair (both sides must emit exactly that many).  The first prompt of every
task kind runs to 24 tokens or more (translation's ends at 26).

**Batch.**  One request at a time (the adapter sends each row as its own request, in order); ``max_seqs`` is the
engine's limit of sequences at once.  **Threads**: rayon's pool (``RAYON_NUM_THREADS``, one per process), 1 by
default, as the other engines' subjects.

**Seen on 0.6.0 (CPU), not understood.**  With the draft every request is far slower than without (a first 8-token
request about 14-18 s against 1.6 s, both Runners on SmolLM2-135M's Q4_1 GGUF), and the time of a request *grows with
the requests the Runner has served*: eight identical 8-token requests took 18.5, 14.0, 18.6, 23.2, 27.3, 28.7, 30.5,
31.3 s (2026-11-27, a loaded 2-core machine), while the Runner without a draft took 1.5-1.8 s each time.  So a row's
speedup depends on how many requests the speculative Runner served before it: run one task kind per process
(``--kinds qa``) to give every row the same history, as docs/bench.md's rows were made.  A Runner cannot be rebuilt
in a process after another was dropped (:mod:`.mistralrs_decoder`), so the subject keeps its decoders for the run.
"""

from __future__ import annotations

import os

from ..._validation import as_int
from ...sampling_settings import SamplingSettings
from .mistralrs_decoder import MistralRsDecoder

NAME = "mistral.rs draft model (= target)"
GREEDY = SamplingSettings(temperature=0.0)


class TextPromptDecoder(MistralRsDecoder):
    """:class:`MistralRsDecoder` that sends a prompt's text as it is, encoded by the engine (module docstring): for
    benchmarks only."""

    def _prompt_text(self, runner, prompt: list[int]) -> str:
        return runner.detokenize_text(list(prompt), False)


def _gguf() -> str:
    from ...decoding.models import GGUF_FILE, _gguf_dir

    return str(_gguf_dir() / GGUF_FILE)


def draft_model(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, gguf_path: str | os.PathLike | None = None,
                threads: int | None = 1, max_seqs: int = 16) -> TextPromptDecoder:
    """mistral.rs with the target's GGUF drafting ``num_draft_tokens`` tokens (``speculative_gamma``), or at K = 0 the
    same engine without a draft (the twin).  ``gguf_path``: the target's GGUF (default SmolLM2-135M's Q4_1)."""
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    path = _gguf() if gguf_path is None else gguf_path
    if k == 0:
        return TextPromptDecoder(path, settings=settings, threads=threads, max_seqs=max_seqs, name="mistral.rs, no draft")
    return TextPromptDecoder(path, settings=settings, gamma=k, threads=threads, max_seqs=max_seqs, name=NAME)


draft_model.name = NAME  # the subject's name in the rows (resolve_subject reads it)

__all__ = ["NAME", "TextPromptDecoder", "draft_model"]
