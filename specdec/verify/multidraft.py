"""Multi-draft verification at one position: k drafts, one emitted token (docs/reference.md §3).

* :func:`verify_kseq` - SpecTr K-SEQ (F11-F13) for k i.i.d. drafts from q: accept
  draft i with probability min(1, p(x_i) / (rho* q(x_i))), the first accepted one
  wins; if none is, sample norm((p - rho* q)+).  rho* is the root of F11
  (:func:`specdec.laws.multidraft.kseq_rho`).
* :func:`verify_mss` - SpecInfer multi-step speculative sampling.  i.i.d. children
  (F14): r <- p; child s is accepted iff u q(x_s) < r(x_s), else r <- norm((r - q)+);
  if all are rejected emit Y ~ r.  Distinct deterministic children (F15,
  ``draft_probs=None``): q_s is the point mass on x_s.

Batched over rows and vectorised; the k children are a short loop of tensor
operations (the r-updates are sequential in s); nothing synchronises with the host.
Exact laws and closed forms: :mod:`specdec.laws.multidraft`.
"""

from __future__ import annotations

import torch

from .. import _validation as c
from ..laws.multidraft import kseq_rho, mss_residuals
from ..laws.token import residual_is_empty
from ..sampling import inverse_cdf
from .result import MultiDraftResult


def _check(draft_tokens, draft_probs, target_probs, generator, *, need_draft_probs: bool, validate: bool) -> torch.Tensor:
    c.check_tensor("target_probs", target_probs, dtypes=c.PROB_DTYPES, ndim=2)
    c.check_tensor("draft_tokens", draft_tokens, dtypes=c.TOKEN_DTYPES, ndim=2)
    batch, vocab = target_probs.shape
    c.check_vocabulary("target_probs", vocab)
    c.check_shape("draft_tokens", draft_tokens, (batch, draft_tokens.shape[1]), "B, k")
    if draft_tokens.shape[1] < 1:
        raise ValueError(f"draft_tokens must hold at least one draft per row (k >= 1), got shape {tuple(draft_tokens.shape)}")
    if draft_probs is None and need_draft_probs:
        raise ValueError("draft_probs is required: K-SEQ needs the law the i.i.d. drafts were drawn from")
    if draft_probs is not None:
        c.check_tensor("draft_probs", draft_probs, dtypes=(target_probs.dtype,), ndim=2)
        c.check_shape("draft_probs", draft_probs, (batch, vocab), "B, V")
    c.check_same_device(draft_tokens=draft_tokens, draft_probs=draft_probs, target_probs=target_probs)
    c.check_generator(generator, target_probs.device)
    tokens = draft_tokens.long()  # every integer dtype, compared in int64
    if validate:
        checks = c.DeferredChecks()
        tol = c.sum_tolerance(target_probs.dtype)
        c.add_token_range_check(checks, "draft_tokens", tokens, vocab)
        c.add_probability_checks(checks, "target_probs", target_probs, tol)
        if draft_probs is not None:
            c.add_probability_checks(checks, "draft_probs", draft_probs, tol)
            c.add_proposal_check(checks, tokens, draft_probs.gather(-1, tokens.clamp(0, vocab - 1)))
        elif tokens.shape[1] > 1:
            ordered = tokens.sort(-1).values
            checks.add(
                (ordered[:, 1:] != ordered[:, :-1]).all(),
                lambda: "draft_tokens must be distinct within a row for deterministic children (F15)",
            )
        checks.raise_if_failed()
    return tokens


def _finish(draft_tokens, accepted, residual, fallback, last_uniform, dtype) -> MultiDraftResult:
    """The first accepted draft wins; otherwise one draw from the residual (E2: the fallback row when
    empty, by the rule for rows given in ``dtype``)."""
    any_accepted = accepted.any(-1)
    first = accepted.long().argmax(-1)  # index of the first True
    empty = residual_is_empty(residual.sum(-1), dtype)
    drawn = inverse_cdf(torch.where(empty.unsqueeze(-1), fallback, residual), last_uniform, validate=False)
    token = torch.where(any_accepted, draft_tokens.gather(1, first.unsqueeze(-1)).squeeze(-1), drawn)
    return MultiDraftResult(token=token, accepted_index=torch.where(any_accepted, first, -1), residual_empty=~any_accepted & empty)


def verify_kseq(draft_tokens, draft_probs, target_probs, generator, *, validate: bool = True) -> MultiDraftResult:
    """SpecTr K-SEQ (F11-F13).  draft_tokens (B, k) i.i.d. from draft_probs (B, V); target_probs (B, V)."""
    tokens = _check(draft_tokens, draft_probs, target_probs, generator, need_draft_probs=True, validate=validate)
    batch, k = tokens.shape
    uniforms = torch.rand((batch, k + 1), dtype=torch.float64, device=target_probs.device, generator=generator)
    target, draft = target_probs.double(), draft_probs.double()
    rho = kseq_rho(target, draft, k)  # (B,) (F11)
    p_x, q_x = target.gather(1, tokens), draft.gather(1, tokens)
    accepted = uniforms[:, :k] * rho.unsqueeze(-1) * q_x < p_x  # (F12), strict (E3)
    residual = (target - rho.unsqueeze(-1) * draft).clamp_min(0)  # (F13)
    return _finish(tokens, accepted, residual, target, uniforms[:, k], target_probs.dtype)


def verify_mss(draft_tokens, draft_probs, target_probs, generator, *, validate: bool = True) -> MultiDraftResult:
    """SpecInfer multi-step speculative sampling at one node.

    draft_probs (B, V): the children are i.i.d. from it (F14).  draft_probs None: the
    children are distinct deterministic tokens (F15, point masses), e.g. a top-k tree.
    """
    tokens = _check(draft_tokens, draft_probs, target_probs, generator, need_draft_probs=False, validate=validate)
    batch, k = tokens.shape
    uniforms = torch.rand((batch, k + 1), dtype=torch.float64, device=target_probs.device, generator=generator)
    target = target_probs.double()
    vocab = target.shape[-1]
    if draft_probs is None:
        draft_rows = [torch.nn.functional.one_hot(tokens[:, s], vocab).double() for s in range(k)]
    else:
        draft_rows = [draft_probs.double()] * k
    rows = mss_residuals(target, draft_rows, target_probs.dtype)  # r_1 = p, r_2, ..., r_{k+1}
    accepted = torch.stack(
        [
            uniforms[:, s] * draft_rows[s].gather(1, tokens[:, s : s + 1]).squeeze(1)
            < rows[s].gather(1, tokens[:, s : s + 1]).squeeze(1)
            for s in range(k)
        ],
        dim=1,
    )  # (B, k)
    return _finish(tokens, accepted, rows[k], rows[k], uniforms[:, k], target_probs.dtype)
