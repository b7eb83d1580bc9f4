"""The per-token test: where each emitted token ranks in the reference's law of it (docs/reference.md §10, P1-P3).

Every emitted token x_t has a known law given its prefix, p_t (a law oracle's).  Its cell is its rank
in p_t - 1 for the most likely token (ties by the lower id), ..., :data:`RANKS`, then "ranked beyond"
and, for an oracle that lists only its top tokens, "outside the listed tokens".  Under the null each
token falls in cell r with probability p_t(r), whatever came before it, so the counts O_r have
expectations E_r = sum_t p_t(r) computed from the laws (P1):

* :func:`rank_test` - Pearson's X^2 of O against E on bins pooled from E only (F29's rule).  The
  tokens are independent categorical draws with *different* laws given their prefixes, whose
  covariance diag(E) - sum_t p_t p_t^T is at most the multinomial's diag(E) - E E^T / n: the statistic
  is stochastically smaller than chi^2 with bins - 1 df (the level holds, conservatively), and its
  noncentrality under an alternative is the planned one (F32-F34 on the pooled law E / n).
* a **floor** tau (P2): a correct engine's sampled law may differ from the law it reports by rounding (another
  batch shape, float16, quantised weights): by a TV of tau per token on average.  The true expectations then
  lie in the L1 ball of radius 2 n tau around E (the sum over tokens of per-token TVs bounds the pooled
  one), and the statistic is the *smallest* X^2 over that ball (:func:`floor_statistic`, exact: the ball's
  mass moves toward the observed counts, water-filled): at most X^2 at the true expectations, so the level
  holds for every law within the floor; deviations are detected above it (detectable TV + tau).
* a token of probability 0 in its law (a full row, or a listed token with no mass) is a support
  violation: p = 0 at once, and the caller names its prefix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .gof import pool_bins
from .power import POWER, pooled_detectable_tv

RANKS = 32  # cells 0..RANKS-1: ranks 1..RANKS; then "ranked beyond", "outside the listed tokens"
BEYOND, OUTSIDE = RANKS, RANKS + 1
CELLS = RANKS + 2

__all__ = ["BEYOND", "CELLS", "OUTSIDE", "PREVIOUS_GROUPS", "RANKS", "RankResult", "cell_name", "floor_statistic", "previous_group",
           "previous_group_name", "rank_test"]


PREVIOUS_GROUPS = ((0, 1), (1, 2), (2, 4), (4, 8), (8, CELLS))  # P7: the previous token's rank 1, 2, 3-4, 5-8, 9 or worse


def previous_group(cells: np.ndarray) -> np.ndarray:
    """The P7 row of each previous token's cell: the index of its group in :data:`PREVIOUS_GROUPS`."""
    starts = np.asarray([start for start, _ in PREVIOUS_GROUPS])
    return np.searchsorted(starts, np.asarray(cells), side="right") - 1


def previous_group_name(group: int) -> str:
    start, stop = PREVIOUS_GROUPS[group]
    return f"after a token of rank {start + 1}" if stop - start == 1 else \
        f"after a token of rank {start + 1}-{stop}" if stop < RANKS else f"after a token of rank {start + 1} or beyond"


def cell_name(cell: int) -> str:
    return f"rank {cell + 1}" if cell < RANKS else ("ranked beyond 32" if cell == BEYOND else "outside the listed tokens")


@dataclass(frozen=True)
class RankResult:
    """One per-token test: the statistic, df, p-value, n (tokens), pooled bins, and the TV it detects."""

    statistic: float
    pvalue: float
    df: int
    n: int
    bins: int
    rare_mass: float
    detectable_tv: float  # with power 0.99 at the planning alpha, floor included
    floor: float
    support_violation: int
    deviations: list = field(default_factory=list)  # (cell, observed, expected), most significant first


def rank_test(observed, expected, *, alpha: float, floor: float = 0.0, support_violation: int = 0,
              power: float = POWER) -> RankResult:
    """(P1-P2) Pearson over rank cells pooled from ``expected`` (E_r = sum_t p_t(r)); deviations within the
    per-token TV ``floor`` pass.  ``support_violation``: tokens of probability 0 seen - any is p = 0 when the
    floor is 0 (an exact claim); within a floor > 0 a law may give such tokens up to the floor, so they count in one
    more bin, of expectation 0, which the allowance may fill (P2)."""
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if observed.shape != expected.shape or not np.all(np.isfinite(expected)) or (expected < 0).any():
        raise ValueError("observed and expected must be count vectors of one shape, expected finite and >= 0")
    n = int(round(observed.sum()))
    if n == 0:
        return RankResult(0.0, 1.0, 0, 0, 0, 0.0, 1.0, floor, support_violation)
    law = expected / expected.sum() if expected.sum() > 0 else expected
    tv, bins, rare = pooled_detectable_tv(law, n, alpha, power)
    deviations = _deviations(observed, expected)
    impossible = float(observed[expected <= 0].sum())
    if floor == 0 and (support_violation or impossible):
        return RankResult(math.inf, 0.0, max(bins - 1, 0), n, bins, rare, min(1.0, tv + floor), floor,
                          support_violation + int(impossible), deviations)
    groups = pool_bins(expected)
    o = np.bincount(groups[groups >= 0], weights=observed[groups >= 0], minlength=bins)
    e = np.bincount(groups[groups >= 0], weights=expected[groups >= 0], minlength=bins)
    if impossible:  # within a floor, a law may give tokens of probability 0 up to the floor: one more bin, expected 0
        o, e = np.append(o, impossible), np.append(e, 0.0)
    statistic = floor_statistic(o, e, floor * float(e.sum()))
    df = len(o) - 1
    pvalue = float(stats.chi2.sf(statistic, df)) if df >= 1 else 1.0
    return RankResult(statistic, pvalue, df, n, bins, rare, min(1.0, tv + floor), floor, 0, deviations)


def floor_statistic(observed: np.ndarray, expected: np.ndarray, allowance: float) -> float:
    """(P2) min of Pearson's sum (o - e)^2 / e over e with sum e = sum E and sum |e - E| <= 2 ``allowance``.

    Each term is convex in e and falls as e moves toward o, so the minimum moves m = min(allowance, sum (o - E)+)
    of mass from the bins observed below expectation to those observed above, each side water-filled: a bin's
    e moves while its marginal gain exceeds a common level, found by bisection."""
    o, e = np.asarray(observed, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    live = (e > 0) | (o > 0)
    o, e = o[live], e[live]
    moved = min(allowance, float(np.maximum(o - e, 0.0).sum()))
    if moved <= 0 and ((e == 0) & (o > 0)).any():
        return math.inf  # observed where nothing is expected, and no allowance to expect it
    if moved > 0:
        up, down = o > e, o < e
        e = e.copy()
        e[up] += _fill(o[up], e[up], moved, rising=True)
        e[down] -= _fill(o[down], e[down], moved, rising=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(e > 0, (o - e) ** 2 / np.where(e > 0, e, 1.0), 0.0)
    return float(terms.sum())


def _fill(o: np.ndarray, e: np.ndarray, mass: float, *, rising: bool) -> np.ndarray:
    """Amounts (summing to ``mass``, each at most |o - e|) that minimise sum (o - e')^2 / e' with e' = e +- amount:
    e' = o / sqrt(1 - level) (rising) or o / sqrt(1 + level) (falling), clipped, the level by bisection."""
    gap = np.abs(o - e)
    if mass >= gap.sum():
        return gap

    def amounts(level: float) -> np.ndarray:
        target = o / np.sqrt(1.0 - level) if rising else o / np.sqrt(1.0 + level)
        return np.clip(np.abs(target - e), 0.0, gap) * ((target > e) if rising else (target < e))

    low, high = (-1e12, 0.0) if rising else (-1.0 + 1e-15, 0.0)  # amounts grow with the level (minus the marginal gain)
    for _ in range(200):
        middle = 0.5 * (low + high)
        if amounts(middle).sum() > mass:
            high = middle
        else:
            low = middle
    found = amounts(low)
    return np.minimum(found * (mass / found.sum()), gap) if found.sum() > 0 else found


def _deviations(observed: np.ndarray, expected: np.ndarray, top: int = 6) -> list:
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(expected > 0, (observed - expected) / np.sqrt(np.where(expected > 0, expected, 1.0)),
                         np.where(observed > 0, np.inf, 0.0))
    order = np.argsort(-np.abs(score), kind="stable")[:top]
    return [(int(c), float(observed[c]), float(expected[c])) for c in order if observed[c] or expected[c]]
