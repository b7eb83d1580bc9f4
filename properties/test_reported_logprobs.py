"""specdec.conformance.reported_logprobs on specdec's own exact oracles: known deviations, verdicts, validation."""

import math

import numpy as np
import pytest

from specdec.conformance.reported_logprobs import LogprobReport, compare_logprobs, control_tolerance
from specdec.laws.oracles import TargetLawOracle, TokenLaw
from specdec.laws.target import FunctionLaw

V = 4


def _row(context):
    # an exact law that depends on the prefix: mass 0.4 on (last token + 1) mod V, 0.2 elsewhere
    row = np.full(V, 0.2)
    row[(context[-1] + 1) % V] = 0.4
    return row


ORACLE = TargetLawOracle(FunctionLaw(_row, V))
PROMPTS = [[0], [2]]
ANSWERS = [[1, 2, 0], [3, 3]]
EXACT = [[math.log(0.4), math.log(0.4), math.log(0.2)], [math.log(0.4), math.log(0.2)]]


def test_exact_reports_deviate_by_zero_and_pass_a_control_tolerance():
    control = compare_logprobs(ORACLE, PROMPTS, ANSWERS, EXACT, claims="sampled")
    assert control.tokens == 5 and control.unlisted == 0
    assert control.max_deviation < 1e-12 and control.verdict == "NO TOLERANCE"
    tol = control_tolerance(control)
    assert 1e-6 <= tol < 1e-6 + 1e-11
    assert compare_logprobs(ORACLE, PROMPTS, ANSWERS, EXACT, claims="sampled", tolerance=tol).verdict == "PASS"


def test_a_report_of_another_law_fails_with_its_deviation_at_its_position_and_stratum():
    # the engine reports the law at the wrong prefix at position 1 of answer 0 (0.2 instead of 0.4)
    wrong = [list(EXACT[0]), list(EXACT[1])]
    wrong[0][1] = math.log(0.2)
    drafted = [[False, True, False], [False, False]]
    report = compare_logprobs(ORACLE, PROMPTS, ANSWERS, wrong, claims="raw", drafted=drafted, tolerance=1e-6)
    assert report.verdict == "FAIL"
    assert report.max_deviation == pytest.approx(math.log(2))
    assert report.by_position[1] == pytest.approx(math.log(2)) and report.by_position[0] < 1e-12
    assert report.drafted_max == pytest.approx(math.log(2)) and report.undrafted_max < 1e-12
    assert report.drafted_tokens == 1
    assert report.mean_deviation == pytest.approx(math.log(2) / 5)


class _Listed:
    floor, tolerance = 0.0, 1e-9

    def token_laws(self, prompts, continuations):
        law = TokenLaw(np.array([0.5, 0.25]), ids=np.array([1, 2]), rest=0.25)
        return [[law for _ in c] for c in continuations]


def test_tokens_outside_a_compact_law_are_counted_unlisted_and_zero_probability_is_infinite():
    report = compare_logprobs(_Listed(), [[0]], [[1, 3]], [[math.log(0.5), -1.0]], claims="sampled")
    assert report.tokens == 1 and report.unlisted == 1 and report.max_deviation < 1e-12
    forbidden = TargetLawOracle(FunctionLaw(lambda c: np.array([1.0, 0, 0, 0]), V))
    report = compare_logprobs(forbidden, [[0]], [[2]], [[-1.0]], claims="sampled")
    assert math.isinf(report.max_deviation)
    with pytest.raises(ValueError, match="control cannot set a tolerance"):
        control_tolerance(report)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(claims="logits"), ValueError, "claims"),
    (dict(reported=[[0.0]]), ValueError, "one entry per answer"),
    (dict(reported=[[0.0, 0.0, 0.0], [0.0]]), ValueError, r"reported\[1\]"),
    (dict(reported=[[0.0, 0.5, 0.0], [0.0, 0.0]]), ValueError, "log-probability"),
    (dict(drafted=[[True]]), ValueError, "drafted"),
    (dict(oracle=object()), TypeError, "LawOracle"),
    (dict(tolerance=-1.0), ValueError, "tolerance"),
])
def test_bad_input_is_refused_by_name(kwargs, error, match):
    args = dict(oracle=ORACLE, prompts=PROMPTS, continuations=ANSWERS, reported=EXACT, claims="sampled")
    args.update(kwargs)
    with pytest.raises(error, match=match):
        compare_logprobs(args.pop("oracle"), args.pop("prompts"), args.pop("continuations"), args.pop("reported"), **args)
    with pytest.raises(TypeError, match="LogprobReport"):
        control_tolerance(1.0)
