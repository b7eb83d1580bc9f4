"""Exact laws of the token verifier, in float64 (SPEC §1, §2, §6).

One step, any (target, draft) pair:

* :func:`token_joint_law` - the joint law of (output Y, draft X), built from the
  algorithm's own rule (F2, F3, E2): P(Y=y, X=x) = q(x) [a(x) 1{y=x} + (1-a(x)) r(y)]
  with a = min(1, p/q) and r the residual.  Rows are the output, columns the
  draft, as in F6 (:func:`specdec.transport.optimal_plan` is the closed form it
  must equal).
* :func:`token_output_law` - its row marginal, which F4 says is the target.
* :func:`acceptance_probability` - beta = sum min(p, q) = 1 - TV (F1).

A chain of conditional tables (``target_fn(prefix)`` and ``draft_fn(prefix)``
return the next-token probabilities given the drafted prefix):

* :func:`acceptance_profile` - A_i, the probability of accepting at least i
  drafts (F26), and :func:`tokens_per_step_moments` (F27);
* :func:`emitted_block_law` - the exact law of the whole emitted block.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

ProbFn = Callable[[tuple], "torch.Tensor | np.ndarray | Sequence[float]"]


def _as_float64(name: str, probs) -> torch.Tensor:
    t = torch.as_tensor(probs, dtype=torch.float64)
    if t.ndim < 1 or t.shape[-1] < 1:
        raise ValueError(f"{name} must have a non-empty last (vocabulary) dimension, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
        raise ValueError(f"{name} must be finite and non-negative")
    err = float((t.sum(-1) - 1).abs().max())
    if err > 1e-9:
        raise ValueError(f"{name} rows must sum to 1 within 1e-9 in float64, worst row is off by {err:g}")
    return t


def _pair(target_probs, draft_probs) -> tuple[torch.Tensor, torch.Tensor]:
    target = _as_float64("target_probs", target_probs)
    draft = _as_float64("draft_probs", draft_probs)
    if target.shape != draft.shape:
        raise ValueError(f"target_probs shape {tuple(target.shape)} != draft_probs shape {tuple(draft.shape)}")
    return target, draft


def acceptance_probability(target_probs, draft_probs) -> torch.Tensor:
    """(F1) beta = sum_x min(p(x), q(x)) = 1 - TV(p, q), per row; float64."""
    target, draft = _pair(target_probs, draft_probs)
    return torch.minimum(target, draft).sum(-1)


def residual_distribution(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """(F3) r = (p - q)+ / (1 - beta); the target itself when the residual is empty (E2)."""
    residual = (target_probs - draft_probs).clamp_min(0)
    mass = residual.sum(-1, keepdim=True)
    empty = mass <= torch.finfo(residual.dtype).tiny
    return torch.where(empty, target_probs, residual / torch.where(empty, 1.0, mass))


def token_joint_law(target_probs, draft_probs) -> torch.Tensor:
    """Joint law (..., V_out, V_draft) of (output, draft) for one verification step, float64.

    Derived from the rule (F2, F3), not from F6, so that comparing the two is a check.
    """
    target, draft = _pair(target_probs, draft_probs)
    kept = torch.minimum(target, draft)  # q(x) a(x) = min(p, q)(x), also where q = 0
    rejected = draft - kept  # q(x) (1 - a(x))
    r = residual_distribution(target, draft)  # (..., V)
    return torch.diag_embed(kept) + r.unsqueeze(-1) * rejected.unsqueeze(-2)


def token_output_law(target_probs, draft_probs) -> torch.Tensor:
    """(F4) P(output = y) = min(p, q)(y) + (1 - beta) r(y); without forming the V x V joint."""
    target, draft = _pair(target_probs, draft_probs)
    kept = torch.minimum(target, draft)
    reject_mass = (draft - kept).sum(-1, keepdim=True)
    return kept + reject_mass * residual_distribution(target, draft)


# ---------------------------------------------------------------------------
# Chains of conditional tables
# ---------------------------------------------------------------------------


def _call(fn: ProbFn, name: str, prefix: tuple, vocab: int | None) -> torch.Tensor:
    probs = _as_float64(f"{name}({prefix})", fn(prefix))
    if probs.ndim != 1 or (vocab is not None and probs.shape[0] != vocab):
        raise ValueError(f"{name}({prefix}) must return a vector of length {vocab}, got shape {tuple(probs.shape)}")
    return probs


def _check_num_draft(num_draft) -> None:
    if isinstance(num_draft, bool) or not isinstance(num_draft, int) or num_draft < 0:
        raise ValueError(f"num_draft must be an integer >= 0, got {num_draft!r}")


def _accepted_prefixes(target_fn: ProbFn, draft_fn: ProbFn, num_draft: int):
    """Yield (prefix, Prod_j min(p_j, q_j)(x_j), target row, draft row or None) for every
    draft prefix of length 0..num_draft with positive acceptance mass (F26)."""
    vocab = None
    stack = [((), 1.0)]
    while stack:
        prefix, mass = stack.pop()
        target = _call(target_fn, "target_fn", prefix, vocab)
        vocab = target.shape[0]
        if len(prefix) == num_draft:
            yield prefix, mass, target, None
            continue
        draft = _call(draft_fn, "draft_fn", prefix, vocab)
        yield prefix, mass, target, draft
        kept = torch.minimum(target, draft).tolist()
        for token in range(vocab - 1, -1, -1):
            if kept[token] > 0:
                stack.append((prefix + (token,), mass * kept[token]))


def acceptance_profile(target_fn: ProbFn, draft_fn: ProbFn, num_draft: int) -> torch.Tensor:
    """(F26) A_i = sum over x_1..x_i of Prod_{j<=i} min(p_j(x_j), q_j(x_j)), i = 0..K; float64 (K+1,).

    ``target_fn(prefix)`` / ``draft_fn(prefix)`` give p and q after the drafted
    ``prefix`` (a tuple of ids, () at the context).  Cost: O(V^K) calls.
    """
    _check_num_draft(num_draft)
    profile = torch.zeros(num_draft + 1, dtype=torch.float64)
    for prefix, mass, _, _ in _accepted_prefixes(target_fn, draft_fn, num_draft):
        profile[len(prefix)] += mass
    return profile


def tokens_per_step_moments(profile) -> tuple[float, float, float]:
    """(F27) From A_0..A_K: E[T] = sum A_i, E[T^2] = sum (2i+1) A_i, Var = E[T^2] - E[T]^2."""
    a = torch.as_tensor(profile, dtype=torch.float64)
    if a.ndim != 1 or a.numel() < 1:
        raise ValueError(f"profile must be a non-empty vector A_0..A_K, got shape {tuple(a.shape)}")
    i = torch.arange(a.numel(), dtype=torch.float64)
    mean = float(a.sum())
    second = float(((2 * i + 1) * a).sum())
    return mean, second, second - mean * mean


def emitted_block_law(target_fn: ProbFn, draft_fn: ProbFn, num_draft: int) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted block (x_1..x_n, y) of one token-verification step.

    P(x_1..x_n, y) = Prod_{j<=n} min(p_j, q_j)(x_j) * (p_{n+1} - q_{n+1})+(y)   for n < K,
    P(x_1..x_K, y) = Prod_{j<=K} min(p_j, q_j)(x_j) * p_{K+1}(y)               (bonus).
    (The rejection at n+1 has probability 1 - beta, and the residual is (p-q)+/(1-beta).)
    """
    _check_num_draft(num_draft)
    law: dict[tuple[int, ...], float] = {}
    for prefix, mass, target, draft in _accepted_prefixes(target_fn, draft_fn, num_draft):
        last = target if draft is None else (target - draft).clamp_min(0)
        for token, weight in enumerate(last.tolist()):
            if weight > 0:
                law[prefix + (token,)] = mass * weight
    return law
