"""Hostile sampling settings and hostile ``Retry-After`` headers, fuzzed (issue 40).

* :class:`SamplingSettings` given nan, inf, negative and huge numbers, bools, strings, duplicates and empty lists
  either builds a record whose every engine mapping (transformers, llama.cpp's stages, llama-server's fields, the
  OpenAI fields, vLLM's ``SamplingParams``) succeeds - or is refused by name by the engine - or raises a ValueError or
  TypeError naming a field it was given: never another exception.  The mappings of engines that are not installed
  are pure Python and run here.
* The retry policy, for any header and any attempt count, grants a finite delay >= 0 within its longest wait, or
  None, and never lets a request's time in retries exceed its budget.

Derandomized (the suite's profile), no deadline, sized to stay fast.
"""

import importlib.util
import json
import math
import sys
import time
import types

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdec.adapters.hf_settings import generate_kwargs
from specdec.adapters.llama_cpp import llama_server_fields
from specdec.adapters.llama_cpp.sampling_map import generate_args, processors
from specdec.adapters.openai.fields import completion_fields
from specdec.adapters.openai.retries import RetryPolicy, retry_after_seconds
from specdec.adapters.vllm.sampling_params import sampling_params_kwargs
from specdec.errors import ContractError
from specdec.sampling_settings import SamplingSettings

VOCAB = 12
FUZZ = settings(max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])

_HOSTILE = st.sampled_from([math.nan, math.inf, -math.inf, -1, -1e-9, 0, 0.0, 1e-320, 1e308, 2**31 - 1, 2**31, 10**30, 10**400,
                            True, False, None, "1", "", b"2", [], (), {}, 1 + 2j, np.float64("nan"), np.int64(3)])
_ID = st.one_of(st.integers(0, VOCAB + 2), st.sampled_from([-1, 2**31 - 1, 2**31, 2**63, 10**30, True, 1.0, "3", None]))
_IDS = st.one_of(st.lists(_ID, max_size=4), st.lists(st.integers(0, 3), max_size=4), st.tuples(), _HOSTILE, st.text(max_size=3))
_SMALL = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), _HOSTILE)
_BIAS = st.one_of(st.dictionaries(_ID, _SMALL, max_size=3), st.lists(st.tuples(st.integers(0, 4), _SMALL), max_size=4),
                  st.lists(st.lists(st.integers(0, 4), min_size=2, max_size=2), max_size=2), _HOSTILE)
_TOKEN = st.integers(0, VOCAB + 2)  # a few beyond the vocabulary: the adapters given it refuse them


def _mostly(valid, hostile):
    """``valid`` 4 times in 5, else ``hostile``: most examples build a record, so its mappings are fuzzed too."""
    return st.integers(0, 4).flatmap(lambda i: hostile if i == 0 else valid)


def _processor(kind):
    return {"none": None, "identity": lambda history, logits: logits, "scalar": lambda history, logits: 0.0,
            "short": lambda history, logits: logits[:-1], "three": 3}[kind]


HOSTILE_SETTINGS = st.fixed_dictionaries({}, optional={
    "temperature": _mostly(st.floats(0.0, 3.0), _SMALL),
    "top_k": _mostly(st.one_of(st.none(), st.integers(0, 20)), st.one_of(st.integers(-2, 20), _HOSTILE)),
    "top_p": _mostly(st.one_of(st.none(), st.floats(0.01, 1.0)), _SMALL),
    "min_p": _mostly(st.one_of(st.none(), st.floats(0.0, 1.0)), _SMALL),
    "repetition_penalty": _mostly(st.floats(0.1, 2.0), _SMALL),
    "presence_penalty": _mostly(st.floats(-2.0, 2.0), _SMALL),
    "frequency_penalty": _mostly(st.floats(-2.0, 2.0), _SMALL),
    "logit_bias": _mostly(st.dictionaries(_TOKEN, st.floats(-100.0, 100.0), max_size=3), _BIAS),
    "min_new_tokens": _mostly(st.integers(0, 3), st.one_of(st.integers(-1, 3), _HOSTILE)),
    "bad_words": _mostly(st.lists(st.lists(_TOKEN, min_size=1, max_size=3), max_size=3),
                         st.one_of(st.lists(_IDS, max_size=3), _HOSTILE)),
    "allowed_token_ids": _mostly(st.one_of(st.none(), st.lists(_TOKEN, min_size=1, max_size=4)), st.one_of(st.none(), _IDS)),
    "stop_token_ids": _mostly(st.lists(_TOKEN, max_size=2), _IDS),
    "samples_per_request": _mostly(st.one_of(st.none(), st.integers(1, 4)), st.one_of(st.none(), st.integers(-1, 4), _HOSTILE)),
    "seeded": _mostly(st.booleans(), _HOSTILE),
    "logits_processor": st.sampled_from(["none", "none", "identity", "scalar", "short", "three"]).map(_processor),
})


def _spell(ids) -> str:
    return " ".join(f"<{t}>" for t in ids)


def _names_a_field(error: Exception, given) -> bool:
    return any(name in str(error) for name in given)


def _mapped(record: SamplingSettings) -> None:
    """Every engine's mapping of ``record``: each succeeds or refuses by the name of a field it was given."""
    given = list(record.changed())
    mappings = [
        lambda: json.dumps(completion_fields(record, _spell), allow_nan=False),  # nothing non-finite reaches the wire
        lambda: json.dumps(llama_server_fields.completion_fields(record), allow_nan=False),
        lambda: sampling_params_kwargs(record, _spell),
        lambda: generate_kwargs(record),
        lambda: generate_kwargs(record, vocab_size=VOCAB),
        lambda: generate_args(record, 2, vocab_size=VOCAB),
        lambda: _run_stages(record),
    ]
    for mapping in mappings:
        try:
            mapping()
        except (ValueError, TypeError) as error:
            assert _names_a_field(error, given), f"{type(error).__name__}: {error}"


def _run_stages(record: SamplingSettings) -> None:
    """llama.cpp's stages on a row of the vocabulary's width (a user processor's broken Protocol is a ContractError naming
    it): a finite token is left where the record can show it."""
    stages = processors(record, 2, vocab_size=VOCAB)
    logits = np.zeros(VOCAB, dtype=np.float32)
    for stage in stages or ():
        try:
            logits = stage(np.array([1, 2, 3]), logits)
        except ContractError as error:
            assert record.logits_processor is not None and "logits_processor" in str(error), error
            raise
    assert logits.shape == (VOCAB,)
    only_single_bans = all(len(word) == 1 for word in record.bad_words) and not record.min_new_tokens
    if record.allowed_token_ids is not None and only_single_bans and record.logits_processor is None:
        assert np.isfinite(logits).any(), (record, logits)


def test_hostile_settings_build_a_mappable_record_or_are_refused_by_name():
    fake = None
    if importlib.util.find_spec("llama_cpp") is None:  # generate_args imports one name: llama-cpp-python's list of processors
        fake = sys.modules.setdefault("llama_cpp", types.ModuleType("llama_cpp"))
        fake.LogitsProcessorList = list
    try:
        _record_or_refusal()
    finally:
        if fake is not None and sys.modules.get("llama_cpp") is fake:
            del sys.modules["llama_cpp"]


@FUZZ
@given(HOSTILE_SETTINGS)
def _record_or_refusal(kwargs):
    try:
        record = SamplingSettings(**kwargs)
    except (ValueError, TypeError) as error:
        assert _names_a_field(error, kwargs), f"{type(error).__name__}: {error} (given {sorted(kwargs)})"
        return
    _mapped(record)
    assert all(0 <= t <= 2**31 - 1 for t in (record.allowed_token_ids or ()) + record.stop_token_ids)
    assert len({t for t, _ in record.logit_bias}) == len(record.logit_bias)
    assert all(math.isfinite(getattr(record, name)) for name in ("temperature", "repetition_penalty", "presence_penalty",
                                                                 "frequency_penalty"))


_DATES = st.builds(lambda day, year, zone: f"Wed, {day:02d} Oct {year} 07:28:00 {zone}", st.integers(0, 40),
                   st.sampled_from([1, 1900, 1970, 2015, 2038, 9999, 99999]), st.sampled_from(["GMT", "-0000", "+2359", "-2359", "XYZ"]))
HEADERS = st.one_of(st.none(), st.text(max_size=12), st.from_regex(r"\A\s*-?[0-9]{0,400}(\.[0-9]*)?(e-?[0-9]+)?\s*\Z"),
                    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "-0", "0", "1_000", "0x10", "1e999", "9" * 400]),
                    _DATES)
TIMES = st.floats(0.0, 1e6, allow_nan=False)


@FUZZ
@given(HEADERS, st.one_of(st.integers(0, 2_000), st.integers(0, 10**40)), TIMES, TIMES, TIMES, TIMES, TIMES)
def test_any_retry_after_and_attempt_give_a_finite_wait_within_the_budget(header, attempt, budget, first, longest, longest_wait,
                                                                          elapsed):
    seconds = retry_after_seconds(header)
    assert seconds is None or (math.isfinite(seconds) and seconds >= 0), (header, seconds)
    policy = RetryPolicy(budget=budget, first=first, longest=longest, longest_wait=longest_wait)
    delay = policy.wait(attempt, seconds, time.monotonic() - elapsed)
    if delay is None:
        return
    assert math.isfinite(delay) and delay >= 0 and budget > 0, delay
    assert delay <= (longest_wait if seconds is not None else longest)
    assert elapsed + delay <= budget * (1 + 1e-12) + 1e-9  # (float rounding of the clock's subtraction only)


@FUZZ
@given(st.lists(HEADERS, min_size=1, max_size=60), st.floats(0.0, 50.0), st.floats(0.0, 5.0), st.floats(0.0, 20.0))
def test_a_request_retried_against_any_headers_never_spends_more_than_its_budget(headers, budget, first, longest):
    """One request's retries, the clock advanced by each granted wait: the time spent stays within the budget."""
    policy = RetryPolicy(budget=budget, first=first, longest=longest, longest_wait=30.0)
    spent = 0.0
    for attempt, header in enumerate(headers):
        delay = policy.wait(attempt, retry_after_seconds(header), time.monotonic() - spent)
        if delay is None:
            break
        spent += delay
        assert spent <= budget, (spent, budget)
