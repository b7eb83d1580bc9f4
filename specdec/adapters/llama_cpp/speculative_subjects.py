"""llama.cpp's ``llama-speculative`` example as a ``specdec bench run`` subject: ``...llama_cpp.speculative_subjects:draft_model``.

:func:`draft_model` is a factory of ``num_draft_tokens`` (:mod:`specdec.bench.pairs`, form 2): K >= 1 gives
:class:`.speculative_example.SpeculativeExampleDecoder` with SmolLM2-135M's Q4_1 GGUF as target and as draft (``-md``,
the same file: draft = target, so the row shows the most a draft of this size can accept, not a realistic speed-up)
and ``--spec-draft-n-max K``; K = 0 its twin, the same binary with ``--spec-draft-n-max 0`` (the example refuses to run
without ``-md``).  The twin drafts nothing (``examples/speculative/speculative.cpp``, ``main``: the drafting loop runs
``n_draft`` = 0 times), but it is not llama.cpp without a draft model: it loads the draft and prefills it with the
prompt ("eval the prompt with both models"), and after every emitted token it still evaluates that token on the draft
(``batch_dft.add(token_id, n_past_dft, 0, true)`` then ``llama_process(ctx_dft, ...)``, at the end of each round).  So
each token of the twin costs a target and a draft evaluation - with draft = target about twice a plain decoding
step - and its speedups are over this twin, larger than they would be over llama.cpp decoding without a draft.

Greedy by default: at T = 0 the example verifies by the target's argmax and keeps drafts while equal, so both sides emit
the target's greedy tokens (at T > 0 its rule is not lossless: :mod:`.speculative_example`).  ``--ignore-eos``: every
row has exactly ``max_new_tokens`` tokens (the bench's stop rule).

**One process per answer**: every row is a run of the binary, so a call's time includes the process's start, both
models' load from the page cache and the prompt's prefill, on both sides alike - the row is end to end per request,
and the start-up share pulls the speedup towards 1.  A call with B prompts runs ``processes`` binaries side by side
(default 1: one after another).  Counters (:meth:`SpeculativeExampleDecoder.speculation_counts`): the example's
``n_drafted`` and ``n_accept`` and its rounds that drafted.  No measured step costs (the bench's "ideal" cost model).
"""

from __future__ import annotations

import os

from ..._validation import as_int
from ...sampling_settings import SamplingSettings
from .speculative_example import DEFAULT_BINARY, SpeculativeExampleDecoder

NAME = "llama-speculative draft model (= target)"
GREEDY = SamplingSettings(temperature=0.0)


def _gguf() -> str:
    from ...decoding.models import GGUF_FILE, _gguf_dir

    return str(_gguf_dir() / GGUF_FILE)


def draft_model(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, model_path: str | os.PathLike | None = None,
                threads: int = 1, processes: int = 1, context: int = 2048, binary=DEFAULT_BINARY) -> SpeculativeExampleDecoder:
    """``llama-speculative`` drafting up to ``num_draft_tokens`` tokens a round with the target's own GGUF (K = 0: the
    twin, ``--spec-draft-n-max 0``).  ``model_path``: the GGUF (default SmolLM2-135M's Q4_1); ``context``: ``-c``
    (prompt and answer must fit); ``threads`` per process, ``processes`` side by side."""
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    path = _gguf() if model_path is None else model_path
    return SpeculativeExampleDecoder(path, num_draft_tokens=k, settings=settings, threads=threads, processes=processes,
                                     context=context, binary=binary,
                                     name=NAME if k else "llama-speculative, no draft (--spec-draft-n-max 0)")


draft_model.name = NAME  # the subject's name in the rows (resolve_subject reads it)

__all__ = ["NAME", "draft_model"]
