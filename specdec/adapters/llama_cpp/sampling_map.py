"""A :class:`specdec.SamplingSettings` as llama-cpp-python 0.3.36's ``Llama.generate`` keywords (issue 30).

Read in ``llama_cpp/llama.py`` (``_init_sampler``): the chain is a Python ``logits_processor`` stage (when
given) -> penalties -> top-k -> typical -> top-p -> min-p -> temperature -> draw.  The mapping:

* temperature, top-k, top-p, min-p: llama.cpp's samplers (top-p and min-p on the untempered law, see
  :mod:`.in_process`); every sampler not asked for is set to its neutral value;
* repetition, frequency and presence penalties: llama.cpp's penalties sampler over the last
  ``last_n_tokens_size`` (64) tokens *it has drawn* in this ``generate`` call (the prompt is never fed to it;
  ``llama_sampler_sample`` accepts each drawn token);
* logit bias, allowed token ids, bad words, the minimum number of new tokens and the user's
  ``logits_processor``: one Python processor stage each, in that order, called as llama-cpp-python calls
  them, ``processor(history, logits)`` with ``history = Llama._input_ids`` (numpy arrays);
* stop tokens: the decoder ends a row after the first one it emits.

The user's processor must return a row of the logits' shape (:func:`specdec.sampling_settings.call_processor`: a
ContractError naming it otherwise, never a scalar broadcast into a uniform row).  Token ids outside the vocabulary are
refused by field (a ValueError): when the stages are built, given ``vocab_size`` (``Llama.n_vocab()``), else when first
called on a row.  llama-cpp-python calls the stages from a ctypes callback (``_init_sampler``'s ``apply_func``), which
prints an exception and goes on with the logits unchanged - a silent wrong law.  So :func:`generate_args` runs the stages
inside one :class:`Guarded` processor that keeps the first exception and leaves the logits alone after it, and the decoder
calls :func:`raise_processor_failure` after every token it reads: the row ends with that exception, its tokens unused.

Refused by name: ``samples_per_request`` (one row at a time in this process) and ``seeded=False`` (the
adapter seeds every row; llama.cpp's unseeded default reads the clock, which no check can reproduce).
"""

from __future__ import annotations

import numpy as np

from ...sampling_settings import SamplingSettings, call_processor, refuse_beyond_vocabulary, refuse_unsupported, settings_from

__all__ = ["ENGINE", "Guarded", "checked_settings", "generate_args", "processors", "raise_processor_failure"]

ENGINE = "llama-cpp-python 0.3.36 (in process)"
_REFUSED = {"samples_per_request": "rows are decoded one at a time in this process; there is no n",
            "seeded": "every row is seeded by the adapter; llama.cpp's unseeded default draws from the clock"}


class _Bias:
    def __init__(self, pairs) -> None:
        self.ids = np.array([t for t, _ in pairs], dtype=np.int64)
        self.values = np.array([b for _, b in pairs], dtype=np.float32)

    def __call__(self, history, logits):
        logits[self.ids] += self.values
        return logits


class _Allowed:
    def __init__(self, ids) -> None:
        self.ids = np.array(ids, dtype=np.int64)

    def __call__(self, history, logits):
        kept = logits[self.ids].copy()
        logits[:] = -np.inf
        logits[self.ids] = kept
        return logits


class _BadWords:
    """Forbid the last token of each word when the history ends with the rest of it."""

    def __init__(self, words) -> None:
        self.words = [tuple(w) for w in words]

    def __call__(self, history, logits):
        tail = [int(t) for t in history[-max(len(w) for w in self.words):]] if len(history) else []
        for word in self.words:
            head = list(word[:-1])
            if not head or tail[len(tail) - len(head):] == head:
                logits[word[-1]] = -np.inf
        return logits


class _MinNewTokens:
    """Forbid the stop tokens while fewer than ``count`` tokens follow the prompt (of ``prompt_length`` tokens)."""

    def __init__(self, count: int, stops, prompt_length: int) -> None:
        self.count, self.stops, self.prompt_length = count, list(stops), prompt_length

    def __call__(self, history, logits):
        if len(history) - self.prompt_length < self.count:
            logits[self.stops] = -np.inf
        return logits


class _Vocabulary:
    """The first stage: refuses, by field, token ids beyond the row's length (the vocabulary), once."""

    def __init__(self, settings: SamplingSettings) -> None:
        self.settings, self.checked = settings, None

    def __call__(self, history, logits):
        if self.checked != len(logits):
            refuse_beyond_vocabulary(self.settings, len(logits), ENGINE)
            self.checked = len(logits)
        return logits


class _User:
    """The user's processor, its answer checked (:func:`specdec.sampling_settings.call_processor`)."""

    def __init__(self, function) -> None:
        self.function = function

    def __call__(self, history, logits):
        return call_processor(self.function, history, logits)


def processors(settings: SamplingSettings, prompt_length: int, vocab_size: int | None = None) -> list | None:
    """The Python processor stages for one row (None when none is asked); ``vocab_size``, when given, refuses token ids
    outside the vocabulary now, by field."""
    if vocab_size is not None:
        refuse_beyond_vocabulary(settings, vocab_size, ENGINE)
    stages = []
    if settings.logit_bias:
        stages.append(_Bias(settings.logit_bias))
    if settings.allowed_token_ids is not None:
        stages.append(_Allowed(settings.allowed_token_ids))
    if settings.bad_words:
        stages.append(_BadWords(settings.bad_words))
    if settings.min_new_tokens:
        stages.append(_MinNewTokens(settings.min_new_tokens, settings.stop_token_ids, prompt_length))
    if settings.logits_processor is not None:
        stages.append(_User(settings.logits_processor))
    return [_Vocabulary(settings), *stages] if stages else None


class Guarded:
    """The stages as one processor: the first exception one raises is kept in ``error`` (a ctypes callback would drop
    it), and the logits pass through unchanged from then on; :func:`raise_processor_failure` raises it."""

    def __init__(self, stages) -> None:
        self.stages, self.error = list(stages), None

    def __call__(self, history, logits):
        if self.error is None:
            try:
                for stage in self.stages:
                    logits = stage(history, logits)
            except Exception as error:  # noqa: BLE001 - kept for the decoder to raise in its own thread
                self.error = error
        return logits


def raise_processor_failure(args: dict) -> None:
    """Raise the exception a :class:`Guarded` processor of ``generate_args``' ``args`` kept, if any."""
    for processor in args.get("logits_processor") or ():
        if getattr(processor, "error", None) is not None:
            raise processor.error


def generate_args(settings: SamplingSettings, prompt_length: int, vocab_size: int | None = None) -> dict:
    """``Llama.generate``'s sampling keywords for one row of ``prompt_length`` prompt tokens (``vocab_size``: :func:`processors`);
    the processor stages run inside one :class:`Guarded` processor."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    stages = processors(settings, prompt_length, vocab_size)
    if stages is not None:
        from llama_cpp import LogitsProcessorList

        stages = LogitsProcessorList([Guarded(stages)])
    return dict(temp=float(settings.temperature), top_k=int(settings.top_k or 0), top_p=float(settings.top_p or 1.0),
                min_p=float(settings.min_p or 0.0), typical_p=1.0, repeat_penalty=float(settings.repetition_penalty),
                frequency_penalty=float(settings.frequency_penalty), presence_penalty=float(settings.presence_penalty), tfs_z=1.0,
                mirostat_mode=0, logits_processor=stages, grammar=None)


def checked_settings(sampling, settings) -> SamplingSettings:
    """``sampling=`` or ``settings=`` as the record (:func:`specdec.sampling_settings.settings_from`), refused now, by
    name, if llama-cpp-python cannot take it."""
    chosen = settings_from(sampling, settings)
    generate_args(chosen, 1)
    return chosen
