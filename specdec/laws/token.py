"""Exact laws of one token-level verification step, in float64 (docs/reference.md §1, §2; docs/reference.md).

* :func:`acceptance_probability` - beta = sum min(p, q) = 1 - TV (F1).
* :func:`residual_distribution` - r = (p - q)+ / (1 - beta), the target when empty (F3, E2: a mass
  within rounding of the rows' dtype, :func:`residual_is_empty`, the verifiers' rule).
* :func:`token_joint_law` - the joint law of (output Y, draft X), built from the
  rule (F2, F3, E2): P(Y=y, X=x) = q(x) [a(x) 1{y=x} + (1 - a(x)) r(y)], a = min(1, p/q).
  Rows are the output, columns the draft, as in F6;
  :func:`specdec.laws.transport.optimal_plan` is the closed form it must equal.
* :func:`token_output_law` - its row marginal, which F4 says is the target.

Inputs are probability rows (tensors, arrays or sequences; any leading batch
dimensions), checked by one policy (:func:`specdec._validation.as_law`).
"""

from __future__ import annotations

import torch

from .._validation import PROB_DTYPES, SUM_TOL, as_law_pair

# E2: a residual (p - q)+ of mass at most this many ulps of 1 in the rows' dtype is rounding noise of
# rows that sum to one (float64: 16 eps = 3.6e-15; float32 1.9e-6; lower precisions as float32, as in
# SUM_TOL; exact dtypes as float64): it is empty, and the target row is used instead.  One rule for
# the laws here and in multidraft, and for every verifier (the fused kernel included).
EMPTY_RESIDUAL_ULPS = 16


def empty_residual_mass(dtype: torch.dtype) -> float:
    """(E2) The largest residual mass that is rounding noise for rows given in ``dtype``."""
    precise = dtype if dtype in PROB_DTYPES else (torch.float32 if dtype in SUM_TOL else torch.float64)
    return EMPTY_RESIDUAL_ULPS * torch.finfo(precise).eps


def residual_is_empty(mass, dtype: torch.dtype):
    """(E2) Whether a residual of total ``mass`` (a tensor or a number) is empty for rows given in ``dtype``."""
    return mass <= empty_residual_mass(dtype)


def acceptance_probability(target_probs, draft_probs) -> torch.Tensor:
    """(F1) beta = sum_x min(p(x), q(x)) = 1 - TV(p, q), per row; float64."""
    target, draft = as_law_pair(target_probs, draft_probs)
    return torch.minimum(target, draft).sum(-1)


def _residual(target: torch.Tensor, draft: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(F3) norm((p - q)+), or p where the residual is empty (E2: rounding noise of rows given in ``dtype``)."""
    residual = (target - draft).clamp_min(0)
    mass = residual.sum(-1, keepdim=True)
    empty = residual_is_empty(mass, dtype)
    return torch.where(empty, target, residual / torch.where(empty, 1.0, mass))


def residual_distribution(target_probs, draft_probs) -> torch.Tensor:
    """(F3) r = (p - q)+ / (1 - beta); the target itself when the residual is empty (E2): its mass
    is within rounding of the dtype the rows came in (:func:`residual_is_empty`)."""
    return _residual(*as_law_pair(target_probs, draft_probs, with_dtype=True))


def token_joint_law(target_probs, draft_probs) -> torch.Tensor:
    """Joint law (..., V_out, V_draft) of (output, draft) for one verification step, float64.

    Derived from the rule (F2, F3), not from F6, so that comparing the two is a check.
    """
    target, draft, dtype = as_law_pair(target_probs, draft_probs, with_dtype=True)
    kept = torch.minimum(target, draft)  # q(x) a(x) = min(p, q)(x), also where q = 0
    rejected = draft - kept  # q(x) (1 - a(x))
    return torch.diag_embed(kept) + _residual(target, draft, dtype).unsqueeze(-1) * rejected.unsqueeze(-2)


def token_output_law(target_probs, draft_probs) -> torch.Tensor:
    """(F4) P(output = y) = min(p, q)(y) + (1 - beta) r(y); without forming the V x V joint."""
    target, draft, dtype = as_law_pair(target_probs, draft_probs, with_dtype=True)
    kept = torch.minimum(target, draft)
    reject_mass = (draft - kept).sum(-1, keepdim=True)
    return kept + reject_mass * _residual(target, draft, dtype)
