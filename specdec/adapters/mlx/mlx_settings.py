"""A :class:`specdec.SamplingSettings` record as mlx-lm 0.32.2's sampler and logits processors (the worker's request).

mlx-lm builds both from keywords (``mlx_lm/sample_utils.py``):

* ``make_sampler(temp, top_p, min_p, min_tokens_to_keep, top_k, xtc_...)``: a temperature of 0 is ``greedy_sampler``
  (``mx.argmax``); otherwise the chain is top-p (``apply_top_p``), min-p (``apply_min_p``), XTC, top-k (``apply_top_k``),
  in that order, each on the log-probabilities *before* the temperature, then ``categorical_sampling``:
  ``mx.random.categorical(logprobs * (1 / temp))``.  So top-p and min-p truncate the untempered law (as llama.cpp's
  chain does, unlike transformers' and :class:`specdec.SamplingConfig`'s, which temper first); top-k is the same
  either way.  The law this map asks for is mlx-lm's: :class:`specdec.adapters.mlx.mlx_oracle.MlxLawOracle` restates it.
* ``make_logits_processors(logit_bias, repetition_penalty, repetition_context_size, presence_penalty,
  presence_context_size, frequency_penalty, frequency_context_size)``: processors called with the token history and
  the logits before the sampler; each penalty reads the last ``*_context_size`` tokens of the history (default 20,
  :data:`CONTEXT_SIZE`) - in ``generate_step`` the prompt and the answer.  Repetition: CTRL's sign-aware division;
  presence: minus the penalty once per distinct token in the window; frequency: minus the penalty per occurrence.

``top_k`` of the vocabulary or more keeps every token: sent as 0 (mlx-lm's ``apply_top_k`` refuses it).  Refused by name
(:class:`specdec.sampling_settings.UnsupportedSetting`): a minimum length, bad words, allowed ids (mlx-lm has none of
them), a user logits processor (the engine runs in a worker process), more than one sample per request, and
``seeded=False`` (the worker seeds mlx's global generator per row; unseeded rows would continue one process-wide
stream, which the adapter does not claim to be anything).  Stop token ids are the adapter's: a row ends at the first.
"""

from __future__ import annotations

from ..._validation import as_int
from ...sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported

__all__ = ["CONTEXT_SIZE", "ENGINE", "request_settings"]

ENGINE = "mlx-lm 0.32.2"
CONTEXT_SIZE = 20  # make_logits_processors' default *_context_size

_REFUSED = {
    "min_new_tokens": "mlx-lm's generate_step has no minimum length",
    "bad_words": "mlx-lm has no bad-words processor",
    "allowed_token_ids": "mlx-lm has no allowed-ids processor",
    "logits_processor": "mlx-lm runs in the adapter's worker process; no Python processor of this process reaches it",
}


def request_settings(settings: SamplingSettings, context_size: int = CONTEXT_SIZE) -> dict:
    """``{"sampler": make_sampler's keywords, "processors": make_logits_processors' keywords}`` for ``settings``
    (module docstring); ``context_size``: the window of every penalty."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    if settings.samples_per_request not in (None, 1):
        raise UnsupportedSetting(ENGINE, "samples_per_request", settings.samples_per_request,
                                 "generate_step draws one answer per prompt (the adapter sends one row per request)")
    if not settings.seeded:
        raise UnsupportedSetting(ENGINE, "seeded", False, "the worker seeds mlx's process-wide generator per row; an "
                                 "unseeded row would continue the previous row's stream")
    context_size = as_int("context_size", context_size, minimum=1)
    sampler = {"temp": float(settings.temperature), "top_p": float(settings.top_p if settings.top_p is not None else 1.0),
               "min_p": float(settings.min_p or 0.0), "top_k": int(settings.top_k or 0)}
    processors: dict = {}
    if settings.logit_bias:
        processors["logit_bias"] = [[int(t), float(b)] for t, b in settings.logit_bias]
    for name in ("repetition", "presence", "frequency"):
        value = float(getattr(settings, f"{name}_penalty"))
        if value != (1.0 if name == "repetition" else 0.0):
            processors[f"{name}_penalty"] = value
            processors[f"{name}_context_size"] = context_size
    return {"sampler": sampler, "processors": processors}
