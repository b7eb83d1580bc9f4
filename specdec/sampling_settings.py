"""A subject's sampling settings as one record, which each adapter maps onto its engine (issue 30).

:class:`SamplingSettings` holds what a request asks of an engine's sampler beyond the warpers of
:class:`specdec.SamplingConfig` (temperature, top-k, top-p, min-p): repetition, presence and frequency
penalties, a logit bias, a minimum number of new tokens, bad words, allowed token ids, stop tokens,
samples per request (n), whether requests carry seeds, and a user logits processor that reads the
history.  Every field defaults to "off"; the record says *what* is asked, in token ids (never text),
and each adapter says *how* its engine does it:

* ``specdec.adapters.openai.fields`` - the JSON fields of ``/v1/completions`` (vLLM's names);
* ``specdec.adapters.llama_cpp.sampling_map`` - llama.cpp's samplers and a ``logits_processor``;
* ``specdec.adapters.hf_settings`` - transformers' generation config and ``LogitsProcessorList``.

An adapter refuses, by name, every field its engine cannot take (:class:`UnsupportedSetting`, a
ValueError naming the field, its value and the engine): a setting is never silently dropped.  The
engines differ in what a penalty reads (vLLM: presence and frequency over the generated tokens,
repetition over prompt and generated tokens; llama.cpp: the last ``penalty_last_n`` tokens of prompt and
answer; transformers: the whole input), so a setting is compared between speculation on and off *of
one engine*, never across engines.

``logits_processor``: a callable ``(history, logits) -> logits`` where ``history`` is the sequence of token
ids so far (prompt and generated) and ``logits`` the row of the next token (a numpy array or a torch tensor,
as the engine gives it); it must return the row's logits, of the argument's shape (anything else - a scalar, another
length - is a :class:`specdec.errors.ContractError` naming the processor: :func:`call_processor`).  Only in-process
engines accept one.

Token ids are int32 in every engine: the record refuses ids above :data:`TOKEN_ID_MAX` (and ``top_k``,
``min_new_tokens``, ``samples_per_request`` above it), a ``logit_bias`` that names an id twice, and settings that leave
no token to draw, when the record alone shows it (every allowed id a one-token bad word, or a stop token before
``min_new_tokens``).  An adapter that knows its vocabulary refuses ids outside it (:func:`refuse_beyond_vocabulary`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Mapping

from ._validation import as_float, as_int
from .errors import ContractError

__all__ = ["TOKEN_ID_MAX", "SamplingSettings", "UnsupportedSetting", "call_processor", "refuse_beyond_vocabulary",
           "refuse_unsupported", "settings_from"]

TOKEN_ID_MAX = 2**31 - 1  # token ids (and counts of tokens) are int32 in every engine


class UnsupportedSetting(ValueError):
    """A setting an engine cannot take (the message names the field, its value and the engine)."""

    def __init__(self, engine: str, field: str, value, why: str) -> None:
        super().__init__(f"{engine} does not take {field}={value!r}: {why}")
        self.engine, self.field, self.value, self.why = engine, field, value, why


def _ids(name: str, values) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of token ids, got {type(values).__name__} {values!r}")
    return tuple(as_int(f"{name}[{i}]", t, minimum=0, maximum=TOKEN_ID_MAX) for i, t in enumerate(values))


def _bias(value) -> tuple[tuple[int, float], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise TypeError(f"logit_bias must be a mapping of token id to bias, got {type(value).__name__} {value!r}")
    pairs = {}
    for entry in items:
        if not isinstance(entry, tuple) or len(entry) != 2:
            raise TypeError(f"logit_bias must be a mapping of token id to bias (or (id, bias) pairs), got the entry {entry!r}")
        token = as_int("logit_bias token id", entry[0], minimum=0, maximum=TOKEN_ID_MAX)
        bias = as_float(f"logit_bias[{token}]", entry[1], minimum=-100.0, maximum=100.0)
        if token in pairs:
            raise ValueError(f"logit_bias names token id {token} twice (biases {pairs[token]!r} and {bias!r}): give each id once")
        pairs[token] = bias
    return tuple(sorted(pairs.items()))


@dataclass(frozen=True)
class SamplingSettings:
    """What a request asks of the sampler (module docstring); every field's default is "off"."""

    temperature: float = 1.0  # 0: greedy (E4)
    top_k: int | None = None  # None or 0: off
    top_p: float | None = None  # (0, 1]; None or 1: off
    min_p: float | None = None  # [0, 1]; None or 0: off
    repetition_penalty: float = 1.0  # > 0; 1: off (positive logits divided by it, negative ones multiplied)
    presence_penalty: float = 0.0  # [-2, 2] as OpenAI's API: subtracted once from a token already present
    frequency_penalty: float = 0.0  # [-2, 2]: subtracted per occurrence
    logit_bias: tuple[tuple[int, float], ...] = ()  # (token id, bias in [-100, 100]); a mapping is accepted
    min_new_tokens: int = 0  # the stop tokens are forbidden before this many new tokens
    bad_words: tuple[tuple[int, ...], ...] = ()  # token-id sequences whose last token is forbidden after the rest
    allowed_token_ids: tuple[int, ...] | None = None  # None: every token; otherwise only these
    stop_token_ids: tuple[int, ...] = ()  # an answer ends after the first of these (the check's eos_token_id)
    samples_per_request: int | None = None  # n per request; None: the adapter's default
    seeded: bool = True  # False: requests carry no seed (the engine's own randomness)
    logits_processor: Callable | None = None  # (history, logits) -> logits, in-process engines only

    def __post_init__(self) -> None:
        checked = {
            "temperature": as_float("temperature", self.temperature, minimum=0.0),
            "top_k": None if self.top_k is None else as_int("top_k", self.top_k, minimum=0, maximum=TOKEN_ID_MAX),
            "top_p": None if self.top_p is None else as_float("top_p", self.top_p, minimum=0.0, maximum=1.0, low_open=True),
            "min_p": None if self.min_p is None else as_float("min_p", self.min_p, minimum=0.0, maximum=1.0),
            "repetition_penalty": as_float("repetition_penalty", self.repetition_penalty, minimum=0.0, low_open=True),
            "presence_penalty": as_float("presence_penalty", self.presence_penalty, minimum=-2.0, maximum=2.0),
            "frequency_penalty": as_float("frequency_penalty", self.frequency_penalty, minimum=-2.0, maximum=2.0),
            "logit_bias": _bias(self.logit_bias),
            "min_new_tokens": as_int("min_new_tokens", self.min_new_tokens, minimum=0, maximum=TOKEN_ID_MAX),
            "bad_words": tuple(_ids(f"bad_words[{i}]", w) for i, w in enumerate(_sequence("bad_words", self.bad_words))),
            "allowed_token_ids": None if self.allowed_token_ids is None else _ids("allowed_token_ids", self.allowed_token_ids),
            "stop_token_ids": _ids("stop_token_ids", self.stop_token_ids),
            "samples_per_request": None if self.samples_per_request is None
            else as_int("samples_per_request", self.samples_per_request, minimum=1, maximum=TOKEN_ID_MAX),
        }
        if any(len(w) == 0 for w in checked["bad_words"]):
            raise ValueError(f"bad_words must be non-empty token-id sequences, got {checked['bad_words']!r}")
        if checked["allowed_token_ids"] == ():
            raise ValueError("allowed_token_ids must name at least one token (None: every token)")
        if checked["min_new_tokens"] and not checked["stop_token_ids"]:
            raise ValueError(f"min_new_tokens={checked['min_new_tokens']} forbids the stop tokens early, but stop_token_ids is empty")
        _refuse_empty_support(checked)
        if not isinstance(self.seeded, bool):
            raise TypeError(f"seeded must be a bool, got {type(self.seeded).__name__} {self.seeded!r}")
        if self.logits_processor is not None and not callable(self.logits_processor):
            raise TypeError(f"logits_processor must be callable (history, logits) -> logits, got {type(self.logits_processor).__name__}")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_sampling(cls, sampling, **changes) -> "SamplingSettings":
        """The record of a :class:`specdec.SamplingConfig`'s warpers, with ``changes``."""
        warp = {"temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p, "min_p": sampling.min_p}
        return cls(**{**warp, **changes})

    @property
    def sampling(self):
        """The warpers as a :class:`specdec.SamplingConfig` (the part of the law specdec computes itself)."""
        from .warpers import SamplingConfig

        return SamplingConfig(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, min_p=self.min_p)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def changed(self) -> dict:
        """The fields that are not "off", by name (the warpers included), in declaration order."""
        out = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if not _is_off(spec.name, value, spec.default):
                out[spec.name] = value
        return out

    @property
    def label(self) -> str:
        """One short line for tables: ``T=0.7 top_p=0.8 repetition_penalty=1.3``."""
        parts = [f"T={self.temperature:g}"]
        for name, value in self.changed().items():
            if name == "temperature":
                continue
            if name == "logit_bias":
                value = "{" + ", ".join(f"{t}: {b:+g}" for t, b in value) + "}"
            elif name == "logits_processor":
                value = getattr(value, "__name__", type(value).__name__)
            elif isinstance(value, float):
                value = f"{value:g}"
            elif isinstance(value, tuple):
                value = ",".join(" ".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in value)
            parts.append(f"{name}={value}")
        return " ".join(parts)


def _refuse_empty_support(checked: dict) -> None:
    """A ValueError naming the fields when ``allowed_token_ids`` leaves nothing to draw: every allowed id is a one-token
    bad word (forbidden always), or a stop token or such a bad word (forbidden before ``min_new_tokens``)."""
    allowed = checked["allowed_token_ids"]
    if allowed is None:
        return
    banned = {word[0] for word in checked["bad_words"] if len(word) == 1}
    if banned.issuperset(allowed):
        raise ValueError(f"allowed_token_ids={list(allowed)} are all one-token bad_words: no token is left to draw")
    if checked["min_new_tokens"] and banned.union(checked["stop_token_ids"]).issuperset(allowed):
        raise ValueError(f"allowed_token_ids={list(allowed)} are all stop_token_ids or one-token bad_words: no token is left to "
                         f"draw before min_new_tokens={checked['min_new_tokens']}")


def _id_fields(settings: "SamplingSettings"):
    """(field name as shown, token id) of every token id the record names."""
    for token, _ in settings.logit_bias:
        yield "logit_bias token id", token
    for i, word in enumerate(settings.bad_words):
        yield from ((f"bad_words[{i}][{j}]", t) for j, t in enumerate(word))
    yield from ((f"allowed_token_ids[{i}]", t) for i, t in enumerate(settings.allowed_token_ids or ()))
    yield from ((f"stop_token_ids[{i}]", t) for i, t in enumerate(settings.stop_token_ids))


def refuse_beyond_vocabulary(settings: "SamplingSettings", vocab_size: int, engine: str) -> None:
    """A ValueError naming the field and the id when ``settings`` names a token id outside ``engine``'s vocabulary of
    ``vocab_size`` ids."""
    vocab_size = as_int("vocab_size", vocab_size, minimum=1)
    for name, token in _id_fields(settings):
        if token >= vocab_size:
            raise ValueError(f"{name}={token} is not a token id of {engine}: its vocabulary has {vocab_size} ids (0..{vocab_size - 1})")


def call_processor(function: Callable, history, logits):
    """``function(history, logits)`` (a user's ``logits_processor``), checked: anything but an array or tensor of the
    logits' shape is a :class:`specdec.errors.ContractError` naming the processor and the call (never broadcast into a
    uniform row)."""
    out = function(history, logits)
    shape = tuple(getattr(logits, "shape", ()))
    if not hasattr(out, "shape") or not hasattr(out, "dtype") or tuple(out.shape) != shape:
        name = getattr(function, "__qualname__", None) or type(function).__name__
        got = f"{type(out).__name__} of shape {tuple(out.shape)}" if hasattr(out, "shape") else f"{type(out).__name__} {out!r:.60}"
        raise ContractError(f"the logits_processor {name} broke its Protocol ((history, logits) -> logits of the same shape): "
                            f"called with a history of {len(history)} tokens and logits of shape {shape}, it returned {got}")
    return out


def _sequence(name: str, value) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of token-id sequences, got {type(value).__name__} {value!r}")
    return tuple(value)


def _is_off(name: str, value, default) -> bool:
    if name == "top_k":
        return not value
    if name == "top_p":
        return value is None or value == 1.0
    if name == "min_p":
        return not value
    if name == "temperature":
        return False  # always stated
    return value == default


def refuse_unsupported(settings: SamplingSettings, engine: str, unsupported: Mapping[str, str]) -> None:
    """Raise :class:`UnsupportedSetting` for the first field of ``settings`` that is not "off" and that
    ``unsupported`` (field -> why) names."""
    if not isinstance(settings, SamplingSettings):
        raise TypeError(f"settings must be a specdec.SamplingSettings, got {type(settings).__name__}")
    for name, value in settings.changed().items():
        if name in unsupported:
            raise UnsupportedSetting(engine, name, value, unsupported[name])


def settings_from(sampling=None, settings=None) -> SamplingSettings:
    """An adapter's ``sampling=`` (a :class:`specdec.SamplingConfig`, its warpers alone) or ``settings=`` (the whole
    record), not both, as the record (neither: the defaults)."""
    from .warpers import SamplingConfig

    if sampling is not None and settings is not None:
        raise ValueError("give sampling= (a SamplingConfig) or settings= (a SamplingSettings), not both")
    if settings is not None:
        if not isinstance(settings, SamplingSettings):
            raise TypeError(f"settings must be a specdec.SamplingSettings, got {type(settings).__name__}")
        return settings
    sampling = SamplingConfig() if sampling is None else sampling
    if not isinstance(sampling, SamplingConfig):
        raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
    if sampling.min_tokens_to_keep != 1:
        raise ValueError(f"sampling.min_tokens_to_keep={sampling.min_tokens_to_keep}: only transformers' warpers keep more "
                         "than one token in a sampler; adapters of engines take 1")
    return SamplingSettings.from_sampling(sampling)
