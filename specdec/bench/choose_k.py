"""Choosing K with its noise (issue 33): a best K is named only when its gain clears the spread of repeated runs.

Each row of a K sweep holds its per-round speedups (``ratios``: autoregressive over speculative seconds of one
round, both sides measured side by side).  For the K with the highest median, :func:`decide_k` asks two questions
with the ratio gate's percentile bootstrap (:func:`specdec.bench.gate.ratio_interval`, rounds resampled within each
row, 95% two-sided):

* does it beat K = 0?  the interval of its median speedup over 1 (a one-row "baseline" of ratio 1) lies above 1;
* does it beat the next-best K?  the interval of median(best) / median(next) lies above 1.

It "wins" only when both hold; otherwise the answer is "no K wins", with the margins shown: which question failed,
the medians and the intervals.  Rows of different K are different benchmarks (their rounds are not paired), hence
a bootstrap of each row's own rounds rather than a paired test.  With 3 rounds a median takes at most 3 values and
the interval is coarse: more rounds sharpen it, which is the point of stating it.
"""

from __future__ import annotations

import numpy as np

from .gate import ratio_interval

__all__ = ["decide_k", "format_decision"]


def decide_k(speedups: dict[int, list[float]], *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> dict:
    """``speedups``: K -> per-round speedups (at least two K).  {"best_k", "wins", "over_autoregressive": (low, high),
    "over_next": (low, high) or None, "next_k", "medians", "why"}; ``wins`` False means "no K wins"."""
    if len(speedups) < 1:
        raise ValueError("decide_k needs at least one K with its per-round speedups")
    medians = {k: float(np.median(v)) for k, v in speedups.items()}
    order = sorted(medians, key=lambda k: -medians[k])
    best = order[0]
    over_ar = ratio_interval([1.0], speedups[best], confidence=confidence, resamples=resamples, seed=seed)
    over_next = None if len(order) < 2 else ratio_interval(speedups[order[1]], speedups[best], confidence=confidence,
                                                           resamples=resamples, seed=seed)
    reasons = []
    if over_ar[0] <= 1.0:
        reasons.append(f"K{best} over K = 0: interval [{over_ar[0]:.3f}, {over_ar[1]:.3f}] reaches 1")
    if over_next is not None and over_next[0] <= 1.0:
        reasons.append(f"K{best} over K{order[1]}: interval [{over_next[0]:.3f}, {over_next[1]:.3f}] reaches 1")
    return {"best_k": best, "wins": not reasons, "over_autoregressive": over_ar, "over_next": over_next,
            "next_k": order[1] if len(order) > 1 else None, "medians": medians, "why": "; ".join(reasons)}


def format_decision(decision: dict) -> str:
    """"K4 (wins: x1.31 [1.22-1.40] over K = 0, x1.08 [1.02-1.15] over K2)" or "no K wins (...)"."""
    best, ar, nxt = decision["best_k"], decision["over_autoregressive"], decision["over_next"]
    margins = f"K{best} x{decision['medians'][best]:.2f} [{ar[0]:.2f}-{ar[1]:.2f}] over K = 0"
    if nxt is not None:
        margins += f", x{nxt[0]:.2f}-{nxt[1]:.2f} over K{decision['next_k']}"
    return f"K{best} wins ({margins})" if decision["wins"] else f"no K wins ({margins})"
