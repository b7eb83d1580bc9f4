"""A :class:`specdec.SamplingSettings` record as ONNX Runtime GenAI's search options (``GeneratorParams.set_search_options``).

onnxruntime-genai 0.18.0 samples with ``do_sample``, ``temperature``, ``top_k``, ``top_p``, ``repetition_penalty``,
``min_length`` (a total sequence length) and ``random_seed`` (``src/config.h``, ``Config::Search``; the decision in
``Generator::InitializeSamplingMethod``, ``src/generators.cpp``: greedy when ``do_sample`` is false, ``top_k == 1`` or
``temperature == 0``; otherwise top-k and top-p, top-k alone or top-p alone).  What the record asks beyond that has no
search option, and each such field is refused by name (:class:`specdec.sampling_settings.UnsupportedSetting`):

* ``min_p``, ``presence_penalty``, ``frequency_penalty``, ``logit_bias``, ``bad_words``, ``allowed_token_ids``,
  ``logits_processor``: no option (external logits, ``Generator.set_logits``, are not used: they replace the target's
  row only, not the rows speculation verifies);
* ``min_new_tokens``: ``min_length`` masks the model's EOS ids before a total length; not mapped by this adapter;
* ``samples_per_request`` other than 1: speculative decoding takes one sequence (``num_return_sequences`` 1);
* ``stop_token_ids`` other than the model's EOS ids (or none): a row always ends after the model's EOS
  (``genai_config.json``'s ``eos_token_id``) and at no other token.

Two defaults would change the law if left alone: ``top_k`` defaults to 50 (the export's ``genai_config.json``) and is
set to 0 (off) unless the record asks; ``top_p`` 0 selects the top-p sampler with an empty nucleus (one token), so "off"
is sent as 1.0.  ``repetition_penalty`` is transformers' convention over the whole sequence (prompt and answer:
``ApplyRepetitionPenaltyToLogits``, ``src/sampling_distribution.h``).  ``seeded=False`` sends ``random_seed=-1`` (seeded
from ``std::random_device``).
"""

from __future__ import annotations

from ...sampling_settings import SamplingSettings, UnsupportedSetting
from ...warpers import SamplingConfig

ENGINE = "onnxruntime-genai 0.18.0"
_NO_OPTION = ("min_p", "presence_penalty", "frequency_penalty", "logit_bias", "bad_words", "allowed_token_ids",
              "logits_processor", "min_new_tokens")


def checked_settings(sampling: SamplingConfig | None, settings: SamplingSettings | None) -> SamplingSettings:
    """The record an adapter works from: ``settings``, or ``sampling``'s warpers as one; not both."""
    if sampling is not None and settings is not None:
        raise ValueError("give sampling= (a SamplingConfig) or settings= (a SamplingSettings), not both")
    if settings is None:
        if sampling is not None and not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
        return SamplingSettings.from_sampling(sampling or SamplingConfig())
    if not isinstance(settings, SamplingSettings):
        raise TypeError(f"settings must be a specdec.SamplingSettings, got {type(settings).__name__}")
    return settings


def refuse_unmapped(settings: SamplingSettings, eos_token_ids: tuple[int, ...]) -> None:
    """Raise :class:`UnsupportedSetting` for the first field of ``settings`` the engine cannot take (module docstring)."""
    changed = settings.changed()
    for field in _NO_OPTION:
        if field in changed:
            raise UnsupportedSetting(ENGINE, field, changed[field], "onnxruntime-genai has no search option for it")
    if settings.samples_per_request not in (None, 1):
        raise UnsupportedSetting(ENGINE, "samples_per_request", settings.samples_per_request,
                                 "speculative decoding returns one sequence per request")
    if settings.stop_token_ids and tuple(sorted(settings.stop_token_ids)) != tuple(sorted(eos_token_ids)):
        raise UnsupportedSetting(ENGINE, "stop_token_ids", settings.stop_token_ids,
                                 f"a row ends after the model's EOS ids {list(eos_token_ids)} and no other token")


def search_options(settings: SamplingSettings, *, max_length: int, seed: int | None) -> dict:
    """``set_search_options`` keywords for one request of ``max_length`` total tokens (prompt and answer); ``seed``
    None: unseeded (``random_seed=-1``)."""
    if settings.greedy:
        options = {"do_sample": False, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
    else:
        options = {"do_sample": True, "temperature": float(settings.temperature), "top_k": int(settings.top_k or 0),
                   "top_p": float(settings.top_p) if settings.top_p is not None else 1.0}
    options.update(repetition_penalty=float(settings.repetition_penalty), max_length=int(max_length), min_length=0,
                   num_beams=1, num_return_sequences=1, no_repeat_ngram_size=0,
                   random_seed=-1 if seed is None or not settings.seeded else int(seed))
    return options
