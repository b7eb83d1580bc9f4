"""Acceptance and speed metrics (SPEC §6).

Measured, from per-step accepted counts:

* pooled acceptance rate = accepted / verified draft tokens.  A verified token is
  one the target judged: every accepted draft plus the rejected one; drafts after
  a rejection are discarded and not counted.  With i.i.d. acceptance alpha this
  is the maximum-likelihood estimate of alpha.
* mean tokens per step = mean(accepted + 1), or the mean of emitted counts when
  EOS truncated some steps.

Predicted: F22 (i.i.d. alpha), F25 (position-dependent), F23 speedup, F24 gamma*.
"""

from __future__ import annotations

import math

import numpy as np


def _as_counts(name: str, values) -> np.ndarray:
    arr = np.asarray(values.cpu() if hasattr(values, "cpu") else values)
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0):
        raise ValueError(f"{name} must be non-negative integers, got dtype {arr.dtype}")
    return arr.astype(np.int64).ravel()


def _check_unit(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def _check_gamma(gamma) -> int:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, np.integer)) or gamma < 0:
        raise ValueError(f"gamma must be an integer >= 0, got {gamma!r}")
    return int(gamma)


def acceptance_rate(num_accepted, num_draft) -> float:
    """Pooled acceptance rate: sum(accepted) / sum(verified), verified = accepted + [accepted < K].

    num_accepted: accepted counts per step (any shape); num_draft: K, an int or one per step.
    Raises ValueError when no draft token was verified (every step had K = 0).
    """
    accepted = _as_counts("num_accepted", num_accepted)
    drafted = np.broadcast_to(_as_counts("num_draft", num_draft), accepted.shape)
    if np.any(accepted > drafted):
        raise ValueError("num_accepted exceeds num_draft in some step")
    verified = accepted + (accepted < drafted)
    if verified.sum() == 0:
        raise ValueError("acceptance rate is undefined: no draft token was verified (all steps had K = 0)")
    return float(accepted.sum() / verified.sum())


def mean_tokens_per_step(num_emitted) -> float:
    """Mean emitted tokens per verification step (accepted + 1 unless EOS cut the block)."""
    emitted = _as_counts("num_emitted", num_emitted)
    if emitted.size == 0:
        raise ValueError("num_emitted is empty")
    return float(emitted.mean())


def expected_tokens_iid(alpha: float, gamma: int) -> float:
    """(F22) E[T] = (1 - alpha^(gamma+1)) / (1 - alpha); gamma + 1 when alpha = 1."""
    alpha, gamma = _check_unit("alpha", alpha), _check_gamma(gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_tokens_positional(alphas) -> float:
    """(F25) E[T] = 1 + sum_i prod_{j<=i} alpha_j for independent position-dependent alpha_j."""
    a = np.asarray(alphas, dtype=np.float64).ravel()
    if a.size and (not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1):
        raise ValueError(f"alphas must lie in [0, 1], got {a.tolist()}")
    return float(1.0 + np.cumprod(a).sum())


def speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """(F23) S = E[T] / (1 + gamma c), c = T_draft / T_target (Leviathan Thm 3.8)."""
    if not (isinstance(cost_ratio, (int, float)) and math.isfinite(cost_ratio) and cost_ratio >= 0):
        raise ValueError(f"cost_ratio must be a finite number >= 0, got {cost_ratio!r}")
    return expected_tokens_iid(alpha, gamma) / (1 + _check_gamma(gamma) * cost_ratio)


def optimal_draft_length(alpha: float, cost_ratio: float, *, max_gamma: int = 64) -> tuple[int, float]:
    """(F24) gamma* = argmax_{gamma in 0..max_gamma} S(gamma) by scan (no closed form); returns (gamma*, S)."""
    max_gamma = _check_gamma(max_gamma)
    speeds = [speedup(alpha, g, cost_ratio) for g in range(max_gamma + 1)]
    best = int(np.argmax(speeds))  # first maximum: the shortest draft among ties
    return best, speeds[best]
