"""Predicted tokens per step and speedup (SPEC §6, F22-F25; docs/reference.md).

K (``num_draft_tokens``) is the number of drafted tokens per step; alpha an
acceptance probability; c (``cost_ratio``) = T_draft / T_target.  The measured
counterparts (the pooled acceptance rate, mean tokens per step) are in
:mod:`specdec.metrics`; F26-F27 (exact, from conditional tables) in
:mod:`specdec.laws.chain`.
"""

from __future__ import annotations

import numpy as np

from .._checks import as_float, as_int, as_probability


def expected_tokens_iid(alpha, num_draft_tokens) -> float:
    """(F22) E[T] = (1 - alpha^(K+1)) / (1 - alpha); K + 1 when alpha = 1."""
    alpha = as_probability("alpha", alpha)
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    if alpha == 1.0:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def expected_tokens_positional(alphas) -> float:
    """(F25) E[T] = 1 + sum_i prod_{j<=i} alpha_j for independent position-dependent alpha_j."""
    arr = np.asarray(alphas)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(f"alphas must be real numbers in [0, 1], got dtype {arr.dtype}")
    a = arr.astype(np.float64).ravel()
    if a.size and (not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1):
        raise ValueError(f"alphas must lie in [0, 1], got {a.tolist()}")
    return float(1.0 + np.cumprod(a).sum())


def speedup(alpha, num_draft_tokens, cost_ratio) -> float:
    """(F23) S = E[T] / (1 + K c), c = T_draft / T_target (Leviathan et al., Thm 3.8)."""
    c = as_float("cost_ratio", cost_ratio, minimum=0.0)
    return expected_tokens_iid(alpha, num_draft_tokens) / (1 + as_int("num_draft_tokens", num_draft_tokens, minimum=0) * c)


def optimal_draft_length(alpha, cost_ratio, *, max_draft_tokens: int = 64) -> tuple[int, float]:
    """(F24) K* = argmax over K in 0..max_draft_tokens of S(K), by scan (no closed form); returns (K*, S)."""
    top = as_int("max_draft_tokens", max_draft_tokens, minimum=0)
    speeds = [speedup(alpha, k, cost_ratio) for k in range(top + 1)]
    best = int(np.argmax(speeds))  # the first maximum: the shortest draft among ties
    return best, speeds[best]
