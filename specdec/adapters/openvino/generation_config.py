"""A :class:`specdec.SamplingSettings` record as OpenVINO GenAI's ``GenerationConfig`` (openvino-genai 2026.4.1.0).

What OpenVINO GenAI's sampler does with the fields set here (``src/cpp/src/sampling/logit_processor.hpp``,
``LogitProcessor``'s constructor; openvino.genai at commit da1db86, after tag 2026.3.0.0): penalties first
(repetition, presence, frequency), then for a multinomial request top-k -> temperature (a softmax) -> min-p ->
top-p, and the draw renormalises what top-p kept (``Sampler::_multinomial_sample``).  Temperature 0 is
``do_sample=False``: ``Sampler::_greedy_sample``, an argmax.

Mapped: temperature, top-k, top-p, min-p and the three penalties (OpenVINO's own penalties: compare them between
speculation on and off of this engine, never against another engine's).  Refused by name
(:class:`specdec.sampling_settings.UnsupportedSetting`): a logit bias, bad words, allowed token ids, a user logits
processor (``GenerationConfig`` has no such fields), stop tokens and a minimum of new tokens (not mapped: the adapter
sets ``ignore_eos``, under which OpenVINO's sampler ignores every stop id, ``Sampler::sample_from_sequence_group``),
more than one sample per request, and unseeded requests (OpenVINO has no randomness of its own: an unseeded request
draws from ``rng_seed`` 0, so every row of a call would be the same).
"""

from __future__ import annotations

from ..._validation import as_float, as_int
from ...sampling_settings import SamplingSettings, refuse_unsupported, settings_from

ENGINE = "OpenVINO GenAI"
UNSUPPORTED = {
    "logit_bias": "GenerationConfig has no logit bias",
    "bad_words": "GenerationConfig has no bad words (only no_repeat_ngram_size)",
    "allowed_token_ids": "GenerationConfig has no allowed-token list",
    "logits_processor": "GenerationConfig takes no user logits processor",
    "stop_token_ids": "not mapped by this adapter: it sets ignore_eos, under which OpenVINO ignores stop ids",
    "min_new_tokens": "not mapped by this adapter (it needs stop tokens, which it does not map)",
    "seeded": "OpenVINO has no randomness of its own: an unseeded request draws from rng_seed 0, every row alike",
}


def checked_settings(sampling=None, settings=None) -> SamplingSettings:
    """The record of ``sampling=`` or ``settings=``, every field OpenVINO GenAI cannot take refused by name."""
    record = settings_from(sampling, settings)
    refuse_unsupported(record, ENGINE, UNSUPPORTED)
    if record.samples_per_request not in (None, 1):
        refuse_unsupported(record, ENGINE, {"samples_per_request": "the adapter sends one request per answer "
                                            "(num_return_sequences is not mapped)"})
    return record


def generation_config(settings: SamplingSettings, *, max_new_tokens: int, seed: int, method: str | None = None,
                      num_assistant_tokens: int | None = None, assistant_confidence_threshold: float | None = None,
                      max_ngram_size: int | None = None, logprobs: int = 0):
    """One request's ``openvino_genai.GenerationConfig``: the record's warpers and penalties, ``rng_seed``, EOS
    ignored, and the speculation fields of ``method`` (None, "draft_model" or "prompt_lookup")."""
    import openvino_genai

    if not isinstance(settings, SamplingSettings):
        raise TypeError(f"settings must be a specdec.SamplingSettings, got {type(settings).__name__}")
    config = openvino_genai.GenerationConfig()
    config.max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
    config.min_new_tokens = 0
    config.ignore_eos = True  # EOS is an ordinary token (E8): every row has max_new_tokens tokens
    config.rng_seed = as_int("seed", seed, minimum=0, maximum=2**64 - 1)
    config.logprobs = as_int("logprobs", logprobs, minimum=0)
    config.repetition_penalty = float(settings.repetition_penalty)
    config.presence_penalty = float(settings.presence_penalty)
    config.frequency_penalty = float(settings.frequency_penalty)
    if settings.greedy:
        config.do_sample = False
    else:
        config.do_sample = True
        config.temperature = float(settings.temperature)
        config.top_p = float(settings.top_p or 1.0)
        if settings.top_k:
            config.top_k = int(settings.top_k)
        config.min_p = float(settings.min_p or 0.0)
    if method == "draft_model":
        if assistant_confidence_threshold is not None:
            config.assistant_confidence_threshold = as_float("assistant_confidence_threshold", assistant_confidence_threshold,
                                                             minimum=0.0, maximum=1.0, low_open=True)
        else:
            config.num_assistant_tokens = as_int("num_assistant_tokens", num_assistant_tokens, minimum=1)
    elif method == "prompt_lookup":
        config.num_assistant_tokens = as_int("num_assistant_tokens", num_assistant_tokens, minimum=1)
        config.max_ngram_size = as_int("max_ngram_size", max_ngram_size, minimum=1)
    elif method is not None:
        raise ValueError(f"method must be None, 'draft_model' or 'prompt_lookup', got {method!r}")
    config.validate()
    return config


__all__ = ["ENGINE", "UNSUPPORTED", "checked_settings", "generation_config"]
