"""A distribution-free confidence interval for a median, from order statistics (docs/reference.md §6, "costs
with their spread").

For n independent draws of a continuous quantity, the number below its median is Binomial(n, 1/2), so the order
statistics x_(j) <= x_(n+1-j) cover the median with probability 1 - 2 P(Bin(n, 1/2) < j), whatever the law.
:func:`median_interval` takes the narrowest such pair whose coverage reaches the one asked (or the widest, the
minimum and the maximum, when n is too small to reach it) and says the coverage it has.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_probability

__all__ = ["median_interval"]


def median_interval(values, coverage: float = 0.9) -> dict:
    """{"median", "low", "high", "coverage", "n"} of the finite ``values`` (at least one): [low, high] the order-statistic
    interval covering the median with at least ``coverage`` (the stated ``coverage`` is the exact one it has)."""
    coverage = as_probability("coverage", coverage)
    arr = np.sort(np.asarray([float(v) for v in values], dtype=np.float64))
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"values must be at least one finite number, got {list(values)[:8]!r}")
    n = int(arr.size)
    covered = [(j, 1.0 - 2.0 * sum(math.comb(n, i) for i in range(j)) / 2.0 ** n) for j in range(1, (n + 1) // 2 + 1)]
    reaching = [(j, c) for j, c in covered if c >= coverage]
    j, had = reaching[-1] if reaching else covered[0]
    return {"median": float(np.median(arr)), "low": float(arr[j - 1]), "high": float(arr[n - j]), "coverage": float(max(had, 0.0)),
            "n": n}
