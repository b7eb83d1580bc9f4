"""A :class:`specdec.SamplingSettings` as transformers' ``generate`` keywords (issue 30).

* warpers: :func:`generation_kwargs` (temperature, top-k, top-p, min-p);
* ``repetition_penalty``: transformers' processor, over the whole input (prompt and generated tokens);
* ``logit_bias``: ``sequence_bias`` with one-token sequences; ``bad_words``: ``bad_words_ids``;
* ``allowed_token_ids``: ``prefix_allowed_tokens_fn`` answering the same ids at every step;
* ``stop_token_ids``: ``eos_token_id`` (a list), with ``min_new_tokens`` forbidding them early;
* ``logits_processor``: wrapped as a ``LogitsProcessor`` called row by row as ``(history, logits)``, the history a
  list of token ids (prompt and generated) and the logits the row's torch tensor; what it returns must be a row of
  that shape (:func:`specdec.sampling_settings.call_processor`: a ContractError naming the processor otherwise).

Given the model's ``vocab_size``, :func:`generate_kwargs` refuses token ids outside it by field (a ValueError);
without it transformers' own processors meet them (an IndexError for allowed ids, a ValueError for biased ones).

Refused by name: presence and frequency penalties (transformers has no such processor), ``samples_per_request``
and ``seeded=False`` (rows are generated one at a time, each seeded by the adapter).
"""

from __future__ import annotations

from ..sampling_settings import SamplingSettings, call_processor, refuse_beyond_vocabulary, refuse_unsupported
from ..warpers import SamplingConfig

__all__ = ["ENGINE", "generate_kwargs", "generation_kwargs"]

ENGINE = "transformers generate"
_REFUSED = {"presence_penalty": "transformers has no presence penalty (only repetition_penalty)",
            "frequency_penalty": "transformers has no frequency penalty (only repetition_penalty)",
            "samples_per_request": "rows are generated one at a time, each with its own seed",
            "seeded": "rows are seeded by the adapter (transformers draws from the global torch RNG)"}


def generation_kwargs(sampling: SamplingConfig) -> dict:
    """transformers ``generate`` keyword arguments for the same warpers (top_k=0 turns transformers' default 50 off)."""
    if sampling.min_tokens_to_keep != 1:
        raise ValueError(f"transformers' generate has no min_tokens_to_keep; got {sampling.min_tokens_to_keep}, only 1 maps")
    if sampling.greedy:
        return {"do_sample": False}
    return {
        "do_sample": True,
        "temperature": float(sampling.temperature),
        "top_k": int(sampling.top_k or 0),
        "top_p": float(sampling.top_p if sampling.top_p is not None else 1.0),
        "min_p": sampling.min_p,
    }


class _UserProcessor:
    """A ``(history, logits) -> logits`` callable as a transformers LogitsProcessor (row by row)."""

    def __init__(self, function) -> None:
        self.function = function

    def __call__(self, input_ids, scores):
        out = scores.clone()
        for row in range(scores.shape[0]):
            out[row] = call_processor(self.function, input_ids[row].tolist(), scores[row].clone())
        return out


def generate_kwargs(settings: SamplingSettings, vocab_size: int | None = None) -> dict:
    """``generate``'s keywords for ``settings`` (the warpers included; not ``eos_token_id`` when it has no stop tokens);
    ``vocab_size`` (the width of the model's logits), when given, refuses token ids outside it by field."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    if vocab_size is not None:
        refuse_beyond_vocabulary(settings, vocab_size, ENGINE)
    from transformers import LogitsProcessorList

    kwargs = dict(generation_kwargs(settings.sampling))
    if settings.repetition_penalty != 1.0:
        kwargs["repetition_penalty"] = settings.repetition_penalty
    if settings.logit_bias:
        kwargs["sequence_bias"] = {(token,): bias for token, bias in settings.logit_bias}
    if settings.bad_words:
        kwargs["bad_words_ids"] = [list(word) for word in settings.bad_words]
    if settings.allowed_token_ids is not None:
        allowed = list(settings.allowed_token_ids)
        kwargs["prefix_allowed_tokens_fn"] = lambda batch_id, input_ids: allowed
    if settings.stop_token_ids:
        kwargs["eos_token_id"] = list(settings.stop_token_ids)
        kwargs["min_new_tokens"] = settings.min_new_tokens
    if settings.logits_processor is not None:
        kwargs["logits_processor"] = LogitsProcessorList([_UserProcessor(settings.logits_processor)])
    return kwargs
