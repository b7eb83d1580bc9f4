"""One statistical check: its sample size before sampling, its test and its readable result.

* :func:`planned_sample_size` / :func:`detectable` / :func:`sample_size` - power planning on the bins
  the test will really use (the one place it is done: the engine, the budget and the reports use it).  Pearson's test runs on cells pooled from expected counts
  (docs/reference.md §7), so its power is that of the pooled bins; a deviation hidden inside the
  rare bin has TV at most the rare bin's mass r (TV_pooled >= TV - r).  The
  detectable TV stated is therefore sqrt(lambda(bins - 1) / 4n) + r (F32-F34).
* :func:`gof_check` - support check first, then Pearson on pooled bins, or the
  Monte-Carlo test (F31) when n leaves fewer than two pooled bins; a failure lists
  the most over- and under-represented outcomes.
* :func:`acceptance_check` - acceptance vs the proven optimum by exact binomial tests:
  above the optimum is impossible for a lossless scheme (FAIL); significantly below
  it is reported (a deliberately suboptimal scheme, or a bug in the acceptance rule).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from .._validation import as_float, as_law
from ..stats.gof import goodness_of_fit, monte_carlo_gof, pool_bins
from ..stats.power import POWER, pooled_detectable_tv

MC_RESAMPLES = 200_000  # Monte-Carlo test (F31) when n is too small for two pooled bins


@dataclass
class Check:
    """One test of one hypothesis, with everything needed to read its verdict."""

    name: str
    kind: str  # "first token", "acceptance", "chain", "sequence", "multi-draft token", "acceptance z"
    sees: str  # the fault classes this check can see (docs/reference.md numbers)
    method: str  # the test: "pearson", "monte-carlo pearson", "exact binomial", "z", "support"
    statistic: float  # the test statistic only
    pvalue: float
    n: int
    cells: int | None = None  # outcomes of positive probability
    df: int | None = None
    detectable_tv: float | None = None  # TV caught with power 0.99 at the planning alpha; None where not a GOF test
    passed: bool = True
    location: str | None = None  # F36: position, prefix and the conditional that deviates
    details: dict = field(default_factory=dict)

    def describe(self) -> str:
        """One paragraph: what failed or passed, with its numbers."""
        parts = [f"{self.name}: {self.method} statistic={self.statistic:.4g}"]
        if self.df is not None:
            parts.append(f"df={self.df}")
        parts.append(f"n={self.n:,}, p={self.pvalue:.3g}")
        if self.detectable_tv is not None:
            parts.append(f"detectable TV {self.detectable_tv:.4f} at power {POWER}")
        text = ", ".join(parts)
        if "acceptance" in self.details:
            text += f"; acceptance {self.details['acceptance']:.4f} vs optimum {self.details['optimum']:.4f}"
        if self.details.get("over") or self.details.get("under"):
            text += "; over-represented: " + _tokens(self.details.get("over", []))
            text += "; under-represented: " + _tokens(self.details.get("under", []))
        if self.location:
            text += f"; where: {self.location}"
        return text


def _tokens(rows) -> str:
    return ", ".join(f"{label} {o} vs {e:.1f}" for label, o, e in rows) or "none"


# ------------------------------------------------------------------ power on the pooled bins


def detectable(law: np.ndarray, n: int, alpha: float, power: float = POWER) -> tuple[float, int, float]:
    """(detectable TV, pooled bins, rare mass): :func:`specdec.stats.power.pooled_detectable_tv`."""
    return pooled_detectable_tv(law, n, alpha, power)


def planned_sample_size(law: np.ndarray, tv: float, alpha: float, *, power: float = POWER, max_n: int) -> int:
    """The smallest n whose pooled test detects every deviation of TV >= ``tv`` (capped at ``max_n``)."""
    law = np.asarray(law, dtype=np.float64)
    if int((law > 0).sum()) < 2:  # one outcome: the support check alone, power 1 - (1 - tv)^n
        return min(max_n, max(1, math.ceil(math.log(1 - power) / math.log1p(-tv))))
    if detectable(law, max_n, alpha, power)[0] > tv:
        return max_n
    lo, hi = 1, max_n
    while lo < hi:  # detectable TV decreases with n (more bins, less rare mass, larger n)
        mid = (lo + hi) // 2
        if detectable(law, mid, alpha, power)[0] <= tv:
            hi = mid
        else:
            lo = mid + 1
    return lo


# ------------------------------------------------------------------ the checks


def gof_check(name: str, kind: str, sees: str, counts: np.ndarray, law: np.ndarray, *, alpha: float, labels=None) -> Check:
    """Test ``counts`` (cells of ``law``, plus one last cell for invalid outcomes) against ``law``."""
    law = np.append(np.asarray(law, dtype=np.float64), 0.0)  # the invalid cell has probability 0
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    cells = int((law > 0).sum())
    if n == 0:
        return Check(name, kind, sees, "none (no samples)", 0.0, 1.0, 0, cells, None, 1.0)
    if int(pool_bins(n * law).max(initial=-1)) >= 1 or counts[law <= 0].any():
        result = goodness_of_fit(counts, law)
    else:  # too few samples for two pooled bins: the Monte-Carlo exact test (F31), resolution 1 / (B + 1)
        result = monte_carlo_gof(counts, law, num_resamples=MC_RESAMPLES, seed=zlib.crc32(name.encode()))
    tv, _, rare = detectable(law, n, alpha)
    method = result.method
    details: dict = {"rare_mass": rare}
    if result.support_violation:
        method = "support (outcomes of probability 0 observed)"
    if result.support_violation or result.pvalue <= alpha:
        details.update(_breakdown(counts, law, n, labels))
    return Check(name, kind, sees, method, result.statistic, result.pvalue, n, cells, result.df, tv, details=details)


def _breakdown(counts: np.ndarray, law: np.ndarray, n: int, labels, top: int = 3) -> dict:
    """The outcomes most over- and under-represented, by (observed - expected) / sqrt(expected)."""
    expected = n * law
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(expected > 0, (counts - expected) / np.sqrt(np.where(expected > 0, expected, 1)), np.inf * (counts > 0))
    name = (lambda i: "invalid" if i == len(law) - 1 else f"token {i}") if labels is None else labels
    over = [i for i in np.argsort(-score, kind="stable")[:top] if score[i] > 0]
    under = [i for i in np.argsort(score, kind="stable")[:top] if score[i] < 0]
    return {
        "over": [(name(int(i)), int(counts[i]), float(expected[i])) for i in over],
        "under": [(name(int(i)), int(counts[i]), float(expected[i])) for i in under],
    }


def acceptance_check(name: str, sees: str, hits: int, n: int, invalid: int, optimum: float, *, alpha: float, what: str) -> Check:
    """Acceptance ``hits / n`` vs the proven ``optimum`` (exact binomial tests, one-sided each way)."""
    if invalid:
        return Check(
            name, "acceptance", sees, "contract", math.inf, 0.0, n,
            details={"invalid": invalid, "reason": f"{invalid} rows reported {what} outside its range"},
        )
    optimum = min(max(optimum, 0.0), 1.0)
    if n == 0:
        return Check(name, "acceptance", sees, "exact binomial", 0.0, 1.0, 0)
    rate = hits / n
    if optimum >= 1.0:
        above = 1.0
    elif optimum <= 0.0:
        above = 0.0 if hits else 1.0
    else:
        above = float(sps.binomtest(hits, n, optimum, alternative="greater").pvalue)
    below = float(sps.binomtest(hits, n, optimum, alternative="less").pvalue) if 0 < optimum else 1.0
    z = (hits - n * optimum) / math.sqrt(n * optimum * (1 - optimum)) if 0 < optimum < 1 else 0.0
    return Check(
        name, "acceptance", sees, "exact binomial (above the optimum)", z, above, n, 2, None, None,
        details={"acceptance": rate, "optimum": optimum, "p_below": below, "suboptimal": below <= alpha},
    )


def sample_size(law, tv: float, alpha: float, *, max_n: int = 10**8) -> int:
    """n planned before sampling: every deviation of TV >= ``tv`` from ``law`` is caught with power 0.99.
    A ValueError when even ``max_n`` samples cannot."""
    law = as_law("law", law, ndim=1).numpy()
    tv = as_float("tv", tv, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    if detectable(law, max_n, alpha)[0] > tv:
        raise ValueError(f"no test of at most {max_n:,} samples detects TV {tv:g} from this law at alpha {alpha:.1e}")
    return planned_sample_size(law, tv, alpha, max_n=max_n)
