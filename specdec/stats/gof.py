"""One-sample goodness-of-fit tests against an exact law (docs/reference.md §7, F29-F31; docs/reference.md).

* :func:`pool_bins` - bins chosen from expected counts only, never from observed ones:
  every cell expecting fewer than 5 joins one "rare" bin; a rare bin still below 5
  joins the smallest other bin.
* :func:`goodness_of_fit` - support check first (an observation where the law is 0
  fails with p = 0), then Pearson's X^2 (F29) or G (F30) on the pooled bins.
* :func:`monte_carlo_gof` - the Monte-Carlo exact test (F31) for small expected counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._validation import INT64_MAX, as_choice, as_counts, as_int, as_law, count_total

MIN_EXPECTED = 5.0
METHODS = ("pearson", "g")


def pool_bins(expected_counts) -> np.ndarray:
    """Group ids for the cells: cells with expected count < 5 form one "rare" group; a rare
    group still < 5 joins the smallest other group.  Zero-expectation cells get -1."""
    expected = np.asarray(expected_counts, dtype=np.float64)
    if expected.ndim != 1 or not np.all(np.isfinite(expected)) or (expected.size and expected.min() < 0):
        raise ValueError("expected_counts must be a vector of finite non-negative numbers")
    groups = np.full(expected.shape, -1, dtype=np.int64)
    positive = expected > 0
    big = positive & (expected >= MIN_EXPECTED)
    rare = positive & ~big
    n_big = int(big.sum())
    groups[big] = np.arange(n_big)
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
    method: str  # "pearson", "g", "monte-carlo pearson", "monte-carlo g"
    support_violation: int  # observations in cells of probability 0 (any => pvalue 0)

    def describe(self) -> str:
        head = f"{self.method} statistic={self.statistic:.4g}, df={self.df}, n={self.n}, p-value={self.pvalue:.3g}"
        if self.support_violation:
            head += f", {self.support_violation} observation(s) outside the law's support"
        return head


def _inputs(observed_counts, expected_probs, method) -> tuple[np.ndarray, np.ndarray, str]:
    method = as_choice("method", method, METHODS)
    observed = as_counts("observed_counts", observed_counts)
    probs = as_law("expected_probs", expected_probs, ndim=1).numpy()
    if observed.shape != probs.shape:
        raise ValueError(f"observed_counts has {observed.size} cells but expected_probs has {probs.size}")
    return observed, probs, method


def goodness_of_fit(observed_counts, expected_probs, *, method: str = "pearson") -> GofResult:
    """Test counts per cell against an exact law (one sample); support check first."""
    observed, probs, method = _inputs(observed_counts, expected_probs, method)
    n = count_total(observed)  # exact: a total past 2**63 does not wrap
    outside = count_total(observed[probs <= 0])
    if outside:
        return GofResult(math.inf, 0.0, 0, n, method, outside)
    groups = pool_bins(float(n) * probs)  # float(n): exact totals beyond int64 stay finite floats
    num_groups = int(groups.max(initial=-1)) + 1
    if num_groups < 2:
        return GofResult(0.0, 1.0, 0, n, method, 0)
    kept = groups >= 0
    obs = np.bincount(groups[kept], weights=observed[kept].astype(np.float64), minlength=num_groups)
    exp = np.bincount(groups[kept], weights=float(n) * probs[kept], minlength=num_groups)
    exp *= obs.sum() / exp.sum()  # remove float drift of the total; scipy requires equal sums
    lambda_ = "pearson" if method == "pearson" else "log-likelihood"
    stat, pvalue = stats.power_divergence(obs, exp, lambda_=lambda_)
    return GofResult(float(stat), float(pvalue), num_groups - 1, n, method, 0)


def monte_carlo_gof(observed_counts, expected_probs, *, num_resamples: int, seed: int, method: str = "pearson") -> GofResult:
    """(F31) Monte-Carlo exact test: p = (1 + #{T_b >= T_obs}) / (B + 1).

    T is Pearson's X^2 (or G) over the cells of positive probability, without pooling;
    T_b is computed on ``numpy`` multinomial draws of the same n from the law.  The
    smallest attainable p-value is 1 / (B + 1): choose B >= 20 / alpha.
    """
    observed, probs, method = _inputs(observed_counts, expected_probs, method)
    num_resamples = as_int("num_resamples", num_resamples, minimum=1, maximum=INT64_MAX)
    seed = as_int("seed", seed, minimum=0)
    n = count_total(observed)
    if n > INT64_MAX:
        raise ValueError(f"observed_counts total {n} is more than monte_carlo_gof can draw (numpy's multinomial takes an int64 n)")
    outside = count_total(observed[probs <= 0])
    if outside:
        return GofResult(math.inf, 0.0, 0, n, f"monte-carlo {method}", outside)
    keep = probs > 0
    if n == 0:  # no samples: nothing to test (as goodness_of_fit)
        return GofResult(0.0, 1.0, 0, 0, f"monte-carlo {method}", 0)
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
