"""OpenVINO GenAI as ``specdec bench run`` subjects (issue 39): factories of K (:mod:`specdec.bench.pairs`, form 2).

``specdec bench run specdec.adapters.openvino.bench_openvino:prompt_lookup --k 2 4 8 ...`` measures the pipeline with
prompt lookup (K = ``num_draft_tokens``, ``max_ngram_size`` 3) against the same pipeline without speculation (K = 0);
``...:draft_model`` with the draft model (the IR copy of the same GGUF: draft = target, so the row shows the most a
draft of this size can accept, not a realistic speed-up).  Greedy unless ``settings`` says otherwise (the draft model
is not lossless at T > 0: :mod:`.pipeline`).  Each factory call builds its own pipeline on SmolLM2-135M's Q4_1 GGUF.
"""

from __future__ import annotations

from ...sampling_settings import SamplingSettings
from .pipeline import OpenVINODecoder

GREEDY = SamplingSettings(temperature=0.0)


def _gguf() -> str:
    from ...decoding.models import GGUF_FILE, _gguf_dir

    return str(_gguf_dir() / GGUF_FILE)


def prompt_lookup(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, max_ngram_size: int = 3,
                  threads: int = 1, batch: int = 16) -> OpenVINODecoder:
    """The pipeline with prompt lookup of ``num_draft_tokens`` tokens (0: the twin, no speculation)."""
    if num_draft_tokens == 0:
        return OpenVINODecoder(_gguf(), settings=settings, threads=threads, batch=batch, name="openvino-genai (no speculation)")
    return OpenVINODecoder(_gguf(), method="prompt_lookup", settings=settings, num_assistant_tokens=num_draft_tokens,
                           max_ngram_size=max_ngram_size, threads=threads, batch=batch, name=prompt_lookup.name)


def draft_model(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, threads: int = 1,
                batch: int = 16) -> OpenVINODecoder:
    """The pipeline with the draft model (= target) drafting ``num_draft_tokens`` tokens (0: the twin)."""
    from ...decoding.models import smollm2_dir
    from .ir_copy import ir_copy

    if num_draft_tokens == 0:
        return OpenVINODecoder(_gguf(), settings=settings, threads=threads, batch=batch, name="openvino-genai (no speculation)")
    return OpenVINODecoder(_gguf(), method="draft_model", settings=settings, num_assistant_tokens=num_draft_tokens,
                           draft_dir=ir_copy(_gguf(), smollm2_dir()), threads=threads, batch=batch, name=draft_model.name)


prompt_lookup.name = "openvino-genai prompt lookup"  # the subject's name in the rows (resolve_subject reads it)
draft_model.name = "openvino-genai draft model (= target)"

__all__ = ["draft_model", "prompt_lookup"]
