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


def _verify_costs(verify_cost_ratios, top: int) -> list[float]:
    """v(K) for K = 0..top: T_verify(K + 1) / T_target(1); None means 1 for every K (F23's simple form)."""
    if verify_cost_ratios is None:
        return [1.0] * (top + 1)
    if isinstance(verify_cost_ratios, dict):
        missing = [k for k in range(top + 1) if k not in verify_cost_ratios]
        if missing:
            raise ValueError(f"verify_cost_ratios has no entry for K = {missing[:8]} (needs K = 0..{top})")
        values = [verify_cost_ratios[k] for k in range(top + 1)]
    else:
        values = list(verify_cost_ratios)
        if len(values) < top + 1:
            raise ValueError(f"verify_cost_ratios needs {top + 1} values (K = 0..{top}), got {len(values)}")
    return [as_float(f"verify_cost_ratios[{k}]", v, minimum=0.0, low_open=True) for k, v in enumerate(values[: top + 1])]


def speedup_with_costs(alpha, num_draft_tokens, draft_step_ratio, verify_cost_ratio) -> float:
    """(F23, general form) S = E[T] / (K·rho + v), with rho = T_draft / T_target per drafted token and
    v = T_verify(K + 1) / T_target(1), the measured cost of one target pass over K + 1 tokens."""
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    rho = as_float("draft_step_ratio", draft_step_ratio, minimum=0.0)
    v = as_float("verify_cost_ratio", verify_cost_ratio, minimum=0.0, low_open=True)
    return expected_tokens_iid(alpha, k) / (k * rho + v)


def predicted_speedup(alpha, steps_draft_tokens, draft_step_ratio, verify_cost_ratios=None) -> float:
    """(F23 over a run) sum_s E[T](alpha, K_s) / sum_s (K_s·rho + v(K_s)) for steps that drafted K_s tokens.

    Time is counted in target steps; with one K for every step it is :func:`speedup_with_costs`.
    ``verify_cost_ratios``: v(K) for K = 0..max K_s (a sequence or a dict), None for F23's 1 + K·c.
    """
    ks = _draft_lengths("steps_draft_tokens", steps_draft_tokens)
    rho = as_float("draft_step_ratio", draft_step_ratio, minimum=0.0)
    costs = _verify_costs(verify_cost_ratios, max(ks))
    tokens = sum(expected_tokens_iid(alpha, k) for k in ks)
    return tokens / sum(k * rho + costs[k] for k in ks)


def _draft_lengths(name: str, values) -> list[int]:
    """A non-empty list of draft lengths K >= 0."""
    arr = np.asarray(values)
    if arr.size == 0 or arr.dtype == object or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a non-empty sequence of integers >= 0, got {values!r:.80}")
    if arr.min() < 0:
        raise ValueError(f"{name} must be >= 0, got {int(arr.min())}")
    return [int(k) for k in arr.ravel()]


def optimal_draft_length(alpha, cost_ratio, *, max_draft_tokens: int = 64, verify_cost_ratios=None) -> tuple[int, float]:
    """(F24) K* = argmax over K in 0..max_draft_tokens of S(K), by scan (no closed form); returns (K*, S).

    S(K) is F23 with c = ``cost_ratio`` (T_draft / T_target); ``verify_cost_ratios`` (v(K) for
    K = 0..max_draft_tokens, measured) replaces F23's 1 by the cost of verifying K + 1 tokens.
    """
    top = as_int("max_draft_tokens", max_draft_tokens, minimum=0)
    cost_ratio = as_float("cost_ratio", cost_ratio, minimum=0.0)
    costs = _verify_costs(verify_cost_ratios, top)
    speeds = [speedup_with_costs(alpha, k, cost_ratio, costs[k]) for k in range(top + 1)]
    best = int(np.argmax(speeds))  # the first maximum: the shortest draft among ties
    return best, speeds[best]
