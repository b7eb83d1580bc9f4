"""The statistical machinery (SPEC §7): sample-size plan, pooling, support check, power and size."""

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
    """(F34) alpha = 1e-3, power .99, m = 1: the table of SPEC §7, to the sample."""
    assert sd.plan_sample_size(bins, tv, alpha=1e-3) == expected


def test_bonferroni_plan_of_spec_section_7():
    assert sd.plan_sample_size(27, 0.02, alpha=1e-3 / 20) == 48686


def test_detectable_tv_inverts_the_plan():
    n = sd.plan_sample_size(27, 0.02, alpha=1e-6)
    assert sd.detectable_tv(27, n, alpha=1e-6) <= 0.02 < sd.detectable_tv(27, n - 1, alpha=1e-6)


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


@pytest.mark.parametrize("method", ["pearson", "g"])
def test_power_and_size_by_simulation(method):
    """Worst-case perturbation at the planned TV is caught with power ~.99, and the null
    is rejected at rate ~alpha (F32-F34).  400 seeded multinomial replicates each:
    power >= .96 and size <= .03 have binomial tail probability < 1e-3 for a correct plan."""
    rng = np.random.default_rng(2024)
    law = rng.dirichlet(np.ones(27))
    tv, alpha = 0.02, 1e-2
    n = sd.plan_sample_size(27, tv, alpha=alpha)
    # pi = P (1 +/- 2 tv) on two halves of P-mass 1/2 (F33): TV exactly tv.
    order = np.argsort(law)
    cumulative = np.cumsum(law[order])
    sign = np.where(cumulative - law[order] / 2 < 0.5, 1.0, -1.0)
    perturbed = np.empty_like(law)
    perturbed[order] = law[order] * (1 + 2 * tv * sign)
    perturbed /= perturbed.sum()
    assert 0.5 * np.abs(perturbed - law).sum() == pytest.approx(tv, rel=0.1)
    reps = 400
    power = np.mean([sd.goodness_of_fit(rng.multinomial(n, perturbed), law, method=method).pvalue <= alpha for _ in range(reps)])
    size = np.mean([sd.goodness_of_fit(rng.multinomial(n, law), law, method=method).pvalue <= alpha for _ in range(reps)])
    print(f"{method}: n={n}, alpha={alpha}, TV={tv}: power={power:.3f}, size={size:.3f}")
    assert power >= 0.96, f"power {power} at planned n={n}"
    assert size <= 0.03, f"size {size} at alpha={alpha}"
