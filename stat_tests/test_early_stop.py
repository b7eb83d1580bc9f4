"""Stop when the evidence is in (issue 29, docs/reference.md §10, P4): every check looks at its counts at 1, 2, 4, ...
times its first chunk and stops at the first look where a check rejects at the interim level (a tenth of the
alpha over at most 32 looks, Bonferroni); the final test keeps nine tenths, so the level holds.

* a gross deviation stops a check at an early look, with far fewer samples than planned, and the report says
  at which look and after how many samples; switched off, the same check draws its whole plan and fails too;
* a correct subject never stops early: it draws its whole plan and passes;
* the interim level is what P4 states, and the looks of a resumed run continue where the interrupted one was.
"""

import pytest

import specdec as sd
from fixtures.mutants import MUTANTS
from specdec.conformance import check_ab, check_verifier
from specdec.conformance.campaign import LOOKS, SPEND, Sampled, looker

ALWAYS_ACCEPT = next(m for m in MUTANTS if m.name == "always_accept")


def test_a_gross_deviation_stops_the_check_at_an_early_look():
    report = check_verifier(ALWAYS_ACCEPT.verifier, tv=0.005, seed=3, device="cpu", name="always_accept")
    assert report.verdict == "FAIL", report.format()
    stop = report.stopped_early
    assert stop is not None and stop["look"] <= 3 and stop["pvalue"] <= stop["level"], stop
    assert report.samples * 10 < report.planned_samples, (report.samples, report.planned_samples)
    assert f"stopped early at look {stop['look']}, after {report.samples:,} of {report.planned_samples:,} planned samples" \
        in report.summary()
    assert stop["level"] == pytest.approx(SPEND * report.family_alpha / (len(report.checks) * LOOKS))


def test_without_early_stopping_the_same_check_draws_its_whole_plan():
    report = check_verifier(ALWAYS_ACCEPT.verifier, n=4000, seed=3, device="cpu", early_stop=False, name="always_accept")
    assert report.verdict == "FAIL" and report.stopped_early is None
    assert report.samples == report.planned_samples


def test_a_correct_subject_draws_its_whole_plan_and_passes():
    report = check_verifier(sd.verify_tokens, tv=0.1, seed=4, device="cpu", name="reference")
    assert report.verdict == "PASS" and report.stopped_early is None, report.format()
    assert report.samples == report.planned_samples


def test_a_two_sample_check_stops_early_too():
    from fixtures.subjects import autoregressive_decoder

    def always_token_zero(prompts, max_new_tokens, seed):
        return [[0] * max_new_tokens for _ in prompts]

    report = check_ab(always_token_zero, autoregressive_decoder, [[1, 2, 3]], length=2, tv=0.01, seed=5, rows_per_call=100)
    assert report.verdict == "FAIL" and report.stopped_early is not None and report.stopped_early["look"] == 1, report.format()
    assert report.samples < 1000


class _Stream:
    def __init__(self, pvalue):
        self.pvalue = pvalue

    def evaluate(self, tally, alpha):
        return [type("C", (), {"pvalue": self.pvalue, "name": "c"})()]


def test_looks_fall_at_doubling_sample_counts_and_resume_where_they_were():
    sampled = Sampled(drawn=[0], next_chunk=[0], tallies=[None])
    look = looker([_Stream(0.5)], sampled, alpha=1e-3, m=1, first=100, enabled=True)
    made = []
    for drawn in (50, 100, 150, 200, 399, 400, 1000):
        sampled.drawn[0] = drawn
        made.append(look())
    assert made == [False] * 7 and sampled.stopped is None
    sampled.drawn[0] = 1000  # a resumed run at 1000 samples: its next look is at 1600, the 5th
    stops = Sampled(drawn=[1000], next_chunk=[0], tallies=[None])
    resumed = looker([_Stream(0.0)], stops, alpha=1e-3, m=1, first=100, enabled=True)
    assert not resumed() and stops.stopped is None  # 1000 < 1600: no look yet
    stops.drawn[0] = 1600
    assert resumed() and stops.stopped["look"] == 5 and stops.stopped["samples"] == 1600


def test_looks_are_off_when_disabled():
    sampled = Sampled(drawn=[10**6], next_chunk=[0], tallies=[None])
    assert not looker([_Stream(0.0)], sampled, alpha=1e-3, m=1, first=1, enabled=False)()
