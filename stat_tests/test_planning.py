"""Power and size of the planned test, by simulation (F32-F34): at the planned n the worst-case
perturbation at TV eps is caught with power 0.99, and under the null the test rejects at its level.

Each rate is itself tested, one-sided, with an exact binomial test at one check's share of the
run's error budget: the miss rate against 0.02 (planned: 0.01) and the size against 2 alpha."""

import numpy as np
import pytest
from scipy import stats

import specdec as sd

REPS = 2000


def worst_case(law: np.ndarray, tv: float) -> np.ndarray:
    """pi = P (1 +/- 2 tv) on two halves of P-mass 1/2 (F33): TV exactly tv (up to the split)."""
    order = np.argsort(law)
    cumulative = np.cumsum(law[order])
    sign = np.where(cumulative - law[order] / 2 < 0.5, 1.0, -1.0)
    perturbed = np.empty_like(law)
    perturbed[order] = law[order] * (1 + 2 * tv * sign)
    return perturbed / perturbed.sum()


@pytest.mark.parametrize("method", ["pearson", "g"])
def test_power_and_size_by_simulation(specdec_budget, method):
    rng = np.random.default_rng(2024)
    law = rng.dirichlet(np.ones(27))
    tv, alpha = 0.02, 1e-2
    n = sd.required_sample_size(27, tv, alpha=alpha)
    perturbed = worst_case(law, tv)
    assert 0.5 * np.abs(perturbed - law).sum() == pytest.approx(tv, rel=0.1)
    misses = sum(sd.goodness_of_fit(rng.multinomial(n, perturbed), law, method=method).pvalue > alpha for _ in range(REPS))
    rejections = sum(sd.goodness_of_fit(rng.multinomial(n, law), law, method=method).pvalue <= alpha for _ in range(REPS))
    level = specdec_budget.allot(2, f"{method}: power and size by simulation").alpha / 2
    p_power = stats.binomtest(misses, REPS, 0.02, alternative="greater").pvalue
    p_size = stats.binomtest(rejections, REPS, 2 * alpha, alternative="greater").pvalue
    print(f"\n{method}: n={n}, alpha={alpha}, TV={tv}: power={1 - misses / REPS:.4f}, size={rejections / REPS:.4f} over {REPS} replicates")
    assert p_power > level, f"power {1 - misses / REPS:.4f} at planned n={n}: binomial p={p_power:.3g} against a miss rate of 0.02"
    assert p_size > level, f"size {rejections / REPS:.4f} at alpha={alpha}: binomial p={p_size:.3g} against 2 alpha"
