"""Sample sizes planned from power (docs/reference.md §7, F32-F34; docs/reference.md).

Under an alternative pi, Pearson's X^2 on K cells is approximately noncentral
chi-square with K-1 degrees of freedom and lambda = n sum (pi - P)^2 / P (F32).
At total-variation distance TV = eps, Cauchy-Schwarz gives sum (pi - P)^2 / P >=
4 eps^2, with equality for the worst-case perturbation (F33).  So the smallest n
that detects *every* law at TV eps with power 1 - beta at level alpha solves
ncx2.sf(chi2.isf(alpha, K-1), K-1, 4 n eps^2) = 1 - beta (F34).

* :func:`required_sample_size` - that n (docs/reference.md §7's table, to the sample).
* :func:`detectable_tv` - the TV a test of n samples of a law catches, on the bins the test
  really uses (pooled, plus the rare mass): the number every report prints.
* :func:`sample_size_for_alternative` - n for one known alternative (a mutant's
  exact law), from its exact lambda per sample.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, stats

from .._validation import INT64_MAX, as_float, as_int, as_law
from ..settings import POWER  # noqa: F401 - one home for the power every plan uses
from .gof import pool_bins


def _check_levels(alpha, power) -> tuple[float, float]:
    alpha = as_float("alpha", alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    power = as_float("power", power, minimum=alpha, maximum=1.0, low_open=True, high_open=True)
    return alpha, power


def required_noncentrality(num_bins: int, *, alpha: float, power: float = POWER) -> float:
    """lambda such that ncx2.sf(chi2.isf(alpha, df), df, lambda) = power, df = num_bins - 1 (F34)."""
    num_bins = as_int("num_bins", num_bins, minimum=2, maximum=INT64_MAX)
    alpha, power = _check_levels(alpha, power)
    return _noncentrality(num_bins - 1, alpha, power)


@functools.lru_cache(maxsize=4096)
def _noncentrality(df: int, alpha: float, power: float) -> float:
    critical = stats.chi2.isf(alpha, df)
    gap = lambda lam: stats.ncx2.sf(critical, df, lam) - power  # noqa: E731, increasing in lam
    upper = 1.0
    while gap(upper) < 0:
        upper *= 2
    return optimize.brentq(gap, 0.0, upper, xtol=1e-10, rtol=1e-12)


def required_sample_size(num_bins: int, tv: float, *, alpha: float, power: float = POWER) -> int:
    """(F34) The smallest n with power >= ``power`` against every law at TV distance ``tv``."""
    tv = as_float("tv", tv, minimum=0.0, maximum=1.0, low_open=True)
    lam = required_noncentrality(num_bins, alpha=alpha, power=power)
    denominator = 4 * tv * tv  # underflows to 0 (or a subnormal) for tv below about 1e-154
    n = lam / denominator if denominator > 0 else math.inf
    if not n <= INT64_MAX:
        raise ValueError(f"tv={tv!r} needs more than 2**63 - 1 samples (num_bins={num_bins}, alpha={alpha!r}); ask for a larger tv")
    return max(1, math.ceil(n))


def detectable_tv(law, n: int, *, alpha: float, power: float = POWER) -> float:
    """The smallest TV distance from ``law`` that a level-``alpha`` test of ``n`` samples detects with
    ``power``: the number every report prints (:func:`pooled_detectable_tv`).  For a law of K equal
    cells with n / K >= 5 it is sqrt(lambda(K) / 4n), the inverse of :func:`required_sample_size`."""
    law = as_law("law", law, ndim=1).numpy()
    n = as_int("n", n, minimum=1, maximum=INT64_MAX)
    alpha, power = _check_levels(alpha, power)
    return pooled_detectable_tv(law, n, alpha, power)[0]


def pooled_detectable_tv(law: np.ndarray, n: int, alpha: float, power: float = POWER) -> tuple[float, int, float]:
    """(detectable TV, pooled bins, rare mass) of the test the engine runs on ``n`` samples of ``law``.

    Pearson's test runs on bins pooled from expected counts (F29), so its power is that of the pooled
    bins; a deviation hidden inside the rare bin has TV at most the rare bin's mass r, so the TV
    stated is sqrt(lambda(bins - 1) / 4n) + r (F32-F34).  A law with one outcome can only be departed
    from by mass outside its support, which the support check sees with probability
    1 - (1 - TV)^n; likewise when the cells pool into one bin (at TV up to the rare mass)."""
    if int((law > 0).sum()) == 1:
        return -math.expm1(math.log1p(-power) / n), 1, 0.0  # 1 - (1 - power)^(1/n), exact for huge n
    groups = pool_bins(n * law)
    bins = int(groups.max(initial=-1)) + 1
    expected = n * law
    rare = float(law[(expected > 0) & (expected < 5)].sum())
    if bins < 2:
        big = float(law[expected >= 5].sum())
        return min(1.0, -math.expm1(math.log1p(-power) / n) + (1 - big)), bins, rare
    return min(1.0, math.sqrt(required_noncentrality(bins, alpha=alpha, power=power) / (4 * n)) + rare), bins, rare



def sample_size_for_alternative(law, target, *, alpha: float, power: float = POWER) -> float:
    """n at which the chi-square test of ``target`` has power ``power`` against the known ``law``.

    lambda_1 = sum (law - target)^2 / target per sample (F32); for a law with mass
    outside the target's support, the n that sees such an outcome with probability
    ``power``.  Returns ``math.inf`` when ``law`` equals ``target``.
    """
    law = as_law("law", law, ndim=1).numpy()
    target = as_law("target", target, ndim=1).numpy()
    if law.shape != target.shape:
        raise ValueError(f"law has {law.size} cells but target has {target.size}")
    alpha, power = _check_levels(alpha, power)
    outside = float(law[target <= 0].sum())
    if outside >= 1:
        return 1  # every sample falls outside the target's support
    if outside > 0:
        return max(1, math.ceil(math.log(1 - power) / math.log1p(-outside)))
    inside = target > 0
    lam1 = float(((law[inside] - target[inside]) ** 2 / target[inside]).sum())
    df = int(inside.sum()) - 1
    if lam1 <= 0 or df < 1:
        return math.inf
    return samples_for_noncentrality_rate(lam1, df, alpha=alpha, power=power)


def samples_for_noncentrality_rate(lam1: float, df: int, *, alpha: float, power: float = POWER) -> float:
    """The smallest integer n with ncx2.sf(chi2.isf(alpha, df), df, n * lam1) >= power (F32): the n of
    a known alternative whose noncentrality grows by ``lam1`` per sample; ``math.inf`` past 10**13."""
    critical = stats.chi2.isf(alpha, df)
    lo, hi = 1, 1
    while stats.ncx2.sf(critical, df, hi * lam1) < power:
        hi *= 2
        if hi > 10**13:
            return math.inf
    while lo < hi:
        mid = (lo + hi) // 2
        if stats.ncx2.sf(critical, df, mid * lam1) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo
