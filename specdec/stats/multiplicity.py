"""Family-wise error control across the checks of a report (docs/reference.md §7)."""

from __future__ import annotations

import math

from .._validation import as_float


def holm(pvalues, alpha: float) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise level ``alpha``.

    Sort p_(1) <= ... <= p_(m); reject H_(i) while p_(i) <= alpha / (m - i + 1); stop at
    the first that is not.  Controls the family-wise error under any dependence.
    """
    alpha = as_float("alpha", alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    values = [as_float(f"pvalues[{i}]", p) for i, p in enumerate(pvalues)]
    if any(math.isnan(p) or p < 0 or p > 1 for p in values):
        raise ValueError(f"pvalues must lie in [0, 1], got {values}")
    rejected = [False] * len(values)
    order = sorted(range(len(values)), key=values.__getitem__)
    for rank, index in enumerate(order):
        if values[index] > alpha / (len(values) - rank):
            break
        rejected[index] = True
    return rejected
