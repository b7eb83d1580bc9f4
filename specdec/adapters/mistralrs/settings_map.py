"""A :class:`specdec.SamplingSettings` record as the keyword arguments of mistral.rs 0.6.0's ``ChatCompletionRequest``.

mistral.rs's sampler (``mistralrs-core/src/sampler.rs``, ``Sampler::sample``, v0.6.0) applies frequency and presence
penalties (and DRY) to the logits, divides them by the temperature, takes the softmax, then truncates with top-k,
top-p (on the tempered law, tokens kept while the cumulative sum before them is below ``top_p``) and min-p, and draws
(``sample_top_kp_min_p``); a temperature below 1e-7 is argmax (``Sampler::new``, ``sample_argmax``; a request without
one gets 1.0, ``engine/add_request.rs``), so the adapter always sends the record's temperature.  Its penalties read the
whole sequence (``seq.get_toks()``: prompt and answer), not the answer alone.

What the Python request of 0.6.0 cannot carry is refused by name (:class:`specdec.sampling_settings.UnsupportedSetting`):
a repetition penalty (no field), a minimum length, bad words, allowed ids, stop *token ids* (``stop_seqs`` are
strings), a user logits processor, more than one sample per request, and a logit bias: the request takes
``logit_bias`` and the binding copies it into ``SamplingParams.logits_bias`` (``mistralrs-pyo3/src/lib.rs``), but no
code of ``mistralrs-core`` reads that field at v0.6.0 (``Sampler::new`` in ``engine/add_request.rs`` gets no bias;
the step that added it in ``Sampler::sample`` was removed in 2024, commit 5e8fe09, #636), so a bias changes nothing
(``scripts/findings/mistralrs_logit_bias_ignored.py``: +100 on a token of probability 0.27 gave it in 0 of 12
answers).  ``seeded`` is accepted either way: no request of 0.6.0 carries a seed (the engine draws from one RNG,
module :mod:`.mistralrs_decoder`), so a seed is never honoured.
"""

from __future__ import annotations

from ...sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported

ENGINE = "mistral.rs 0.6.0"

_REFUSED = {
    "repetition_penalty": "the Python ChatCompletionRequest of 0.6.0 has no repetition penalty",
    "min_new_tokens": "no minimum length in a 0.6.0 request",
    "bad_words": "no bad-words list in a 0.6.0 request",
    "allowed_token_ids": "no allowed-ids list in a 0.6.0 request",
    "stop_token_ids": "0.6.0's requests stop on strings (stop_seqs), not token ids",
    "logits_processor": "the Python API of 0.6.0 takes no logits processor",
    "logit_bias": "0.6.0 accepts logit_bias and ignores it (no code of mistralrs-core reads SamplingParams.logits_bias: "
                  "scripts/findings/mistralrs_logit_bias_ignored.py)",
}


def request_args(settings: SamplingSettings) -> dict:
    """``ChatCompletionRequest`` keywords of ``settings`` (every field it cannot map refused by name)."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    if settings.samples_per_request not in (None, 1):
        raise UnsupportedSetting(ENGINE, "samples_per_request", settings.samples_per_request,
                                 "the adapter sends one request per row (n_choices > 1 is not mapped)")
    args = {
        # a request's None means 1.0 (engine/add_request.rs); Sampler::new turns a temperature below 1e-7 into argmax
        "temperature": float(settings.temperature),
        "top_k": settings.top_k or None,
        "top_p": settings.top_p if settings.top_p not in (None, 1.0) else None,
        "min_p": settings.min_p or None,
        "presence_penalty": settings.presence_penalty or None,
        "frequency_penalty": settings.frequency_penalty or None,
    }
    return args
