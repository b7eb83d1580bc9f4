"""The reference token-level verifier (SPEC §1, F2-F4), batched and vectorised.

Leviathan et al. 2023, Alg. 1; Chen et al. 2023, Alg. 2 (who call the target q).

For each row b and draft position i = 1..K (draft x_i ~ q_i, target row p_i):

    accept x_i  iff  u_i * q_i(x_i) < p_i(x_i)      (F2, strict, u_i in [0,1): E3)

n = number of leading accepts.  The emitted block is x_1..x_n followed by one
token drawn from the residual (p_{n+1} - q_{n+1})+ (F3) when n < K, or from the
bonus row p_{K+1} when n = K.  Its output law is the target's (F4).

Edge cases: K = 0 emits one target token (the autoregressive step); q = None is
a deterministic drafter, q_i = point mass on x_i (E5); an empty residual falls
back to p_{n+1} and is flagged in ``residual_empty`` (E2), never clamped to a
uniform (PEERS B14); a drafted token with q = 0 is a "proposal mismatch" (E1).

The whole step is tensor operations over (B, K): no Python loop over rows or
positions and no host synchronisation (validation, when on, costs one sync
before the step).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validation as v
from .sampling import inverse_cdf


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of one verification step for a batch of B rows with K drafts each."""

    num_accepted: torch.Tensor  # (B,) int64 in [0, K]: accepted draft tokens per row
    tokens: torch.Tensor  # (B, K+1) int64: accepted drafts, then the residual/bonus token, then pad_id
    residual_empty: torch.Tensor  # (B,) bool: E2 anomaly, the residual was empty and p was used

    @property
    def num_emitted(self) -> torch.Tensor:
        """(B,) int64: tokens emitted per row, always num_accepted + 1."""
        return self.num_accepted + 1


def _check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, *, values: bool) -> float:
    """Metadata checks always; value checks (one host sync) when ``values``.  Returns sum_tol."""
    v.check_tensor("target_probs", target_probs, dtypes=v.PROB_DTYPES, ndim=3)
    v.check_tensor("draft_tokens", draft_tokens, dtypes=v.TOKEN_DTYPES, ndim=2)
    batch, num_draft = draft_tokens.shape
    vocab = target_probs.shape[-1]
    v.check_shape("target_probs", target_probs, (batch, num_draft + 1, target_probs.shape[-1]), "B, K+1, V")
    if vocab < 1:
        raise ValueError(f"target_probs must have a vocabulary of at least 1 token, got V={vocab}")
    if draft_probs is not None:
        v.check_tensor("draft_probs", draft_probs, dtypes=v.PROB_DTYPES, ndim=3)
        v.check_shape("draft_probs", draft_probs, (batch, num_draft, vocab), "B, K, V")
        if draft_probs.dtype != target_probs.dtype:
            raise TypeError(
                f"draft_probs dtype {draft_probs.dtype} differs from target_probs dtype {target_probs.dtype} "
                "(PEERS B11: sample and verify in one precision)"
            )
    v.check_same_device(draft_tokens=draft_tokens, draft_probs=draft_probs, target_probs=target_probs)
    if sum_tol is None:
        sum_tol = v.default_sum_tol(target_probs.dtype)
    elif not (isinstance(sum_tol, (int, float)) and sum_tol >= 0):
        raise ValueError(f"sum_tol must be a number >= 0, got {sum_tol!r}")
    if values:
        checks = v.DeferredChecks()
        v.add_token_range_check(checks, "draft_tokens", draft_tokens, vocab)
        v.add_probability_checks(checks, "target_probs", target_probs, sum_tol)
        if draft_probs is not None:
            v.add_probability_checks(checks, "draft_probs", draft_probs, sum_tol)
            safe = draft_tokens.long().clamp(0, vocab - 1).unsqueeze(-1)  # range is reported first
            v.add_proposal_check(checks, draft_tokens, draft_probs.gather(-1, safe).squeeze(-1))
        checks.raise_if_failed()
    return sum_tol


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
    """Token verification (F2-F4) as a deterministic function of explicit uniforms.

    draft_tokens: (B, K) int, the drafts x_1..x_K per row.
    draft_probs: (B, K, V) float32/float64, q_i = q(. | prefix, x_<i); or None for a
        deterministic drafter (q_i = point mass on x_i, E5).
    target_probs: (B, K+1, V), same dtype, p_i = p(. | prefix, x_<i); row K is the bonus row.
    uniforms: (B, K+1) float64 in [0, 1): columns 0..K-1 drive the acceptance tests (F2),
        column K the draw of the residual or bonus token.
    Row b's result depends only on row b of every input (batch independence).
    """
    v.check_tensor("uniforms", uniforms, dtypes=(torch.float64,), ndim=2)
    sum_tol = _check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=validate)
    batch, num_draft = draft_tokens.shape
    v.check_shape("uniforms", uniforms, (batch, num_draft + 1), "B, K+1")
    v.check_same_device(uniforms=uniforms, target_probs=target_probs)
    if validate and uniforms.numel() and not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms must lie in [0, 1)")
    return _verify(draft_tokens.long(), draft_probs, target_probs, uniforms, pad_id)


def _row_at(probs: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """probs[b, position[b]] for every row b: (B, N, V), (B,) -> (B, V), never copying all of probs."""
    batch, length, vocab = probs.shape
    rows = torch.arange(batch, device=probs.device)
    if batch <= 1 or probs.stride(0) == length * probs.stride(1):  # (B, N) merge into a view
        return probs.reshape(batch * length, vocab).index_select(0, rows * length + position)
    return probs[rows, position]  # expanded / strided inputs


def _verify(draft_tokens, draft_probs, target_probs, uniforms, pad_id) -> VerifyResult:
    num_draft = draft_tokens.shape[1]

    # (F2) acceptance tests at every draft position at once, in float64.
    x = draft_tokens.unsqueeze(-1)  # (B, K, 1)
    target_at_draft = target_probs[:, :num_draft].gather(-1, x).squeeze(-1).double()  # (B, K)
    if draft_probs is None:
        draft_at_draft = torch.ones_like(target_at_draft)  # E5: q = point mass on x_i
    else:
        draft_at_draft = draft_probs.gather(-1, x).squeeze(-1).double()  # (B, K)
    accepted = uniforms[:, :num_draft] * draft_at_draft < target_at_draft  # (B, K), strict (E3)
    num_accepted = accepted.long().cumprod(-1).sum(-1)  # (B,) leading accepts

    # (F3) residual at position n (or the bonus row when n = K); only B rows of V are touched.
    target_row = _row_at(target_probs, num_accepted)  # (B, V)
    residual = (target_row - _draft_row_at(draft_tokens, draft_probs, num_accepted, target_row)).clamp_min(0)
    return _emit_block(draft_tokens, num_accepted, target_row, residual, uniforms[:, num_draft], pad_id)


def _draft_row_at(draft_tokens, draft_probs, position, target_row) -> torch.Tensor:
    """q at draft position ``position[b]`` per row, zero where position = K (the bonus row has
    no draft); a point mass on the drafted token when ``draft_probs`` is None (E5).  (B, V)."""
    num_draft = draft_tokens.shape[1]
    if num_draft == 0:
        return torch.zeros_like(target_row)
    at = position.clamp(max=num_draft - 1)  # (B,) valid index; masked below when position = K
    if draft_probs is None:
        rows = torch.arange(draft_tokens.shape[0], device=draft_tokens.device)
        draft_row = torch.nn.functional.one_hot(draft_tokens[rows, at], target_row.shape[-1]).to(target_row.dtype)
    else:
        draft_row = _row_at(draft_probs, at)
    return draft_row * (position < num_draft).unsqueeze(-1).to(draft_row.dtype)


def _emit_block(draft_tokens, num_accepted, target_row, residual, uniform, pad_id) -> VerifyResult:
    """Draw the last token from ``residual`` (falling back to ``target_row`` when it is empty, E2)
    with ``uniform`` (B,), and emit x_1..x_n, that token at position n, pad after."""
    residual_empty = residual.sum(-1) <= torch.finfo(residual.dtype).tiny  # (B,) E2
    last = inverse_cdf(torch.where(residual_empty.unsqueeze(-1), target_row, residual), uniform)  # (B,)
    positions = torch.arange(draft_tokens.shape[1] + 1, device=draft_tokens.device)  # (K+1,)
    padded = torch.nn.functional.pad(draft_tokens, (0, 1), value=pad_id)  # (B, K+1)
    tokens = torch.where(positions < num_accepted.unsqueeze(-1), padded, pad_id)
    tokens = tokens.scatter(1, num_accepted.unsqueeze(-1), last.unsqueeze(-1))
    return VerifyResult(num_accepted=num_accepted, tokens=tokens, residual_empty=residual_empty)


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

    Shapes as in :func:`verify_tokens_with_uniforms`; randomness comes from
    ``generator`` only: B*(K+1) float64 uniforms are drawn from it.  With
    ``validate=True`` (default) the values are checked first (NaN, negative or
    unnormalised rows beyond ``sum_tol``, out-of-range ids, E1) at the cost of
    one host sync; ``validate=False`` skips the value checks (never the shape checks).
    """
    return run_with_generator(
        _verify, draft_tokens, draft_probs, target_probs, generator, extra_uniforms=1, pad_id=pad_id, validate=validate, sum_tol=sum_tol
    )


def run_with_generator(
    core, draft_tokens, draft_probs, target_probs, generator, *, extra_uniforms, pad_id, validate, sum_tol
) -> VerifyResult:
    """Shared front of the chain verifiers: checks, then B*(K+extra_uniforms) float64
    uniforms from ``generator``, then ``core(draft_tokens, draft_probs, target_probs, uniforms, pad_id)``."""
    _check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=validate)
    v.check_generator(generator, target_probs.device)
    batch, num_draft = draft_tokens.shape
    uniforms = torch.rand(
        (batch, num_draft + extra_uniforms), dtype=torch.float64, device=target_probs.device, generator=generator
    )
    return core(draft_tokens.long(), draft_probs, target_probs, uniforms, pad_id)


def verify_greedy(draft_tokens: torch.Tensor, target_scores: torch.Tensor, *, pad_id: int = -1) -> VerifyResult:
    """Greedy verification (E4): accept x_i iff x_i = argmax of target row i, lowest id winning ties.

    draft_tokens: (B, K) int.  target_scores: (B, K+1, V) logits or probabilities
    (any monotone score; -inf allowed, NaN not).  The emitted block is the
    target argmax at positions 0..n, where n is the number of leading matches.
    """
    v.check_tensor("draft_tokens", draft_tokens, dtypes=v.TOKEN_DTYPES, ndim=2)
    if not isinstance(target_scores, torch.Tensor) or not target_scores.is_floating_point():
        raise TypeError(f"target_scores must be a floating torch.Tensor, got {getattr(target_scores, 'dtype', type(target_scores).__name__)}")
    batch, num_draft = draft_tokens.shape
    if target_scores.ndim != 3:
        raise ValueError(f"target_scores must have 3 dimensions (B, K+1, V), got shape {tuple(target_scores.shape)}")
    v.check_shape("target_scores", target_scores, (batch, num_draft + 1, target_scores.shape[-1]), "B, K+1, V")
    v.check_same_device(draft_tokens=draft_tokens, target_scores=target_scores)
    checks = v.DeferredChecks()
    v.add_token_range_check(checks, "draft_tokens", draft_tokens, target_scores.shape[-1])
    if target_scores.numel():
        checks.add(~torch.isnan(target_scores).any(), lambda: "target_scores contain NaN")
        checks.add(
            (target_scores.amax(-1) > -torch.inf).all(), lambda: "target_scores has a row that is -inf everywhere"
        )
    checks.raise_if_failed()

    target_argmax = target_scores.argmax(-1)  # (B, K+1), first maximal index
    matches = draft_tokens.long() == target_argmax[:, :num_draft]  # (B, K)
    num_accepted = matches.long().cumprod(-1).sum(-1)  # (B,)
    positions = torch.arange(num_draft + 1, device=draft_tokens.device)
    tokens = torch.where(positions <= num_accepted.unsqueeze(-1), target_argmax, pad_id)
    return VerifyResult(
        num_accepted=num_accepted,
        tokens=tokens,
        residual_empty=torch.zeros(batch, dtype=torch.bool, device=draft_tokens.device),
    )
