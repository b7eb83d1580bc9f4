"""The reference token-level verifier (docs/reference.md §1, F2-F4; docs/reference.md), batched and vectorised.

Leviathan et al. 2023, Alg. 1; Chen et al. 2023, Alg. 2 (who call the target q).
Edge cases: K = 0 emits one target token (the autoregressive step); draft_probs
None is a deterministic drafter, q_i = point mass on x_i (E5); an empty residual
falls back to the target row and is flagged (E2), never clamped to a uniform
(B14); a drafted token of draft probability 0 is a "proposal mismatch" (E1).
The step is tensor operations over (B, K): no Python loop over rows or positions
and no host synchronisation (validation, when on, costs one sync before it).
"""

from __future__ import annotations

import torch
from torch import nn

from .. import _validation as c
from ._chain import broadcast_block, check_inputs, draft_row_at, emit_block, row_at, with_generator
from .result import VerifyResult


def token_step(draft_tokens, draft_probs, target_probs, uniforms, pad_id) -> VerifyResult:
    """The algorithm.  draft_tokens (B, K) int64; draft_probs (B, K, V) or None (E5);
    target_probs (B, K+1, V); uniforms (B, K+1) float64 in [0, 1); pad_id an int."""
    num_draft = draft_tokens.shape[1]

    # (F2) acceptance tests at every draft position at once, in float64:
    #      accept x_i  iff  u_i * q_i(x_i) < p_i(x_i)   (strict, u in [0, 1): E3)
    x = draft_tokens.unsqueeze(-1)  # (B, K, 1)
    target_at_draft = target_probs[:, :num_draft].gather(-1, x).squeeze(-1).double()  # (B, K)
    if draft_probs is None:
        draft_at_draft = torch.ones_like(target_at_draft)  # E5: q_i = point mass on x_i
    else:
        draft_at_draft = draft_probs.gather(-1, x).squeeze(-1).double()  # (B, K)
    accepted = uniforms[:, :num_draft] * draft_at_draft < target_at_draft  # (B, K)
    num_accepted = accepted.long().cumprod(-1).sum(-1)  # (B,) n = leading accepts

    # (F3) the residual (p_{n+1} - q_{n+1})+ at the first rejection, or the bonus row
    #      p_{K+1} when n = K (q is zero there); only B rows of V are touched.
    if draft_probs is not None and broadcast_block(target_probs, draft_probs):  # one block for every row:
        residuals = (target_probs[0] - nn.functional.pad(draft_probs[0], (0, 0, 0, 1))).clamp_min(0)  # (K+1, V), once
        return emit_block(draft_tokens, num_accepted, target_probs[0], residuals, uniforms[:, num_draft], pad_id, shared=True)
    target_row = row_at(target_probs, num_accepted)  # (B, V)
    residual = (target_row - draft_row_at(draft_tokens, draft_probs, num_accepted, target_row)).clamp_min(0)

    # (F4) emit x_1..x_n and one token from the residual: the output law is the target's.
    return emit_block(draft_tokens, num_accepted, target_row, residual, uniforms[:, num_draft], pad_id)


def verify_tokens(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    pad_id: int = -1,
    validate: bool = True,
    sum_tol: float | None = None,
) -> VerifyResult:
    """Verify a batch of drafts with the token-level rule (F2-F4).

    draft_tokens: (B, K) int, the drafts x_1..x_K per row.
    draft_probs: (B, K, V) float32/float64, q_i = q(. | prefix, x_<i); or None for a
        deterministic drafter (q_i = point mass on x_i, E5).
    target_probs: (B, K+1, V), same dtype, p_i = p(. | prefix, x_<i); row K is the bonus row.
    generator: the only source of randomness; B*(K+1) float64 uniforms are drawn from it.

    ``validate=True`` (default) checks the values first (NaN, negative or unnormalised
    rows beyond ``sum_tol``, out-of-range ids, E1) at the cost of one host sync;
    ``validate=False`` skips the value checks, never the shape checks.
    Row b's result depends only on row b of every input (batch independence).
    """
    return with_generator(
        token_step, draft_tokens, draft_probs, target_probs, generator,
        extra_uniforms=1, pad_id=pad_id, validate=validate, sum_tol=sum_tol,
    )


def verify_tokens_with_uniforms(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    uniforms: torch.Tensor,
    *,
    pad_id: int = -1,
    validate: bool = True,
    sum_tol: float | None = None,
) -> VerifyResult:
    """:func:`verify_tokens` as a deterministic function of explicit uniforms (B, K+1) float64 in
    [0, 1): columns 0..K-1 drive the acceptance tests (F2), column K the draw of the last token."""
    c.check_tensor("uniforms", uniforms, dtypes=(torch.float64,), ndim=2)
    check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=validate)
    pad_id = c.as_pad_id(pad_id)
    batch, num_draft = draft_tokens.shape
    c.check_shape("uniforms", uniforms, (batch, num_draft + 1), "B, K+1")
    c.check_same_device(uniforms=uniforms, target_probs=target_probs)
    if validate and uniforms.numel() and not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms must lie in [0, 1)")
    return token_step(draft_tokens.long(), draft_probs, target_probs, uniforms, pad_id)
