"""One-sample goodness-of-fit tests with sample sizes planned from power (SPEC §7).

* :func:`plan_sample_size` - the smallest n whose chi-square test at level alpha
  detects every alternative at total-variation distance ``tv`` with the given
  power (F32-F34: lambda = n * sum (pi - P)^2 / P >= 4 n tv^2 by Cauchy-Schwarz,
  with equality for the worst-case perturbation).
* :func:`detectable_tv` - its inverse: the TV a test of n samples catches.
* :func:`pool_bins` - bins chosen from expected counts only, never observed.
* :func:`goodness_of_fit` - support check first (an observation where the law is
  0 fails with p = 0), then Pearson X^2 (F29) or G (F30) on the pooled bins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

MIN_EXPECTED = 5.0


def _check_plan_args(num_bins, alpha, power) -> None:
    if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) or num_bins < 2:
        raise ValueError(f"num_bins must be an integer >= 2, got {num_bins!r}")
    if not (0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not (alpha < power < 1):
        raise ValueError(f"power must be in (alpha, 1), got {power!r}")


def required_noncentrality(num_bins: int, *, alpha: float, power: float = 0.99) -> float:
    """lambda such that ncx2.sf(chi2.isf(alpha, df), df, lambda) = power, df = num_bins - 1 (F34)."""
    _check_plan_args(num_bins, alpha, power)
    df = num_bins - 1
    critical = stats.chi2.isf(alpha, df)
    gap = lambda lam: stats.ncx2.sf(critical, df, lam) - power  # noqa: E731, increasing in lam
    upper = 1.0
    while gap(upper) < 0:
        upper *= 2
    return optimize.brentq(gap, 0.0, upper, xtol=1e-10, rtol=1e-12)


def plan_sample_size(num_bins: int, tv: float, *, alpha: float, power: float = 0.99) -> int:
    """(F34) Smallest n with power >= ``power`` against every law at TV distance ``tv``."""
    if not (0 < tv <= 1):
        raise ValueError(f"tv must be in (0, 1], got {tv!r}")
    lam = required_noncentrality(num_bins, alpha=alpha, power=power)
    return max(1, math.ceil(lam / (4 * tv * tv)))


def detectable_tv(num_bins: int, n: int, *, alpha: float, power: float = 0.99) -> float:
    """Smallest TV distance detected with ``power`` by a level-``alpha`` test of ``n`` samples."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    return math.sqrt(required_noncentrality(num_bins, alpha=alpha, power=power) / (4 * n))


def pool_bins(expected_counts) -> np.ndarray:
    """Group ids for the cells: every cell with expected count < 5 joins one "rare" group;
    a rare group still < 5 joins the smallest other group.  Zero-expectation cells get -1."""
    expected = np.asarray(expected_counts, dtype=np.float64)
    groups = np.full(expected.shape, -1, dtype=np.int64)
    positive = expected > 0
    big = positive & (expected >= MIN_EXPECTED)
    rare = positive & ~big
    groups[big] = np.arange(int(big.sum()))
    n_big = int(big.sum())
    if rare.any():
        if expected[rare].sum() >= MIN_EXPECTED or n_big == 0:
            groups[rare] = n_big
        else:
            smallest = int(np.argmin(np.where(big, expected, np.inf)))
            groups[rare] = groups[smallest]
    return groups


@dataclass(frozen=True)
class GofResult:
    """Outcome of one goodness-of-fit test."""

    statistic: float
    pvalue: float
    df: int  # pooled bins - 1
    n: int  # observations
    method: str  # "pearson" or "g"
    support_violation: int  # observations in cells of probability 0 (any => pvalue 0)

    def describe(self) -> str:
        head = f"{self.method} statistic={self.statistic:.4g}, df={self.df}, n={self.n}, p-value={self.pvalue:.3g}"
        if self.support_violation:
            head += f", {self.support_violation} observation(s) outside the law's support"
        return head


def goodness_of_fit(observed_counts, expected_probs, *, method: str = "pearson") -> GofResult:
    """Test counts per cell against an exact law (one-sample); support check first."""
    if method not in ("pearson", "g"):
        raise ValueError(f"method must be 'pearson' or 'g', got {method!r}")
    observed = np.asarray(observed_counts, dtype=np.int64).ravel()
    probs = np.asarray(expected_probs, dtype=np.float64).ravel()
    if observed.shape != probs.shape:
        raise ValueError(f"observed_counts has {observed.size} cells but expected_probs has {probs.size}")
    if probs.min(initial=0) < 0 or abs(probs.sum() - 1) > 1e-9:
        raise ValueError(f"expected_probs must be non-negative and sum to 1, sums to {probs.sum()!r}")
    n = int(observed.sum())
    outside = int(observed[probs <= 0].sum())
    if outside:
        return GofResult(math.inf, 0.0, 0, n, method, outside)
    groups = pool_bins(n * probs)
    num_groups = int(groups.max()) + 1
    obs = np.bincount(groups[groups >= 0], weights=observed[groups >= 0], minlength=num_groups)
    exp = np.bincount(groups[groups >= 0], weights=n * probs[groups >= 0], minlength=num_groups)
    if num_groups < 2:
        return GofResult(0.0, 1.0, 0, n, method, 0)
    lambda_ = "pearson" if method == "pearson" else "log-likelihood"
    exp *= obs.sum() / exp.sum()  # remove float drift of the total; scipy requires equal sums
    stat, pvalue = stats.power_divergence(obs, exp, lambda_=lambda_)
    return GofResult(float(stat), float(pvalue), num_groups - 1, n, method, 0)


def monte_carlo_gof(observed_counts, expected_probs, *, num_resamples: int, seed: int, method: str = "pearson") -> GofResult:
    """(F31) Monte-Carlo exact test for small expected counts: p = (1 + #{T_b >= T_obs}) / (B + 1).

    T is Pearson's X^2 (or G) over the cells of positive probability, without
    pooling; T_b is computed on ``numpy`` multinomial draws of the same n from
    the law.  The smallest attainable p-value is 1 / (B + 1): choose B >= 20 / alpha.
    """
    if method not in ("pearson", "g"):
        raise ValueError(f"method must be 'pearson' or 'g', got {method!r}")
    if isinstance(num_resamples, bool) or not isinstance(num_resamples, int) or num_resamples < 1:
        raise ValueError(f"num_resamples must be an integer >= 1, got {num_resamples!r}")
    observed = np.asarray(observed_counts, dtype=np.int64).ravel()
    probs = np.asarray(expected_probs, dtype=np.float64).ravel()
    if observed.shape != probs.shape:
        raise ValueError(f"observed_counts has {observed.size} cells but expected_probs has {probs.size}")
    n = int(observed.sum())
    outside = int(observed[probs <= 0].sum())
    if outside:
        return GofResult(math.inf, 0.0, 0, n, f"monte-carlo {method}", outside)
    keep = probs > 0
    p = probs[keep] / probs[keep].sum()
    expected = n * p

    def statistic(counts: np.ndarray) -> np.ndarray:
        counts = counts.astype(np.float64)
        if method == "pearson":
            return ((counts - expected) ** 2 / expected).sum(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(counts > 0, counts * np.log(counts / expected), 0.0)
        return 2 * terms.sum(-1)

    observed_stat = float(statistic(observed[keep]))
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, num_resamples, 10_000):
        draws = rng.multinomial(n, p, size=min(10_000, num_resamples - start))
        exceed += int((statistic(draws) >= observed_stat - 1e-9 * max(1.0, abs(observed_stat))).sum())
    return GofResult(observed_stat, (1 + exceed) / (num_resamples + 1), int(keep.sum()) - 1, n, f"monte-carlo {method}", 0)


def holm(pvalues, alpha: float) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise level ``alpha``.

    Sort p_(1) <= ... <= p_(m); reject H_(i) while p_(i) <= alpha / (m - i + 1); stop at the first
    that is not.  (statsmodels' ``multipletests(method="holm")``; statsmodels is not a dependency.)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    values = [float(p) for p in pvalues]
    if any(math.isnan(p) or p < 0 or p > 1 for p in values):
        raise ValueError(f"p-values must lie in [0, 1], got {values}")
    rejected = [False] * len(values)
    order = sorted(range(len(values)), key=values.__getitem__)
    for rank, index in enumerate(order):
        if values[index] > alpha / (len(values) - rank):
            break
        rejected[index] = True
    return rejected
