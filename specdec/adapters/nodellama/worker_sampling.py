"""A :class:`specdec.SamplingSettings` record as the ``sampling`` object of the nodellama worker (node-llama-cpp 3.21.1).

The worker passes it to ``LlamaContextSequence.evaluate`` (``dist/evaluator/LlamaContext/LlamaContext.js``,
``evaluateWithMetadata`` and ``_resolveSamplerConfig``), whose native sampler (``llama/addon/AddonSampler.cpp``,
``AddonSampler::rebuildChainIfNeeded``) chains llama.cpp's samplers in this order: penalties, top-k, top-p, min-p,
temperature, then the seeded draw (``llama_sampler_init_dist``); a temperature of 0 is argmax.  So top-k, top-p and
min-p truncate the *untempered* law, as llama.cpp's own chain does (:mod:`specdec.adapters.llama_cpp.sampler_chain`).

``evaluate`` defaults ``topK`` to 40 and ``topP`` to 0.95: the map always sends all four warpers (top-k 0 is the whole
vocabulary in ``AddonSampler::ApplyConfig``; top-p 1 and min-p 0 keep every token), so "off" in the record is off in
the engine.  The penalties (``repetition_penalty``, ``presence_penalty``, ``frequency_penalty``: llama.cpp's
``llama_sampler_init_penalties``) read the last :data:`PENALTY_LAST_N` tokens of the *answer* (the worker's
``punishTokens``, as ``LlamaCompletion``'s ``getPenaltyTokens`` with ``penalizeNewLine``), not the prompt.

Refused by name (:class:`specdec.sampling_settings.UnsupportedSetting`): a logit bias (``tokenBias`` exists but is not
mapped or tested), a minimum length, bad words, allowed ids, a user logits processor, more than one sample per request,
and ``seeded=False`` (without a seed ``_resolveSamplerConfig`` seeds with ``Math.floor(Date.now() / 1000)``: every
request of the same second draws the same numbers, not independent rows).  Stop token ids are the adapter's (it ends a
row at the first one; the worker stops generating there).
"""

from __future__ import annotations

from ...sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported

ENGINE = "node-llama-cpp 3.21.1"
PENALTY_LAST_N = 64  # node-llama-cpp's defaultMaxPunishTokens (LlamaContext.js) and LlamaCompletion's lastTokens

_REFUSED = {
    "logit_bias": "the adapter does not map node-llama-cpp's tokenBias (not tested)",
    "min_new_tokens": "evaluate() has no minimum length",
    "bad_words": "evaluate() has no bad-words list",
    "allowed_token_ids": "evaluate() has no allowed-ids list (a grammar is not mapped)",
    "logits_processor": "the sampler runs in node-llama-cpp's native addon; no Python processor reaches it",
}

__all__ = ["ENGINE", "PENALTY_LAST_N", "sampling_object"]


def sampling_object(settings: SamplingSettings) -> dict:
    """The worker's ``sampling`` object for ``settings`` (every field it cannot map refused by name)."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    if settings.samples_per_request not in (None, 1):
        raise UnsupportedSetting(ENGINE, "samples_per_request", settings.samples_per_request,
                                 "evaluate() draws one answer per sequence (the adapter sends one row per request)")
    if not settings.seeded:
        raise UnsupportedSetting(ENGINE, "seeded", False, "an unseeded evaluate() seeds with the current second "
                                 "(Math.floor(Date.now() / 1000)): rows of the same second would repeat each other")
    penalties = (settings.repetition_penalty != 1.0 or settings.presence_penalty != 0.0 or settings.frequency_penalty != 0.0)
    return {
        "temperature": float(settings.temperature),
        "topK": int(settings.top_k or 0),
        "topP": float(settings.top_p if settings.top_p is not None else 1.0),
        "minP": float(settings.min_p or 0.0),
        "repeatPenalty": None if not penalties else {
            "penalty": float(settings.repetition_penalty), "frequencyPenalty": float(settings.frequency_penalty),
            "presencePenalty": float(settings.presence_penalty), "lastTokens": PENALTY_LAST_N},
    }
