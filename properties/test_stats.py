"""The statistical machinery, exactly (docs/reference.md §7): the sample-size table (F34), pooling from expected counts,
the support check, agreement with scipy."""

import numpy as np
import pytest
from scipy import stats

import specdec as sd
from specdec.stats import pool_bins


@pytest.mark.parametrize(
    "bins,tv,expected",
    [(2, 0.05, 3155), (2, 0.02, 19719), (2, 0.01, 78874), (27, 0.05, 6483), (27, 0.02, 40516),
     (27, 0.01, 162062), (243, 0.05, 14597), (243, 0.02, 91226), (243, 0.01, 364901)],
)
def test_sample_size_table_of_spec_section_7(bins, tv, expected):
    """(F34) alpha = 1e-3, power .99, m = 1: the table of docs/reference.md §7, to the sample."""
    assert sd.required_sample_size(bins, tv, alpha=1e-3) == expected


def test_bonferroni_plan_of_spec_section_7():
    assert sd.required_sample_size(27, 0.02, alpha=1e-3 / 20) == 48686


def test_detectable_tv_inverts_the_plan():
    n = sd.required_sample_size(27, 0.02, alpha=1e-6)
    uniform = [1 / 27] * 27  # 27 equal cells, none pooled at this n: the raw F34 inverse
    assert sd.detectable_tv(uniform, n, alpha=1e-6) <= 0.02 < sd.detectable_tv(uniform, n - 1, alpha=1e-6)


def test_pooling_uses_expected_counts_only():
    # Cells with E < 5 form one rare bin; still < 5 (4.5 here), it joins the smallest other bin.
    assert pool_bins([100.0, 50.0, 3.0, 1.0, 0.5, 0.0]).tolist() == [0, 1, 1, 1, 1, -1]
    assert pool_bins([100.0, 3.0, 3.0]).tolist() == [0, 1, 1]
    assert pool_bins([2.0, 1.0]).tolist() == [0, 0]


def test_support_check_fails_at_once():
    """One observation where the law is 0 gives p = 0, whatever the rest looks like."""
    result = sd.goodness_of_fit([500, 499, 1], [0.5, 0.5, 0.0])
    assert result.pvalue == 0.0 and result.support_violation == 1
    assert "outside the law's support" in result.describe()


def test_statistics_agree_with_scipy_on_unpooled_bins():
    observed, law = [30, 50, 20], np.array([0.3, 0.5, 0.2])
    for method, lambda_ in (("pearson", "pearson"), ("g", "log-likelihood")):
        ours = sd.goodness_of_fit(observed, law, method=method)
        theirs = stats.power_divergence(observed, 100 * law, lambda_=lambda_)
        assert ours.statistic == pytest.approx(theirs.statistic) and ours.pvalue == pytest.approx(theirs.pvalue)




def test_zero_samples_are_no_evidence_in_both_tests():
    from specdec.stats import monte_carlo_gof

    law = [0.2, 0.3, 0.5]
    for result in (sd.goodness_of_fit([0, 0, 0], law), monte_carlo_gof([0, 0, 0], law, num_resamples=100, seed=0)):
        assert (result.statistic, result.pvalue, result.df, result.n) == (0.0, 1.0, 0, 0), result
