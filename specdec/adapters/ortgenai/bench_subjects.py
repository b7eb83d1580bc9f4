"""ONNX Runtime GenAI as benchmark subjects: ``specdec bench run specdec.adapters.ortgenai.bench_subjects:ngram`` (or ``:draft_model``).

Factories of ``num_draft_tokens`` (:mod:`specdec.bench.pairs`, form 2): K >= 1 gives :class:`.genai_decoder.OrtGenAIDecoder`
with n-gram speculation (n = 3) or the exported 4-layer draft, K fixed (``min_adaptive_k=0``); K = 0 the same engine
without speculation, on the target's own folder (the twin).  Greedy by default (both sides emit the same tokens).
Rows end after the model's EOS on both sides (the same stop rule, :class:`specdec.bench.pairs.BenchSubject`).  Batch:
onnxruntime-genai speculates at batch size 1 only; a call with B prompts decodes them one after another.  No measured
step costs (the bench's "ideal" cost model).

The export (``scripts/export_ortgenai.py``) is read from ``$SPECDEC_ORTGENAI_MODELS``, else ``.peers/ortgenai`` under
the working directory (``make .peers/ortgenai/.exported``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ...sampling_settings import SamplingSettings
from .genai_decoder import OrtGenAIDecoder
from .speculation import Speculation

MODELS_ENV = "SPECDEC_ORTGENAI_MODELS"
GREEDY = SamplingSettings(temperature=0.0)


def models_dir() -> Path:
    return Path(os.environ.get(MODELS_ENV) or ".peers/ortgenai")


def _decoder(folder: str, speculation: Speculation | None, settings: SamplingSettings, threads: int) -> OrtGenAIDecoder:
    return OrtGenAIDecoder(models_dir() / folder, settings=settings, speculation=speculation, threads=threads)


def ngram(num_draft_tokens: int, settings: SamplingSettings = GREEDY, threads: int = 1) -> OrtGenAIDecoder:
    """n-gram speculation (n = 3, K = ``num_draft_tokens``), or its twin at K = 0."""
    if num_draft_tokens == 0:
        return _decoder("target", None, settings, threads)
    return _decoder("target", Speculation("ngram", max_draft_tokens=num_draft_tokens, ngram_size=3), settings, threads)


def draft_model(num_draft_tokens: int, settings: SamplingSettings = GREEDY, threads: int = 1) -> OrtGenAIDecoder:
    """The exported 4-layer draft (K = ``num_draft_tokens``), or the twin at K = 0."""
    if num_draft_tokens == 0:
        return _decoder("target", None, settings, threads)
    return _decoder("spec_draft4", Speculation("draft_model", max_draft_tokens=num_draft_tokens), settings, threads)
