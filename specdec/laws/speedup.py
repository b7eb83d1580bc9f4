"""Predicted tokens per step and speedup (docs/reference.md §6, F22-F25 and F23 end to end).

K (``num_draft_tokens``) is the number of drafted tokens per step; alpha an
acceptance probability; c (``cost_ratio``) = T_draft / T_target.  The measured
counterparts (the pooled acceptance rate, mean tokens per step) are in
:mod:`specdec.metrics`; F26-F27 (exact, from conditional tables) in
:mod:`specdec.laws.chain`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import INT64_MAX, as_float, as_int, as_probability

MAX_SCANNED_DRAFT_TOKENS = 100_000  # F24's scan over K = 0..max_draft_tokens: about 0.2 s at the cap


def _num_draft_tokens(value, name: str = "num_draft_tokens") -> int:
    return as_int(name, value, minimum=0, maximum=INT64_MAX)


def _expected_tokens(alpha: float, k: int) -> float:
    """(F22) for a checked alpha in [0, 1] and K >= 0, accurate to a few ulps at any alpha.

    1 - alpha^(K+1) = -expm1((K+1) ln alpha), with ln alpha = log1p(alpha - 1) (alpha - 1 is exact for
    alpha >= 1/2): no cancellation near alpha = 1, where the plain quotient loses every digit.
    """
    if alpha == 1.0:
        return float(k + 1)
    if k == 0 or alpha == 0.0:
        return 1.0
    log_alpha = math.log1p(alpha - 1.0) if alpha >= 0.5 else math.log(alpha)
    return -math.expm1((k + 1) * log_alpha) / (1.0 - alpha)


def expected_tokens_iid(alpha, num_draft_tokens) -> float:
    """(F22) E[T] = (1 - alpha^(K+1)) / (1 - alpha); K + 1 when alpha = 1 (exact near 1: expm1/log1p)."""
    return _expected_tokens(as_probability("alpha", alpha), _num_draft_tokens(num_draft_tokens))


def expected_tokens_positional(alphas) -> float:
    """(F25) E[T] = 1 + sum_i prod_{j<=i} alpha_j for independent position-dependent alpha_j (a 1-D sequence)."""
    arr = _array("alphas", alphas)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(f"alphas must be real numbers in [0, 1], got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"alphas must be a 1-D sequence, got shape {arr.shape}")
    a = arr.astype(np.float64)
    if a.size and (not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1):
        raise ValueError(f"alphas must lie in [0, 1], got {a.tolist()}")
    return float(1.0 + np.cumprod(a).sum())


def _array(name: str, values) -> np.ndarray:
    try:
        return np.asarray(values)
    except (TypeError, ValueError, OverflowError) as error:  # ragged nesting, say
        raise TypeError(f"{name} must be a 1-D sequence of numbers, got {type(values).__name__}: {error}") from None


def positional_acceptance(alpha, num_draft_tokens) -> list[float]:
    """(F22's model, position by position) alpha^i for i = 1..K: the chance that the i-th draft is kept when every
    draft is accepted independently with probability alpha (F25 with alpha_j = alpha)."""
    alpha, k = as_probability("alpha", alpha), _num_draft_tokens(num_draft_tokens)
    if k > MAX_SCANNED_DRAFT_TOKENS:
        raise ValueError(f"num_draft_tokens must be at most {MAX_SCANNED_DRAFT_TOKENS} here, got {k}")
    return [alpha ** i for i in range(1, k + 1)]


def speedup(alpha, num_draft_tokens, cost_ratio) -> float:
    """(F23) S = E[T] / (1 + K c), c = T_draft / T_target (Leviathan et al., Thm 3.8)."""
    alpha, k = as_probability("alpha", alpha), _num_draft_tokens(num_draft_tokens)
    c = as_float("cost_ratio", cost_ratio, minimum=0.0)
    return _expected_tokens(alpha, k) / (1 + k * c)


def _verify_costs(verify_cost_ratios, top: int) -> list[float] | None:
    """v(K) for K = 0..top: T_verify(K + 1) / T_target(1); None means 1 for every K (F23's simple form)."""
    if verify_cost_ratios is None:
        return None
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
    alpha, k = as_probability("alpha", alpha), _num_draft_tokens(num_draft_tokens)
    rho = as_float("draft_step_ratio", draft_step_ratio, minimum=0.0)
    v = as_float("verify_cost_ratio", verify_cost_ratio, minimum=0.0, low_open=True)
    return _expected_tokens(alpha, k) / (k * rho + v)


def predicted_speedup(alpha, steps_draft_tokens, draft_step_ratio, verify_cost_ratios=None) -> float:
    """(F23 over a run) sum_s E[T](alpha, K_s) / sum_s (K_s·rho + v(K_s)) for steps that drafted K_s tokens.

    Time is counted in target steps; with one K for every step it is :func:`speedup_with_costs`.
    ``steps_draft_tokens``: a non-empty 1-D sequence of K_s >= 0.
    ``verify_cost_ratios``: v(K) for K = 0..max K_s (a sequence or a dict), None for F23's 1 + K·c.
    """
    alpha = as_probability("alpha", alpha)
    ks = _draft_lengths("steps_draft_tokens", steps_draft_tokens)
    rho = as_float("draft_step_ratio", draft_step_ratio, minimum=0.0)
    costs = _verify_costs(verify_cost_ratios, max(ks))
    tokens = sum(_expected_tokens(alpha, k) for k in ks)
    return tokens / sum(k * rho + (1.0 if costs is None else costs[k]) for k in ks)


def end_to_end_speedup(decode_speedup, prefill_share) -> float:
    """(F23 end to end, docs/reference.md §6) 1 / (f + (1 - f) / S): F23's decoding speedup S when a share
    f of the autoregressive call's time is a part both sides pay alike (the prompt's prefill and the call's
    setup, measured as the autoregressive time to first token over its total; Amdahl's law).
    f = 0 gives S; f = 1 gives 1."""
    s = as_float("decode_speedup", decode_speedup, minimum=0.0, low_open=True)
    f = as_probability("prefill_share", prefill_share)
    return 1.0 / (f + (1.0 - f) / s)


def _draft_lengths(name: str, values) -> list[int]:
    """A non-empty 1-D list of draft lengths 0 <= K <= 2**63 - 1."""
    arr = _array(name, values)
    if arr.size == 0 or arr.dtype == object or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a non-empty sequence of integers >= 0, got {values!r:.80}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence, got shape {arr.shape}")
    if arr.min() < 0:
        raise ValueError(f"{name} must be >= 0, got {int(arr.min())}")
    if int(arr.max()) > INT64_MAX:
        raise ValueError(f"{name} must be <= {INT64_MAX}, got {int(arr.max())}")
    return [int(k) for k in arr]


def optimal_draft_length(alpha, cost_ratio, *, max_draft_tokens: int = 64, verify_cost_ratios=None) -> tuple[int, float]:
    """(F24) K* = argmax over K in 0..max_draft_tokens of S(K), by scan (no closed form); returns (K*, S).

    S(K) is F23 with c = ``cost_ratio`` (T_draft / T_target); ``verify_cost_ratios`` (v(K) for
    K = 0..max_draft_tokens, measured) replaces F23's 1 by the cost of verifying K + 1 tokens.
    ``max_draft_tokens`` is at most :data:`MAX_SCANNED_DRAFT_TOKENS` (100,000: the scan stays well
    under a second); beyond it a ValueError names it.
    """
    top = as_int("max_draft_tokens", max_draft_tokens, minimum=0, maximum=MAX_SCANNED_DRAFT_TOKENS)
    alpha = as_probability("alpha", alpha)
    cost_ratio = as_float("cost_ratio", cost_ratio, minimum=0.0)
    costs = _verify_costs(verify_cost_ratios, top)
    speeds = [_expected_tokens(alpha, k) / (k * cost_ratio + (1.0 if costs is None else costs[k])) for k in range(top + 1)]
    best = int(np.argmax(speeds))  # the first maximum: the shortest draft among ties
    return best, speeds[best]


@dataclass(frozen=True)
class StepCosts:
    """The costs F23's general form reads, measured: T_target(K + 1) for K = 0..max_k and the draft's seconds
    per drafted token (from one calibration: :func:`specdec.bench.costs.calibrate`, or a peer's own timing)."""

    target_seconds: dict[int, float]  # K -> one target pass over K + 1 tokens
    draft_seconds_per_token: float
    per_round: tuple = ()  # the StepCosts of each calibration round, when it kept them (its spread)

    @property
    def verify_cost_ratios(self) -> list[float]:
        """v(K) = T_target(K + 1) / T_target(1), K = 0..max_k."""
        one = self.target_seconds[0]
        return [self.target_seconds[k] / one for k in range(len(self.target_seconds))]

    @property
    def draft_step_ratio(self) -> float:
        """rho = T_draft / T_target(1) per drafted token."""
        return self.draft_seconds_per_token / self.target_seconds[0]


def implied_acceptance(acceptance_length, num_draft_tokens) -> float:
    """The alpha whose F22 expectation (1 - alpha^(K+1)) / (1 - alpha) equals ``acceptance_length`` at draft
    length K (bisection): what a subject that only counts its tokens implies under F22's i.i.d. model."""
    k = _num_draft_tokens(num_draft_tokens)
    target = min(max(as_float("acceptance_length", acceptance_length), 1.0), k + 1.0)
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if sum(mid ** i for i in range(k + 1)) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2
