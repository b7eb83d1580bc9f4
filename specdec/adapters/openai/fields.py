"""A :class:`specdec.SamplingSettings` as the JSON fields of ``POST /v1/completions`` (issue 30).

The OpenAI API names ``temperature``, ``top_p``, ``presence_penalty``, ``frequency_penalty``, ``logit_bias``
(token id as a string -> bias), ``seed`` and ``n``; the rest are extensions, spelled as vLLM 0.32 spells
them (``vllm/entrypoints/openai/completion/protocol.py``, read for this adapter; SGLang uses the same
names for the ones it has): ``top_k``, ``min_p``, ``repetition_penalty``, ``min_tokens``,
``bad_words`` (text: vLLM tokenizes each word itself, with and without a leading space),
``allowed_token_ids`` and ``stop_token_ids``.  Every field is sent, "off" included, so the server's
defaults never stand in for a setting (vLLM's come from the model's ``generation_config.json`` unless it
runs with ``--generation-config vllm``).

Refused here, by name: a ``logits_processor`` (a server takes processors by qualified name at start-up,
not per request), and ``bad_words`` without a ``decode`` (ids -> text) to spell them.  What the *engine*
refuses (vLLM 0.32 with speculation refuses ``min_p`` and ``logit_bias``: HTTP 400, "not yet supported
with speculative decoding") comes back as the server's answer.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ...sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported

__all__ = ["ENGINE", "completion_fields"]

ENGINE = "an OpenAI-compatible server (vLLM's field names)"
_REFUSED = {"logits_processor": "a server takes logits processors by qualified name when it starts, not in a request"}


def completion_fields(settings: SamplingSettings, decode: Callable[[Sequence[int]], str] | None = None) -> dict:
    """The sampling fields of one request body for ``settings`` (no ``seed`` and no ``n``: the client sets
    those per request); ``decode`` spells ``bad_words`` as text (a tokenizer's ``decode``)."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    body = {
        "temperature": float(settings.temperature),
        "top_p": float(settings.top_p or 1.0),
        "top_k": int(settings.top_k or 0),  # vLLM: 0 disables
        "min_p": float(settings.min_p or 0.0),
        "repetition_penalty": float(settings.repetition_penalty),
        "presence_penalty": float(settings.presence_penalty),
        "frequency_penalty": float(settings.frequency_penalty),
    }
    if settings.logit_bias:
        body["logit_bias"] = {str(token): bias for token, bias in settings.logit_bias}
    if settings.min_new_tokens:
        body["min_tokens"] = settings.min_new_tokens
    if settings.stop_token_ids:
        body["stop_token_ids"] = list(settings.stop_token_ids)
    if settings.allowed_token_ids is not None:
        body["allowed_token_ids"] = list(settings.allowed_token_ids)
    if settings.bad_words:
        if decode is None:
            raise UnsupportedSetting(ENGINE, "bad_words", settings.bad_words,
                                     "the API takes bad words as text: pass decode= (a tokenizer's decode) to spell them")
        body["bad_words"] = [decode(list(word)) for word in settings.bad_words]
    return body
