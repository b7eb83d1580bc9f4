"""Multi-draft verification at one position: k drafts, one emitted token (SPEC §3).

Two lossless schemes, batched over rows and vectorised (the k children are a
short loop of tensor operations; nothing synchronises with the host):

* :func:`verify_kseq` - SpecTr K-SEQ (F11-F13) for k i.i.d. drafts from q:
  accept draft i with probability min(1, p(x_i) / (rho* q(x_i))), the first
  accepted one wins; if none, sample norm((p - rho* q)+).  rho* in [1, k] is the
  root of 1 - (1 - beta(rho))^k = rho beta(rho), beta(rho) = sum min(q, p/rho),
  found by bisection (:func:`kseq_rho`).
* :func:`verify_mss` - SpecInfer multi-step speculative sampling.  i.i.d.
  children (F14): r <- p; child s is accepted iff u q(x_s) < r(x_s), otherwise
  r <- norm((r - q)+); if all are rejected emit Y ~ r.  Distinct deterministic
  children (F15, ``draft_probs=None``): q_s is the point mass on x_s, so accept
  with probability r(x_s), otherwise zero r(x_s) and renormalise.

Exact laws (float64, enumeration over the V^k draft tuples) and the closed-form
acceptances (``kseq_acceptance``: 1 - (1 - beta(rho*))^k; ``mss_acceptance``:
1 - prod_s TV(r_s, q), F14) live here too, so the conformance checks can test
these verifiers like any other.  ``update_residual=False`` in
:func:`mss_law` is the known lossy variant (SPEC §3.4: TV 0.32 at k = 2).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from . import _validation as v
from .exact import _as_float64, _pair
from .sampling import inverse_cdf

BISECTION_STEPS = 64  # halves [1, k] 64 times: below float64 resolution for any k


@dataclass(frozen=True)
class MultiDraftResult:
    token: torch.Tensor  # (B,) int64: the emitted token
    accepted_index: torch.Tensor  # (B,) int64: index of the accepted draft, -1 when every draft was rejected
    residual_empty: torch.Tensor  # (B,) bool: E2 fallback used


# ------------------------------------------------------------------ K-SEQ (F11-F13)


def _beta(target, draft, rho):
    """(F11) beta(rho) = sum_x min(q(x), p(x)/rho); rho broadcast over the last axis."""
    return torch.minimum(draft, target / rho.unsqueeze(-1)).sum(-1)


def kseq_rho(target_probs: torch.Tensor, draft_probs: torch.Tensor, num_drafts: int) -> torch.Tensor:
    """(F11) rho* per row by bisection on [1, k]: the root of 1 - (1 - beta)^k - rho beta (decreasing in rho).

    (..., V), (..., V) -> (...).  When the gap is <= 0 already at rho = 1 (e.g. p == q, k = 1), rho* = 1.
    """
    lo = torch.ones(target_probs.shape[:-1], dtype=target_probs.dtype, device=target_probs.device)
    hi = torch.full_like(lo, float(num_drafts))

    def gap(rho):
        beta = _beta(target_probs, draft_probs, rho)
        return 1 - (1 - beta) ** num_drafts - rho * beta

    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        positive = gap(mid) > 0
        lo = torch.where(positive, mid, lo)
        hi = torch.where(positive, hi, mid)
    return torch.where(gap(torch.ones_like(lo)) <= 0, torch.ones_like(lo), (lo + hi) / 2)


def kseq_acceptance(target_probs, draft_probs, num_drafts: int) -> float:
    """Closed form: 1 - (1 - beta(rho*))^k (SPEC §3.3), float64."""
    target, draft = _pair(target_probs, draft_probs)
    num_drafts = v.check_num_drafts(num_drafts)
    rho = kseq_rho(target, draft, num_drafts)
    return float(1 - (1 - _beta(target, draft, rho)) ** num_drafts)


# ------------------------------------------------------------------ shared checks and tail


def _check_multidraft(draft_tokens, draft_probs, target_probs, generator, *, need_draft_probs: bool, validate: bool):
    v.check_tensor("target_probs", target_probs, dtypes=v.PROB_DTYPES, ndim=2)
    v.check_tensor("draft_tokens", draft_tokens, dtypes=v.TOKEN_DTYPES, ndim=2)
    batch, vocab = target_probs.shape
    v.check_shape("draft_tokens", draft_tokens, (batch, draft_tokens.shape[1]), "B, k")
    if draft_tokens.shape[1] < 1:
        raise ValueError(f"draft_tokens must hold at least one draft per row (k >= 1), got shape {tuple(draft_tokens.shape)}")
    if draft_probs is None and need_draft_probs:
        raise ValueError("draft_probs is required: K-SEQ needs the law the i.i.d. drafts were drawn from")
    if draft_probs is not None:
        v.check_tensor("draft_probs", draft_probs, dtypes=(target_probs.dtype,), ndim=2)
        v.check_shape("draft_probs", draft_probs, (batch, vocab), "B, V")
    v.check_same_device(draft_tokens=draft_tokens, draft_probs=draft_probs, target_probs=target_probs)
    v.check_generator(generator, target_probs.device)
    if validate:
        checks = v.DeferredChecks()
        tol = v.default_sum_tol(target_probs.dtype)
        v.add_token_range_check(checks, "draft_tokens", draft_tokens, vocab)
        v.add_probability_checks(checks, "target_probs", target_probs, tol)
        if draft_probs is not None:
            v.add_probability_checks(checks, "draft_probs", draft_probs, tol)
            safe = draft_tokens.long().clamp(0, vocab - 1)
            v.add_proposal_check(checks, draft_tokens, draft_probs.gather(-1, safe))
        checks.raise_if_failed()
    return draft_tokens.long()


def _finish(draft_tokens, accepted, residual, fallback, last_uniform) -> MultiDraftResult:
    """First accepted draft wins; otherwise one draw from the residual (E2: the fallback row when empty)."""
    any_accepted = accepted.any(-1)
    first = accepted.long().argmax(-1)  # index of the first True
    empty = residual.sum(-1) <= 0
    drawn = inverse_cdf(torch.where(empty.unsqueeze(-1), fallback, residual), last_uniform)
    token = torch.where(any_accepted, draft_tokens.gather(1, first.unsqueeze(-1)).squeeze(-1), drawn)
    return MultiDraftResult(
        token=token,
        accepted_index=torch.where(any_accepted, first, -1),
        residual_empty=~any_accepted & empty,
    )


def verify_kseq(draft_tokens, draft_probs, target_probs, generator, *, validate: bool = True) -> MultiDraftResult:
    """SpecTr K-SEQ (F11-F13).  draft_tokens (B, k) i.i.d. from draft_probs (B, V); target_probs (B, V)."""
    tokens = _check_multidraft(draft_tokens, draft_probs, target_probs, generator, need_draft_probs=True, validate=validate)
    batch, k = tokens.shape
    uniforms = torch.rand((batch, k + 1), dtype=torch.float64, device=target_probs.device, generator=generator)
    target, draft = target_probs.double(), draft_probs.double()
    rho = kseq_rho(target, draft, k)  # (B,)
    p_x, q_x = target.gather(1, tokens), draft.gather(1, tokens)
    accepted = uniforms[:, :k] * rho.unsqueeze(-1) * q_x < p_x  # (F12), strict (E3)
    residual = (target - rho.unsqueeze(-1) * draft).clamp_min(0)  # (F13)
    return _finish(tokens, accepted, residual, target, uniforms[:, k])


# ------------------------------------------------------------------ SpecInfer MSS (F14, F15)


def _mss_residuals(target, draft_rows):
    """r_1 = p; r_{s+1} = norm((r_s - q_s)+), E2: kept as r_s when empty.  Returns (k+1) rows (..., V)."""
    rows = [target]
    for draft in draft_rows:
        r = rows[-1]
        nxt = (r - draft).clamp_min(0)
        total = nxt.sum(-1, keepdim=True)
        rows.append(torch.where(total > 0, nxt / torch.where(total > 0, total, 1), r))
    return rows


def verify_mss(draft_tokens, draft_probs, target_probs, generator, *, validate: bool = True) -> MultiDraftResult:
    """SpecInfer multi-step speculative sampling at one node.

    draft_probs (B, V): children i.i.d. from it (F14).  draft_probs None: the
    children are distinct deterministic tokens (F15; point masses), e.g. a top-k tree.
    """
    tokens = _check_multidraft(draft_tokens, draft_probs, target_probs, generator, need_draft_probs=False, validate=validate)
    batch, k = tokens.shape
    if draft_probs is None and k > 1:
        ordered = tokens.sort(-1).values
        if validate and bool((ordered[:, 1:] == ordered[:, :-1]).any()):
            raise ValueError("draft_tokens must be distinct within a row for deterministic children (F15)")
    uniforms = torch.rand((batch, k + 1), dtype=torch.float64, device=target_probs.device, generator=generator)
    target = target_probs.double()
    vocab = target.shape[-1]
    if draft_probs is None:
        draft_rows = [torch.nn.functional.one_hot(tokens[:, s], vocab).double() for s in range(k)]
    else:
        draft_rows = [draft_probs.double()] * k
    rows = _mss_residuals(target, draft_rows)
    accepted = torch.stack(
        [uniforms[:, s] * draft_rows[s].gather(1, tokens[:, s: s + 1]).squeeze(1) < rows[s].gather(1, tokens[:, s: s + 1]).squeeze(1) for s in range(k)],
        dim=1,
    )
    return _finish(tokens, accepted, rows[k], rows[k], uniforms[:, k])


def mss_acceptance(target_probs, draft_probs, num_drafts: int) -> float:
    """(F14) 1 - prod_{s=1..k} TV(r_s, q) for i.i.d. children, r_1 = p."""
    target, draft = _pair(target_probs, draft_probs)
    num_drafts = v.check_num_drafts(num_drafts)
    rows = _mss_residuals(target, [draft] * num_drafts)
    rejected = torch.ones((), dtype=torch.float64)
    for r in rows[:-1]:
        rejected = rejected * 0.5 * (r - draft).abs().sum()
    return float(1 - rejected)


# ------------------------------------------------------------------ exact laws by enumeration


def _enumerate(target, draft, num_drafts, per_tuple):
    """Sum over all V^k i.i.d. draft tuples of Q(tuple) * per_tuple(tuple) -> (output law (V,), acceptance)."""
    vocab = target.shape[-1]
    if vocab ** num_drafts > 200_000:
        raise ValueError(f"V^k = {vocab}^{num_drafts} tuples is too many to enumerate (limit 200,000)")
    law = torch.zeros(vocab, dtype=torch.float64)
    acceptance = 0.0
    for drafts in itertools.product(range(vocab), repeat=num_drafts):
        weight = float(torch.prod(draft[list(drafts)]))
        if weight == 0:
            continue
        out, accept = per_tuple(drafts)
        law += weight * out
        acceptance += weight * accept
    return law, acceptance


def kseq_law(target_probs, draft_probs, num_drafts: int) -> tuple[torch.Tensor, float]:
    """Exact (output law, acceptance probability) of K-SEQ by enumeration of the draft tuples."""
    target, draft = _pair(target_probs, draft_probs)
    num_drafts = v.check_num_drafts(num_drafts)
    rho = float(kseq_rho(target, draft, num_drafts))
    residual = (target - rho * draft).clamp_min(0)
    residual = residual / residual.sum() if residual.sum() > 0 else target
    accept = torch.where(draft > 0, torch.clamp(target / (rho * draft), max=1.0), torch.zeros_like(draft))

    def per_tuple(drafts):
        out = torch.zeros_like(target)
        still = 1.0
        for x in drafts:
            out[x] += still * float(accept[x])
            still *= 1 - float(accept[x])
        return out + still * residual, 1 - still

    return _enumerate(target, draft, num_drafts, per_tuple)


def mss_law(target_probs, draft_probs, num_drafts: int, *, update_residual: bool = True) -> tuple[torch.Tensor, float]:
    """Exact (output law, acceptance probability) of MSS with i.i.d. children (F14).

    ``update_residual=False`` keeps r = p after a rejection: the lossy variant
    (SPEC §3.4), whose output law is *not* the target's.
    """
    target, draft = _pair(target_probs, draft_probs)
    num_drafts = v.check_num_drafts(num_drafts)
    rows = _mss_residuals(target, [draft] * num_drafts) if update_residual else [target] * (num_drafts + 1)
    if not update_residual:
        last = (target - draft).clamp_min(0)
        rows[-1] = last / last.sum() if last.sum() > 0 else target

    def per_tuple(drafts):
        out = torch.zeros_like(target)
        still = 1.0
        for s, x in enumerate(drafts):
            a = min(1.0, float(rows[s][x]) / float(draft[x]))
            out[x] += still * a
            still *= 1 - a
        return out + still * rows[num_drafts], 1 - still

    return _enumerate(target, draft, num_drafts, per_tuple)


def distinct_children_law(target_probs, children: list[int]) -> tuple[torch.Tensor, float]:
    """Exact (output law, acceptance) of MSS with distinct deterministic children (F15)."""
    target = _as_float64("target_probs", target_probs)
    out = torch.zeros_like(target)
    r, still = target.clone(), 1.0
    for x in children:
        out[x] += still * float(r[x])
        still *= 1 - float(r[x])
        r[x] = 0
        r = r / r.sum() if r.sum() > 0 else r
    if still > 0:
        out += still * r
    return out, 1 - still
