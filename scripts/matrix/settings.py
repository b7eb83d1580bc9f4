"""The matrix's sampling settings, as data: one :class:`specdec.SamplingSettings` per name.

All are asked on the " cat"/" dog" prompt of ``fixtures.vllm_subjects`` (SmolLM2 continues it with one of the
two words; every bigram occurs in the prompt, so prompt lookup drafts at every step) and tested on the first
``LENGTH`` tokens: the first token comes from the prefill, the later ones from verified drafts, so a setting that
reads the history (penalties, bad words, minimum tokens) is exercised where speculation meets it.  The base is
T = 0.7, top-p 0.8 (four outcomes at L = 2); each setting changes one thing, large enough to move the law.
"""

from __future__ import annotations

from specdec.sampling_settings import SamplingSettings

CAT, DOG, CAT_NO_SPACE = 2644, 2767, 9786  # " cat", " dog", "cat" in SmolLM2's tokenizer
LENGTH = 3  # tokens tested per answer
BASE = {"temperature": 0.7, "top_p": 0.8}


def _base(**changes) -> SamplingSettings:
    return SamplingSettings(**{**BASE, **changes})


def settings_for(cat: int, dog: int, third: int) -> dict[str, SamplingSettings]:
    """The settings on a vocabulary whose two words are ``cat`` and ``dog`` (``third`` a third token)."""
    return {
        "base": _base(),
        "untruncated": SamplingSettings(temperature=1.0),
        "top-k": _base(top_k=2),
        "min-p": _base(min_p=0.2),
        "logit bias": _base(logit_bias={dog: 1.0}),
        "repetition penalty": _base(repetition_penalty=1.3),
        "mild repetition penalty": _base(repetition_penalty=1.1),
        "presence penalty": _base(presence_penalty=1.5),
        "frequency penalty": _base(frequency_penalty=1.5),
        "negative frequency penalty": _base(frequency_penalty=-1.0),
        "bad words": _base(bad_words=[[cat, dog]]),
        "allowed token ids": SamplingSettings(temperature=1.0, allowed_token_ids=[cat, dog, third]),
        "stop token": _base(stop_token_ids=[dog]),
        "minimum new tokens": _base(stop_token_ids=[dog], min_new_tokens=2),
        "one sample per request": _base(samples_per_request=1),
        "unseeded": _base(seeded=False),
        "greedy": SamplingSettings(temperature=0.0),
        "greedy, repetition penalty": SamplingSettings(temperature=0.0, repetition_penalty=1.1),
        "greedy, frequency penalty": SamplingSettings(temperature=0.0, frequency_penalty=1.5),
    }


SETTINGS = settings_for(CAT, DOG, CAT_NO_SPACE)
GREEDY = [name for name, s in SETTINGS.items() if s.greedy]
# Untruncated, the law at L = 3 spreads over hundreds of sequences (no A/B check reaches a TV below 1 at a few
# hundred samples); at L = 2 the verified second token is still tested.
LENGTHS = {"untruncated": 2}
# The mixed batch (servers): the base setting's rows amid background requests unlike them - greedy rows, untruncated
# rows, a presence penalty, on a prompt that drafts nothing (no repeated bigram) and on the tested prompt.
OTHER_PROMPT = [504, 3811, 314, 253, 1345, 28, 9789, 30, 1226, 5477]
MIXED_LOAD = [(SamplingSettings(temperature=0.0), "same"), (SamplingSettings(temperature=1.0), "other"),
              (SamplingSettings(temperature=1.0, presence_penalty=1.5), "same"), (SamplingSettings(temperature=0.0), "other")]


GREEDY_ROWS = 64  # rows per prompt of a greedy cell: an equality, row by row (specdec.conformance.greedy_equality)


def length_of(name: str) -> int:
    return LENGTHS.get(name, LENGTH)


def check_of(settings: SamplingSettings):
    """The check of a cell: row-by-row equality for greedy settings, the A/B check otherwise."""
    import functools

    import specdec as sd
    from specdec.conformance.greedy_equality import compare_greedy

    return functools.partial(compare_greedy, rows=GREEDY_ROWS) if settings.greedy else sd.check_ab


def eos_of(settings: SamplingSettings):
    """The check's absorbing tokens: the setting's stop tokens (None when it has none)."""
    return list(settings.stop_token_ids) or None


def logits_processor_setting(**changes) -> SamplingSettings:
    """The user processor that reads the history (in-process engines): forbid repeating the previous token."""
    return _base(logits_processor=no_immediate_repeat, **changes)


def no_immediate_repeat(history, logits):
    """A history-reading processor: the token just emitted may not come again (its logit set to -inf)."""
    out = logits.copy() if hasattr(logits, "copy") else logits.clone()
    if len(history):
        out[int(history[-1])] = float("-inf")
    return out
