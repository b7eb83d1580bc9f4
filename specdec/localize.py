"""Where a sequence-level deviation sits: the per-prefix G decomposition (SPEC F36).

For outcomes that are token sequences, the G statistic over whole sequences
splits exactly into one term per prefix u (|u| < L):

    G = sum_u G_u,   G_u = 2 sum_x O_ux ln(O_ux / (O_u p(x | u)))

where O_u counts samples starting with u and p(x | u) is the exact conditional
law.  Each G_u is asymptotically chi-square with (support of p(. | u)) - 1 degrees
of freedom under the null, so the prefix (context) or position whose term is
most significant is where the decoder departs from the target.  A sample with a
token of zero conditional probability after u makes G_u infinite (p-value 0).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from scipy import stats

MIN_SAMPLES = 1  # every observed prefix gets its term, so the terms sum to the whole-sequence G


@dataclass(frozen=True)
class PrefixTerm:
    prefix: tuple[int, ...]
    g: float
    df: int
    n: int  # samples that start with the prefix
    pvalue: float


@dataclass(frozen=True)
class Localization:
    terms: tuple[PrefixTerm, ...]  # one per observed prefix with at least MIN_SAMPLES samples
    by_position: tuple[tuple[int, float, int, float], ...]  # (position t, G summed over |u| = t, df, p-value)

    @property
    def total_g(self) -> float:
        return sum(t.g for t in self.terms)

    def worst_prefix(self) -> PrefixTerm | None:
        return min(self.terms, key=lambda t: (t.pvalue, -t.g), default=None)

    def worst_position(self) -> tuple[int, float, int, float] | None:
        return min(self.by_position, key=lambda r: (r[3], -r[1]), default=None)

    def describe(self) -> str:
        prefix, position = self.worst_prefix(), self.worst_position()
        if prefix is None:
            return "no prefix with enough samples"
        return (
            f"most significant position {position[0]} (G={position[1]:.4g}, df={position[2]}, p={position[3]:.3g}); "
            f"prefix {list(prefix.prefix)} (G={prefix.g:.4g}, df={prefix.df}, n={prefix.n}, p={prefix.pvalue:.3g})"
        )




def prefix_decomposition(samples, conditional, *, terminal=frozenset()) -> Localization:
    """F36 for ``samples`` (token tuples) given ``conditional(prefix) -> sequence of p(x | prefix)``.

    ``terminal`` holds tokens after which a sequence stops (EOS, E8): no term for
    prefixes ending in one.  Conditionals are requested once per observed prefix.
    """
    children: dict[tuple, Counter] = defaultdict(Counter)
    for sample in samples:
        sample = tuple(sample)
        for t in range(len(sample)):
            if t and sample[t - 1] in terminal:
                break
            children[sample[:t]][sample[t]] += 1
    terms = []
    for prefix, counts in children.items():
        n = sum(counts.values())
        if n < MIN_SAMPLES:
            continue
        law = conditional(prefix)
        support = sum(1 for p in law if p > 0)
        g = 0.0
        for token, observed in counts.items():
            p = float(law[token]) if 0 <= token < len(law) else 0.0
            if p <= 0:
                g = math.inf
                break
            g += 2 * observed * math.log(observed / (n * p))
        df = max(support - 1, 0)
        pvalue = 0.0 if math.isinf(g) else (float(stats.chi2.sf(g, df)) if df else 1.0)
        terms.append(PrefixTerm(prefix, g, df, n, pvalue))
    by_position = []
    for t in sorted({len(term.prefix) for term in terms}):
        at = [term for term in terms if len(term.prefix) == t]
        g, df = sum(term.g for term in at), sum(term.df for term in at)
        pvalue = 0.0 if math.isinf(g) else (float(stats.chi2.sf(g, df)) if df else 1.0)
        by_position.append((t, g, df, pvalue))
    return Localization(tuple(sorted(terms, key=lambda term: term.prefix)), tuple(by_position))
