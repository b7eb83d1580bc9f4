"""A :class:`specdec.SamplingSettings` as the keywords of vLLM's in-process ``SamplingParams`` (issue 30).

vLLM 0.32's ``SamplingParams`` (``vllm/sampling_params.py``, read for this adapter) has the fields the OpenAI
server fills from a request, under the same names, so the mapping is :func:`specdec.adapters.openai.fields.completion_fields`'
with two differences: ``logit_bias`` is keyed by the token id as an int (the server converts the JSON strings),
and ``bad_words`` are spelled with the engine's own tokenizer when no ``decode`` is given.

Refused here, by name: a ``logits_processor`` (vLLM's V1 engine has no per-request processors: custom ones are
classes given to the engine when it is built, ``LLM(logits_processors=[...])``), and ``samples_per_request``
other than 1 (the in-process adapter sends one request per row).  What the *engine* refuses (with speculation,
``min_p`` and ``logit_bias``: "not yet supported with speculative decoding", raised by
``SamplingParams._validate_spec_decode``) comes back from ``generate`` as its ``VLLMValidationError`` (a
``VLLMClientError``: what its server answers with HTTP 400), which :class:`specdec.adapters.vllm.offline.VLLMDecoder`
raises as :class:`specdec.errors.EngineRefusal`.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ...sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported
from ..openai.fields import completion_fields

__all__ = ["ENGINE", "sampling_params_kwargs"]

ENGINE = "vLLM 0.32 (in process)"
_REFUSED = {"logits_processor": "vLLM's V1 engine has no per-request logits processors (processor classes are given to "
                                "LLM(logits_processors=...) when the engine is built)"}


def sampling_params_kwargs(settings: SamplingSettings, decode: Callable[[Sequence[int]], str] | None = None) -> dict:
    """``SamplingParams`` keywords for ``settings`` (no ``seed``, ``n``, ``max_tokens`` or ``ignore_eos``: the
    decoder sets those per request); ``decode`` spells ``bad_words`` as text."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    if settings.samples_per_request not in (None, 1):
        raise UnsupportedSetting(ENGINE, "samples_per_request", settings.samples_per_request,
                                 "the in-process adapter sends one request (one seed) per row")
    if settings.bad_words and decode is None:
        raise UnsupportedSetting(ENGINE, "bad_words", settings.bad_words, "SamplingParams takes bad words as text: pass decode=")
    kwargs = completion_fields(settings, decode)
    if "logit_bias" in kwargs:
        kwargs["logit_bias"] = {int(token): float(bias) for token, bias in kwargs["logit_bias"].items()}
    return kwargs
