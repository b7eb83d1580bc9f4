"""node-llama-cpp 3.21.1 as ``specdec bench run`` subjects: ``...nodellama.bench_nodellama:lookup`` and ``:draft_model``.

Each is a factory of ``num_draft_tokens`` (:mod:`specdec.bench.pairs`, form 2): K >= 1 gives
:class:`.nodellama_decoder.NodeLlamaDecoder` with its token predictor drafting K tokens at most - ``InputLookupTokenPredictor``
(``lookup``) or ``DraftSequenceTokenPredictor`` with the target's own GGUF as the draft (``draft_model``: draft =
target, the target waiting for the K drafts, no confidence cut; the row shows the most such a draft can be kept, not a
realistic speed-up) - and K = 0 the twin, the same engine without a predictor.  Greedy by default (the two sides decode
the same law at any temperature without penalties: the adapter's docstring), EOS an ordinary token (both sides emit
exactly ``--new-tokens``), one thread, one sequence (node-llama-cpp's batch: rows decoded together) unless asked.

node-llama-cpp 3.21.1 keeps at most one prediction per verification step (``scripts/findings/nodellama_one_draft_per_step.py``),
so its speed-up is capped at two tokens per target pass whatever K.
"""

from __future__ import annotations

import os

from ..._validation import as_int
from ...sampling_settings import SamplingSettings
from .nodellama_decoder import NodeLlamaDecoder

GREEDY = SamplingSettings(temperature=0.0)
LOOKUP_NAME = "node-llama-cpp input lookup"
DRAFT_NAME = "node-llama-cpp draft model (= target)"

__all__ = ["DRAFT_NAME", "LOOKUP_NAME", "draft_model", "lookup"]


def _gguf() -> str:
    from ...decoding.models import GGUF_FILE, _gguf_dir

    return str(_gguf_dir() / GGUF_FILE)


def _subject(speculation: str, num_draft_tokens: int, settings: SamplingSettings, gguf_path, threads: int,
             sequences: int, name: str) -> NodeLlamaDecoder:
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    path = _gguf() if gguf_path is None else os.fspath(gguf_path)
    common = dict(settings=settings, threads=threads, sequences=sequences, context_size=8192)
    if k == 0:
        return NodeLlamaDecoder(path, name="node-llama-cpp, no predictor", **common)
    extra = dict(draft_min_tokens=k, min_confidence=0.0) if speculation == "draft" else {}
    return NodeLlamaDecoder(path, speculation=speculation, num_draft_tokens=k, name=name, **extra, **common)


def lookup(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, gguf_path: str | os.PathLike | None = None,
           threads: int = 1, sequences: int = 1) -> NodeLlamaDecoder:
    """node-llama-cpp with ``InputLookupTokenPredictor`` drafting ``num_draft_tokens`` tokens, or at K = 0 the twin."""
    return _subject("lookup", num_draft_tokens, settings, gguf_path, threads, sequences, LOOKUP_NAME)


def draft_model(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, gguf_path: str | os.PathLike | None = None,
                threads: int = 1, sequences: int = 1) -> NodeLlamaDecoder:
    """node-llama-cpp with the target's GGUF drafting ``num_draft_tokens`` tokens, or at K = 0 the twin."""
    return _subject("draft", num_draft_tokens, settings, gguf_path, threads, sequences, DRAFT_NAME)


lookup.name = LOOKUP_NAME  # the subject's name in the rows (resolve_subject reads it)
draft_model.name = DRAFT_NAME
