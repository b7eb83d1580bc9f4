"""The private core shared by the chain verifiers (token, block): input checks, uniforms,
row gathers and the emitted block.  Nothing here is public API; the verifiers in this
package are its only users.

The emitted block of every chain verifier has the same shape: x_1..x_n (accepted
drafts), then one token drawn from a residual (or the bonus row when n = K), then
padding.  :func:`emit_block` builds it without host synchronisation.
"""

from __future__ import annotations

import torch

from .. import _validation as c
from ..laws.token import residual_is_empty
from ..sampling import inverse_cdf, inverse_cdf_rows
from .result import VerifyResult


def check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, *, values: bool) -> None:
    """Metadata checks always; value checks (one host sync) when ``values``."""
    c.check_tensor("target_probs", target_probs, dtypes=c.PROB_DTYPES, ndim=3)
    c.check_tensor("draft_tokens", draft_tokens, dtypes=c.TOKEN_DTYPES, ndim=2)
    batch, num_draft = draft_tokens.shape
    vocab = target_probs.shape[-1]
    c.check_shape("target_probs", target_probs, (batch, num_draft + 1, vocab), "B, K+1, V")
    c.check_vocabulary("target_probs", vocab)
    if draft_probs is not None:
        c.check_tensor("draft_probs", draft_probs, dtypes=c.PROB_DTYPES, ndim=3)
        c.check_shape("draft_probs", draft_probs, (batch, num_draft, vocab), "B, K, V")
        if draft_probs.dtype != target_probs.dtype:
            raise TypeError(
                f"draft_probs dtype {draft_probs.dtype} differs from target_probs dtype {target_probs.dtype} "
                "(B11: sample and verify in one precision)"
            )
    c.check_same_device(draft_tokens=draft_tokens, draft_probs=draft_probs, target_probs=target_probs)
    if values or sum_tol is not None:  # an unused default costs nothing; a given value is still checked
        sum_tol = c.as_sum_tol(sum_tol, target_probs.dtype)
    if values:
        tokens = draft_tokens.long()  # every integer dtype, compared in int64
        checks = c.DeferredChecks()
        c.add_token_range_check(checks, "draft_tokens", tokens, vocab)
        c.add_probability_checks(checks, "target_probs", target_probs, sum_tol)
        if draft_probs is not None:
            c.add_probability_checks(checks, "draft_probs", draft_probs, sum_tol)
            safe = tokens.clamp(0, vocab - 1).unsqueeze(-1)  # the range error is reported first
            c.add_proposal_check(checks, tokens, draft_probs.gather(-1, safe).squeeze(-1))
        checks.raise_if_failed()


def with_generator(core, draft_tokens, draft_probs, target_probs, generator, *, extra_uniforms, pad_id, validate, sum_tol):
    """Checks, then B*(K+extra_uniforms) float64 uniforms from ``generator``, then
    ``core(draft_tokens, draft_probs, target_probs, uniforms, pad_id)``."""
    check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=validate)
    pad_id = c.as_pad_id(pad_id)
    c.check_generator(generator, target_probs.device)
    batch, num_draft = draft_tokens.shape
    uniforms = torch.rand(
        (batch, num_draft + extra_uniforms), dtype=torch.float64, device=target_probs.device, generator=generator
    )
    return core(draft_tokens.long(), draft_probs, target_probs, uniforms, pad_id)


def row_at(probs: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """probs[b, position[b]] for every row b: (B, N, V), (B,) -> (B, V), never copying all of probs."""
    batch, length, vocab = probs.shape
    if batch > 1 and probs.stride(0) == 0:  # one (N, V) block broadcast over the batch
        return probs[0].index_select(0, position)
    rows = torch.arange(batch, device=probs.device)
    if batch <= 1 or probs.stride(0) == length * probs.stride(1):  # (B, N) merge into a view
        return probs.reshape(batch * length, vocab).index_select(0, rows * length + position)
    return probs[rows, position]  # other strided inputs


def draft_row_at(draft_tokens, draft_probs, position, target_row) -> torch.Tensor:
    """q at draft position ``position[b]`` per row (B, V); zero where position = K (the bonus
    row has no draft); the point mass on the drafted token when ``draft_probs`` is None (E5)."""
    num_draft = draft_tokens.shape[1]
    if num_draft == 0:
        return torch.zeros_like(target_row)
    at = position.clamp(max=num_draft - 1)  # (B,) a valid index; masked below where position = K
    if draft_probs is None:
        token = draft_tokens.gather(1, at.unsqueeze(-1))  # (B, 1)
        draft_row = torch.zeros_like(target_row).scatter_(1, token, 1.0)
    else:
        draft_row = row_at(draft_probs, at)
    return draft_row * (position < num_draft).unsqueeze(-1).to(draft_row.dtype)


def broadcast_block(target_probs, draft_probs) -> bool:
    """True when every batch row holds the same (K+1, V) block (inputs expanded over the batch)."""
    return target_probs.shape[0] > 1 and target_probs.stride(0) == 0 and (draft_probs is None or draft_probs.stride(0) == 0)


def emit_block(draft_tokens, num_accepted, target_row, residual, uniform, pad_id, *, shared: bool = False) -> VerifyResult:
    """x_1..x_n, then one token drawn with ``uniform`` (B,) from ``residual`` - or from
    ``target_row`` when the residual is empty (E2: its mass is rounding noise of the rows' dtype,
    :func:`specdec.laws.token.residual_is_empty`; flagged; never a uniform clamp, B14) - at position n,
    then ``pad_id``.

    ``shared``: ``target_row`` and ``residual`` are (K+1, V) tables shared by every row,
    indexed by n (a batch-broadcast block: each residual is computed once)."""
    residual_empty = residual_is_empty(residual.sum(-1), residual.dtype)  # (B,), or (K+1,) when shared (E2)
    rows = torch.where(residual_empty.unsqueeze(-1), target_row, residual)
    if shared:
        last = inverse_cdf_rows(rows, num_accepted, uniform)  # (B,)
        residual_empty = residual_empty[num_accepted]
    else:
        last = inverse_cdf(rows, uniform, validate=False)  # (B,) rows built above, each of positive mass
    batch, num_draft = draft_tokens.shape
    positions = torch.arange(num_draft, device=draft_tokens.device)  # (K,)
    tokens = torch.full((batch, num_draft + 1), pad_id, dtype=torch.int64, device=draft_tokens.device)
    tokens[:, :num_draft] = torch.where(positions < num_accepted.unsqueeze(-1), draft_tokens, pad_id)  # x_1..x_n
    tokens.scatter_(1, num_accepted.unsqueeze(-1), last.unsqueeze(-1))  # the drawn token at position n
    return VerifyResult(num_accepted=num_accepted, tokens=tokens, residual_empty=residual_empty)
