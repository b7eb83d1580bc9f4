"""Where a sequence-level deviation sits: the per-prefix G decomposition (docs/reference.md §7, F36).

For outcomes that are token sequences, the G statistic over whole sequences splits
exactly into one term per prefix u (|u| < L):

    G = sum_u G_u,   G_u = 2 sum_x O_ux ln(O_ux / (O_u p(x | u)))

where O_u counts samples that start with u and p(x | u) is the exact conditional
law.  Each G_u is asymptotically chi-square with (support of p(. | u)) - 1 degrees
of freedom under the null, so the prefix (context) whose term is most significant
is where the decoder departs from the target; summing the terms of one length
gives the position.  A token of zero conditional probability after u makes G_u
infinite (p = 0).  Everything is computed from sequence counts.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from scipy import stats


@dataclass(frozen=True)
class PrefixTerm:
    prefix: tuple[int, ...]
    g: float
    df: int
    n: int  # samples that start with the prefix
    pvalue: float
    deviations: tuple[tuple[int, int, float], ...]  # (token, observed, expected) most deviating first


@dataclass(frozen=True)
class Localization:
    terms: tuple[PrefixTerm, ...]  # one per observed prefix
    by_position: tuple[tuple[int, float, int, float], ...]  # (position t, G summed over |u| = t, df, p-value)

    @property
    def total_g(self) -> float:
        return sum(t.g for t in self.terms)

    def worst_prefix(self) -> PrefixTerm | None:
        return min(self.terms, key=lambda t: (t.pvalue, -t.g / max(t.df, 1), len(t.prefix), t.prefix), default=None)

    def worst_position(self) -> tuple[int, float, int, float] | None:
        return min(self.by_position, key=lambda r: (r[3], -r[1] / max(r[2], 1)), default=None)

    def describe(self) -> str:
        prefix, position = self.worst_prefix(), self.worst_position()
        if prefix is None or position is None:
            return "no observed prefix"
        shown = ", ".join(f"token {x}: {o} observed vs {e:.1f} expected" for x, o, e in prefix.deviations[:3])
        return (
            f"position {position[0]} (G={position[1]:.4g}, df={position[2]}, p={position[3]:.3g}); "
            f"prefix {list(prefix.prefix)} (G={prefix.g:.4g}, df={prefix.df}, n={prefix.n}, p={prefix.pvalue:.3g}): {shown}"
        )


def chi2_sf(g: float, df: int) -> float:
    if math.isinf(g):
        return 0.0
    return float(stats.chi2.sf(g, df)) if df else 1.0


def prefix_decomposition(
    counts: Mapping[tuple[int, ...], int],
    conditional: Callable[[tuple[int, ...]], Sequence[float]],
    *,
    terminal=frozenset(),
) -> Localization:
    """F36 for observed sequence ``counts`` given ``conditional(prefix) -> p(. | prefix)``.

    ``terminal`` holds tokens after which a sequence stops (EOS, E8): no term for
    prefixes ending in one.  ``conditional`` is called once per observed prefix.
    """
    children: dict[tuple, Counter] = defaultdict(Counter)
    for sample, count in counts.items():
        sample = tuple(sample)
        for t in range(len(sample)):
            if t and sample[t - 1] in terminal:
                break
            children[sample[:t]][sample[t]] += int(count)
    terms = []
    for prefix, observed in children.items():
        n = sum(observed.values())
        law = list(conditional(prefix))
        support = sum(1 for p in law if p > 0)
        g = 0.0
        for token, count in observed.items():
            p = float(law[token]) if 0 <= token < len(law) else 0.0
            if count and p <= 0:
                g = math.inf
                break
            if count:
                g += 2 * count * math.log(count / (n * p))
        cells = set(observed) | {x for x, p in enumerate(law) if p > 0}
        deviations = []
        for token in cells:
            p = float(law[token]) if 0 <= token < len(law) else 0.0
            expected = n * p
            gap = observed.get(token, 0) - expected
            score = math.inf if expected == 0 else abs(gap) / math.sqrt(expected)
            deviations.append((score, token, observed.get(token, 0), expected))
        deviations.sort(key=lambda d: (-d[0], d[1]))
        df = max(support - 1, 0)
        terms.append(PrefixTerm(prefix, g, df, n, chi2_sf(g, df), tuple((t, o, e) for _, t, o, e in deviations)))
    return localization(terms)


def localization(terms) -> Localization:
    """The :class:`Localization` of per-prefix terms: sorted by prefix, and summed per position
    (the terms of one length are independent under the null, so their G and df add)."""
    by_position = []
    for t in sorted({len(term.prefix) for term in terms}):
        at = [term for term in terms if len(term.prefix) == t]
        g, df = sum(term.g for term in at), sum(term.df for term in at)
        by_position.append((t, g, df, chi2_sf(g, df)))
    return Localization(tuple(sorted(terms, key=lambda term: term.prefix)), tuple(by_position))
