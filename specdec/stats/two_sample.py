"""Two samples, one question: do they come from the same law? (docs/reference.md §7, H1-H3.)

For decoders whose exact law specdec cannot compute (a quantised model, another engine's forward,
a server), the honest comparison is between two samplers: the subject and a reference (the same
engine without speculation).  The outcomes are observed sequences, not enumerated cells.

* :func:`pool_by_combined_counts` - bins from the *combined* counts only (never from which side a
  sample came from): a cell whose smaller side expects fewer than 5 joins one rare bin, which joins
  the smallest other bin if it still expects fewer than 5.  Under the null the side labels are
  exchangeable given the combined counts, so binning by them keeps the test's level.
* :func:`homogeneity_test` - (H1) Pearson's X^2 of homogeneity over the 2 x bins table, df = bins - 1.
* :func:`two_sample_detectable_tv` - (H2) the TV such a test of n_a and n_b samples detects with
  power 0.99: sqrt(lambda(bins - 1) / 4 n_eff) + r with n_eff = n_a n_b / (n_a + n_b) and r the rare
  bin's mass; for n_a = n_b = n that is twice the samples per side of a one-sample test (F32-F34).
* :func:`two_sample_prefix_decomposition` - (H3) G of homogeneity over whole sequences splits
  exactly into one term per prefix: where the two conditional laws differ.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Hashable, Mapping

import numpy as np
from scipy import stats

from .._validation import as_float, as_int
from .gof import MIN_EXPECTED, pool_bins
from .localize import Localization, PrefixTerm, chi2_sf, localization
from .power import POWER, required_noncentrality, samples_for_noncentrality_rate


def _as_count_map(name: str, counts) -> Counter:
    if not isinstance(counts, Mapping):
        raise TypeError(f"{name} must map outcomes to counts (e.g. a collections.Counter), got {type(counts).__name__}")
    out = Counter()
    for outcome, count in counts.items():
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"{name}[{outcome!r}] must be a non-negative integer count, got {count!r}")
        if count:
            out[outcome] += int(count)
    return out


def pool_by_combined_counts(combined: np.ndarray, n_a: int, n_b: int) -> np.ndarray:
    """Bin ids for cells with ``combined`` counts (H1's pooling; -1 for empty cells): F29's pooling
    (:func:`specdec.stats.gof.pool_bins`) of the smaller side's expected counts
    min(n_a, n_b) * combined / (n_a + n_b)."""
    combined = np.asarray(combined, dtype=np.float64)
    total = n_a + n_b
    if total == 0:
        return np.full(combined.shape, -1, dtype=np.int64)
    return pool_bins(min(n_a, n_b) * combined / total)


@dataclass(frozen=True)
class HomogeneityResult:
    """Outcome of one two-sample test (H1) and the power it had (H2)."""

    statistic: float
    pvalue: float
    df: int  # bins - 1
    n_a: int
    n_b: int
    cells: int  # distinct outcomes seen by either side
    bins: int
    rare_mass: float  # the combined share of outcomes pooled into the rare bin
    only_a: tuple[tuple[Hashable, int], ...]  # outcomes seen by side a only, most frequent first
    only_b: tuple[tuple[Hashable, int], ...]
    deviations: tuple[tuple[Hashable, int, float], ...]  # (outcome, count in a, expected in a) most deviating first

    def describe(self) -> str:
        return (f"pearson homogeneity statistic={self.statistic:.4g}, df={self.df}, n={self.n_a:,} vs {self.n_b:,}, "
                f"p-value={self.pvalue:.3g}")


def homogeneity_test(counts_a, counts_b) -> HomogeneityResult:
    """(H1) Pearson's test that ``counts_a`` and ``counts_b`` (outcome -> count maps) come from one law.

    Cells are pooled by their combined counts (:func:`pool_by_combined_counts`); with fewer than two
    bins there is nothing to test (p = 1, and H2 says what that leaves unseen).
    """
    a, b = _as_count_map("counts_a", counts_a), _as_count_map("counts_b", counts_b)
    outcomes = sorted(set(a) | set(b), key=lambda s: (-(a[s] + b[s]), repr(s)))
    n_a, n_b = sum(a.values()), sum(b.values())
    obs_a = np.array([a[s] for s in outcomes], dtype=np.float64)
    obs_b = np.array([b[s] for s in outcomes], dtype=np.float64)
    combined = obs_a + obs_b
    groups = pool_by_combined_counts(combined, n_a, n_b)
    bins = int(groups.max(initial=-1)) + 1
    rare_ids = np.flatnonzero((groups >= 0) & (min(n_a, n_b) * combined / max(n_a + n_b, 1) < MIN_EXPECTED))
    rare_mass = float(combined[rare_ids].sum() / max(n_a + n_b, 1))
    only_a = tuple((s, a[s]) for s in outcomes if a[s] and not b[s])
    only_b = tuple((s, b[s]) for s in outcomes if b[s] and not a[s])
    expected_a = combined * (n_a / max(n_a + n_b, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(expected_a > 0, np.abs(obs_a - expected_a) / np.sqrt(np.maximum(expected_a, 1e-300)), 0.0)
    order = np.argsort(-score, kind="stable")[:5]
    deviations = tuple((outcomes[i], int(obs_a[i]), float(expected_a[i])) for i in order)
    if bins < 2 or n_a == 0 or n_b == 0:
        return HomogeneityResult(0.0, 1.0, 0, n_a, n_b, len(outcomes), max(bins, 0), rare_mass, only_a, only_b, deviations)
    table = np.stack([np.bincount(groups[groups >= 0], weights=obs_a[groups >= 0], minlength=bins),
                      np.bincount(groups[groups >= 0], weights=obs_b[groups >= 0], minlength=bins)])
    statistic, pvalue, df, _ = stats.chi2_contingency(table, correction=False)
    return HomogeneityResult(float(statistic), float(pvalue), int(df), n_a, n_b, len(outcomes), bins, rare_mass,
                             only_a, only_b, deviations)


def two_sample_detectable_tv(combined_law, n_a: int, n_b: int, *, alpha: float, power: float = POWER) -> tuple[float, int, float]:
    """(H2) (detectable TV, bins, rare mass) of the homogeneity test of ``n_a`` and ``n_b`` samples
    when the pooled law is ``combined_law``: sqrt(lambda(bins - 1) / 4 n_eff) + r, n_eff = n_a n_b / (n_a + n_b).

    Under alternatives pi_a, pi_b the statistic is approximately noncentral chi-square with
    lambda = n_eff sum (pi_a - pi_b)^2 / pi_bar, and at TV(pi_a, pi_b) = eps Cauchy-Schwarz gives
    sum (pi_a - pi_b)^2 / pi_bar >= 4 eps^2 (as F33).  A deviation inside the rare bin has TV at most
    its mass r.  With fewer than two bins nothing is excluded (TV 1)."""
    law = np.asarray(combined_law, dtype=np.float64)
    n_a, n_b = as_int("n_a", n_a, minimum=0), as_int("n_b", n_b, minimum=0)
    alpha = as_float("alpha", alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    if n_a == 0 or n_b == 0 or law.size == 0:
        return 1.0, 0, 0.0
    law = law / law.sum()
    groups = pool_by_combined_counts(law * (n_a + n_b), n_a, n_b)
    bins = int(groups.max(initial=-1)) + 1
    smaller = min(n_a, n_b) * law
    rare = float(law[(law > 0) & (smaller < MIN_EXPECTED)].sum())
    if bins < 2:
        return 1.0, bins, rare
    n_eff = n_a * n_b / (n_a + n_b)
    return min(1.0, math.sqrt(required_noncentrality(bins, alpha=alpha, power=power) / (4 * n_eff)) + rare), bins, rare


def two_sample_sample_size(combined_law, tv: float, *, alpha: float, max_n: int, power: float = POWER) -> int:
    """The smallest n per side (n_a = n_b = n, at most ``max_n``) whose H2 detectable TV is <= ``tv``."""
    tv = as_float("tv", tv, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    max_n = as_int("max_n", max_n, minimum=1)
    if two_sample_detectable_tv(combined_law, max_n, max_n, alpha=alpha, power=power)[0] > tv:
        return max_n
    lo, hi = 1, max_n
    while lo < hi:
        mid = (lo + hi) // 2
        if two_sample_detectable_tv(combined_law, mid, mid, alpha=alpha, power=power)[0] <= tv:
            hi = mid
        else:
            lo = mid + 1
    return lo


def two_sample_prefix_decomposition(counts_a, counts_b, *, terminal=frozenset()) -> Localization:
    """(H3) Per-prefix terms of the homogeneity G over whole sequences (outcome -> count maps of
    token tuples).

    G = 2 sum_side sum_s O_side,s ln(O_side,s N / (n_side O_s)) splits exactly into terms
    G_u = 2 sum_side sum_x O_side,ux ln(O_side,ux O_u / (O_side,u O_ux)), one per prefix u seen by both
    sides, each approximately chi-square with (children of u seen) - 1 degrees of freedom under the
    null; the most significant term is where the two conditional laws differ.  A prefix seen by one
    side only has no term: its difference shows in its parent's term.  ``terminal``: tokens after
    which a sequence stops (EOS, E8).  Deviations list (token, count in a, expected in a).
    """
    children = {side: defaultdict(Counter) for side in "ab"}
    for side, counts in (("a", _as_count_map("counts_a", counts_a)), ("b", _as_count_map("counts_b", counts_b))):
        for sample, count in counts.items():
            sample = tuple(sample)
            for t in range(len(sample)):
                if t and sample[t - 1] in terminal:
                    break
                children[side][sample[:t]][sample[t]] += count
    terms = []
    for prefix in sorted(set(children["a"]) & set(children["b"])):
        obs_a, obs_b = children["a"][prefix], children["b"][prefix]
        n_a, n_b = sum(obs_a.values()), sum(obs_b.values())
        total = n_a + n_b
        tokens = sorted(set(obs_a) | set(obs_b))
        g = 0.0
        deviations = []
        for token in tokens:
            both = obs_a[token] + obs_b[token]
            for observed, n_side in ((obs_a[token], n_a), (obs_b[token], n_b)):
                if observed:
                    g += 2 * observed * math.log(observed * total / (n_side * both))
            expected = n_a * both / total
            deviations.append((abs(obs_a[token] - expected) / math.sqrt(expected), token, obs_a[token], expected))
        deviations.sort(key=lambda d: (-d[0], d[1]))
        df = len(tokens) - 1
        terms.append(PrefixTerm(prefix, g, df, total, chi2_sf(g, df), tuple((t, o, e) for _, t, o, e in deviations)))
    return localization(terms)


def two_sample_size_for_alternative(law_a, law_b, *, alpha: float, power: float = POWER) -> float:
    """n per side at which H1 has power ``power`` between the known laws ``law_a`` and ``law_b`` (cells
    aligned): lambda = n sum (a - b)^2 / (a + b) per side size n (H2's lambda with n_eff = n / 2 and
    pi_bar = (a + b) / 2), df = cells of either law - 1.  ``math.inf`` when the laws are equal."""
    a, b = np.asarray(law_a, dtype=np.float64), np.asarray(law_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"law_a and law_b must be vectors of one shape, got {a.shape} and {b.shape}")
    alpha = as_float("alpha", alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    both = (a + b) > 0
    lam1 = float(((a[both] - b[both]) ** 2 / (a[both] + b[both])).sum())
    df = int(both.sum()) - 1
    if lam1 <= 0 or df < 1:
        return math.inf
    return samples_for_noncentrality_rate(lam1, df, alpha=alpha, power=power)
