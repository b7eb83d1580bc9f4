"""Oracles and subjects that cannot fake a verdict (issue 40, items 3-7), and a fuzz suite over their Protocols.

A per-token check has three parties: the subject (a Decoder, maybe a DraftMarker and a SpeculationCounter), the law
oracle and the harness.  Whatever the first two answer, the report is either a verdict on the subject's law or an
ERROR naming the party that broke its Protocol and the call - never a traceback, never a FAIL of the subject for
the oracle's mistake, never a PASS held to terms that mean nothing (a negative floor).  Each explicit case below
was a traceback, a wrong party's verdict or a silent answer before; the Hypothesis tests then throw random
breakages at the same seams.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fixtures.fake_server import target_law
from fixtures.law_samplers import LawSampler
from specdec.conformance import check_decoder, check_tokens
from specdec.laws import TargetLawOracle, TokenLaw

PROMPTS = [[0], [3]]
RUN = dict(length=3, n=40, tv=None, seed=2, chunk_size=40)
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
LAW = target_law()
VOCAB = LAW.vocab_size


class Oracle(TargetLawOracle):
    """The exact oracle, its answer passed through ``answer`` and its terms set as given."""

    def __init__(self, answer=lambda laws: laws, **terms):
        super().__init__(LAW)
        self.answer = answer
        for key, value in terms.items():
            setattr(self, key, value)

    def token_laws(self, prompts, continuations):
        return self.answer(super().token_laws(prompts, continuations))


class Subject(LawSampler):
    """An exact sampler whose Protocol extras (``last_drafted``, ``speculation_counts``) answer what is given."""

    def __init__(self, marks=None, counts=None, rows=None):
        super().__init__(LAW)
        self.marks, self.counts, self.rows = marks, counts, rows

    def __call__(self, prompts, max_new_tokens, seed):
        out = super().__call__(prompts, max_new_tokens, seed)
        self.last = len(prompts)  # rows of the last call
        return out if self.rows is None else self.rows(out, max_new_tokens)


def _with(method: str, answer):
    """A Subject class with ``method`` answering ``answer(self)`` (a Protocol is checked by its methods)."""
    return type(f"Subject_{method}", (Subject,), {method: lambda self: answer(self)})


def _raise(error):
    raise error


# ------------------------------------------------------------------ item 3: the oracle's terms, before any work


@pytest.mark.parametrize("terms, error, says", [
    (dict(floor=-1.0), ValueError, "oracle.floor (Oracle) must be >= 0.0, got -1.0"),
    (dict(floor=math.nan), ValueError, "oracle.floor (Oracle) must be a number, got nan"),
    (dict(floor="0"), TypeError, "oracle.floor (Oracle) must be a real number, got str '0'"),
    (dict(floor=0.7), ValueError, "oracle.floor (Oracle) must be < 0.5"),
    (dict(tolerance=math.inf), ValueError, "oracle.tolerance (Oracle) must be finite"),
    (dict(tolerance=0.5), ValueError, "oracle.tolerance (Oracle) must be <= 0.01"),
    (dict(vocab_size=0), ValueError, "oracle.vocab_size (Oracle) must be an integer >= 1"),
])
def test_an_oracles_terms_are_checked_before_any_call(terms, error, says):
    calls = []
    subject = lambda prompts, n, seed: calls.append(seed) or [[0] * n for _ in prompts]  # noqa: E731
    with pytest.raises(error, match=says.replace("(", r"\(").replace(")", r"\)")):
        check_tokens(subject, Oracle(**terms), PROMPTS, **RUN)
    assert calls == []


# ------------------------------------------------------------------ item 4: the subject's marks and counters


@pytest.mark.parametrize("marks, says", [
    (lambda self: _raise(RuntimeError("marks lost")), "RuntimeError: marks lost"),
    (lambda self: None, "returned NoneType"),
    (lambda self: [[True] * 3], "for a call of"),
    (lambda self: [None] * self.last, "returned None for row 0"),
    (lambda self: [["no"] * 3] * self.last, "returned ['no', 'no', 'no'] for row 0"),
    (lambda self: [[True]] * self.last, "for row 0 of 3 tested tokens"),
])
def test_draft_marks_that_break_the_protocol_are_an_error_of_the_subject(marks, says):
    report = check_tokens(_with("last_drafted", marks)(), Oracle(), PROMPTS, **RUN)
    assert report.verdict == "ERROR" and report.error["party"] == "subject", report.format()
    assert report.error["call"].startswith("last_drafted() after a call of") and says in report.error["message"], report.error


@pytest.mark.parametrize("counts, says", [
    (lambda self: _raise(ConnectionError("metrics gone")), "ConnectionError: metrics gone"),
    (lambda self: [1, 2, 3], "returned list"),
    (lambda self: {"drafts": "x", "draft_tokens": 1, "accepted_tokens": 1}, "drafts='x'"),
    (lambda self: {"drafts": -1, "draft_tokens": 1, "accepted_tokens": 1}, "drafts=-1"),
])
def test_counters_that_break_the_protocol_are_an_error_of_the_subject(counts, says):
    report = check_tokens(_with("speculation_counts", counts)(), Oracle(), PROMPTS, **RUN)
    assert report.verdict == "ERROR" and report.error["party"] == "subject", report.format()
    assert report.error["call"].startswith("speculation_counts()") and says in report.error["message"], report.error


def test_counters_that_break_only_after_sampling_are_an_error_too():
    class Late(Subject):
        readings = 0

        def speculation_counts(self):
            self.readings += 1
            return {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0} if self.readings < 3 else {"drafts": None}

    report = check_tokens(Late(), Oracle(), PROMPTS, **RUN)
    assert report.verdict == "ERROR" and report.error["party"] == "subject" and "speculation_counts()" in report.error["call"]


# ------------------------------------------------------------------ item 5: laws of the wrong shape


def _each(change):
    return lambda laws: [[change(law) for law in answer] for answer in laws]


@pytest.mark.parametrize("answer, says", [
    (_each(lambda law: TokenLaw(law.probs[:-1] / law.probs[:-1].sum())), f"where the vocabulary has {VOCAB}"),
    (lambda laws: [[TokenLaw(np.full(VOCAB + i % 2, 1 / (VOCAB + i % 2))) for i, _ in enumerate(a)] for a in laws], "vocabulary"),
    (_each(lambda law: TokenLaw(np.tile(law.probs / 2, (2, 1)))), "not 1-D"),
    (_each(lambda law: TokenLaw(law.probs, ids=np.arange(VOCAB - 1))), "one integer id per probability"),
    (_each(lambda law: TokenLaw(law.probs, ids=np.arange(VOCAB) - 1)), "distinct and in [0, 6)"),
    (_each(lambda law: TokenLaw(law.probs, ids=np.arange(VOCAB) + 0.5)), "one integer id per probability"),
    (_each(lambda law: TokenLaw(law.probs, ids=np.zeros(VOCAB, dtype=int))), "distinct"),
    (_each(lambda law: TokenLaw(law.probs, ids=np.arange(VOCAB) + 1)), "distinct and in [0, 6)"),
])
def test_an_oracle_law_of_the_wrong_shape_is_an_error_of_the_oracle(answer, says):
    report = check_tokens(Subject(), Oracle(answer), PROMPTS, **RUN)
    assert report.verdict == "ERROR" and report.error["party"] == "law oracle", report.format()
    assert says in report.error["message"], report.error


# ------------------------------------------------------------------ items 6 and 7: ids and row lengths


def test_the_vocabulary_comes_from_the_oracle_a_subject_id_beyond_it_is_the_subjects_error():
    beyond = Subject(rows=lambda out, n: [row[:-1] + [VOCAB + 3] for row in out])
    report = check_tokens(beyond, Oracle(), PROMPTS, **RUN)
    assert report.verdict == "ERROR" and report.error["party"] == "subject", report.format()
    assert f"token id {VOCAB + 3}" in report.error["message"] and f"[0, {VOCAB})" in report.error["message"]
    last = Subject(rows=lambda out, n: [[VOCAB - 1 + 1] * n for _ in out])
    assert check_tokens(last, Oracle(), PROMPTS, **RUN).error["party"] == "subject"


def test_a_prompt_id_beyond_the_oracles_vocabulary_is_refused_before_any_call():
    calls = []
    subject = lambda prompts, n, seed: calls.append(seed) or [[0] * n for _ in prompts]  # noqa: E731
    with pytest.raises(ValueError, match=rf"prompts\[1\]\[0\] must be an integer <= {VOCAB - 1}, got {VOCAB}"):
        check_tokens(subject, Oracle(), [[0], [VOCAB]], **RUN)
    with pytest.raises(ValueError, match="vocab_size is 9, the oracle's vocab_size 6"):
        check_tokens(subject, Oracle(), PROMPTS, vocab_size=9, **RUN)
    assert calls == []


@pytest.mark.parametrize("check", ["tokens", "decoder"])
def test_rows_longer_than_asked_are_an_error_of_the_subject_never_cut(check):
    echo = Subject(rows=lambda out, n: [[0] + row for row in out])  # the prompt echoed before the answer
    if check == "tokens":
        report = check_tokens(echo, Oracle(), PROMPTS, **RUN)
    else:
        report = check_decoder(echo, LAW, PROMPTS, length=2, max_new_tokens=2, n=50, tv=None, seed=1)
    assert report.verdict == "ERROR" and report.error["party"] == "subject", report.format()
    assert "a row of" in report.error["message"] and "at most max_new_tokens" in report.error["message"]


# ------------------------------------------------------------------ the fuzz suite


def _hostile_number():
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**20), 10**20),
                     st.sampled_from(["0", None, True, [0.1], b"1"]))


@FUZZ
@given(floor=_hostile_number(), tolerance=_hostile_number())
def test_fuzz_any_floor_and_tolerance_are_taken_only_when_they_mean_something(floor, tolerance):
    """Either the terms are a floor in [0, 0.5) and a tolerance in [0, 0.01] and the exact sampler PASSes, or a
    ValueError/TypeError names the attribute before any call."""
    calls = []
    subject = Subject()
    counted = lambda prompts, n, seed: calls.append(seed) or subject(prompts, n, seed)  # noqa: E731
    valid = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (floor, tolerance)) \
        and 0 <= floor < 0.5 and 0 <= tolerance <= 0.01
    if not valid:
        with pytest.raises((ValueError, TypeError), match=r"oracle\.(floor|tolerance)"):
            check_tokens(counted, Oracle(floor=floor, tolerance=tolerance), PROMPTS, **RUN)
        assert calls == []
        return
    report = check_tokens(counted, Oracle(floor=floor, tolerance=tolerance), PROMPTS, **RUN)
    assert report.verdict == "PASS", report.format()
    assert f"floor: a TV of {float(floor):g}" in " ".join(report.notes)


def _broken_law():
    """A random TokenLaw-like answer for one position: some are valid, most are not."""
    number = st.one_of(st.floats(-1, 2), st.sampled_from([math.nan, math.inf]))
    probs = st.lists(number, min_size=0, max_size=VOCAB + 2)
    ids = st.one_of(st.none(), st.lists(st.integers(-3, VOCAB + 3), max_size=VOCAB + 2),
                    st.lists(st.floats(-1, VOCAB), max_size=VOCAB))
    rest = st.one_of(number, st.just(0.0))
    raw = st.builds(lambda p, i, r: TokenLaw(np.asarray(p, dtype=np.float64), None if i is None else np.asarray(i), r),
                    probs, ids, rest)
    return st.one_of(raw, st.sampled_from([None, 0.5, "law", [0.5, 0.5]]))


@FUZZ
@given(law=_broken_law(), where=st.integers(0, 5))
def test_fuzz_any_oracle_answer_is_the_oracles_error_or_a_law_the_subject_is_judged_on(law, where):
    """One position's law replaced by a random answer: the report is an ERROR naming the law oracle, or (when the
    answer happens to be a law) a verdict - never a traceback and never an ERROR blamed on the subject."""
    def answer(laws):
        flat = [(a, t) for a in range(len(laws)) for t in range(len(laws[a]))]
        a, t = flat[where % len(flat)]
        laws[a][t] = law
        return laws

    report = check_tokens(Subject(), Oracle(answer), PROMPTS, **RUN)
    if report.verdict == "ERROR":
        assert report.error["party"] == "law oracle" and report.error["call"].startswith("token_laws"), report.error
    else:
        assert report.verdict in ("PASS", "FAIL") and isinstance(law, TokenLaw), report.format()


@FUZZ
@given(marks=st.one_of(st.none(), st.integers(), st.text(max_size=3),
                       st.lists(st.one_of(st.none(), st.text(max_size=2), st.lists(st.one_of(st.booleans(), st.integers(-1, 2),
                                                                                             st.text(max_size=1)), max_size=4)),
                                max_size=3)),
       counts=st.one_of(st.none(), st.dictionaries(st.sampled_from(["drafts", "draft_tokens", "accepted_tokens", "x"]),
                                                   st.one_of(st.integers(-2, 5), st.text(max_size=1), st.none()))))
def test_fuzz_any_marks_and_counters_are_read_or_the_subjects_error(marks, counts):
    class Hostile(Subject):
        def last_drafted(self):
            return [marks] * self.last if isinstance(marks, list) else marks

        def speculation_counts(self):
            return counts

    report = check_tokens(Hostile(), Oracle(), PROMPTS, **RUN)
    assert report.verdict in ("PASS", "ERROR", "INCONCLUSIVE"), report.format()
    if report.verdict == "ERROR":
        assert report.error["party"] == "subject" and report.error["call"].split()[0] in ("last_drafted()", "speculation_counts()")
