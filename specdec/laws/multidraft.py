"""Exact laws and closed forms of multi-draft verification at one position (docs/reference.md §3).

* K-SEQ (SpecTr, F11-F13): :func:`kseq_rho` (rho* by vectorised bisection on [1, k]),
  :func:`kseq_acceptance` = 1 - (1 - beta(rho*))^k, :func:`kseq_law` by enumeration.
* SpecInfer MSS: :func:`mss_residuals` (r_1 = p, r_{s+1} = norm((r_s - q_s)+)),
  :func:`mss_acceptance` = 1 - prod_s TV(r_s, q) for i.i.d. children (F14), in closed form at any k,
  :func:`mss_law` by enumeration (``update_residual=False``: the lossy variant, L6),
  :func:`distinct_children_law` for distinct deterministic children (F15).

Laws are float64, by enumeration of the V^k i.i.d. draft tuples (at most 200,000).
The verifiers are :mod:`specdec.verify.multidraft`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

from .._validation import as_int, as_law, as_law_pair
from .token import residual_is_empty

BISECTION_STEPS = 64  # halves [1, k] 64 times: below float64 resolution for any k
MAX_TUPLES = 200_000
MAX_DRAFTS = 1_000_000  # k beyond this is not a decoding scheme; it would overflow float arithmetic


def _beta(target, draft, rho):
    """(F11) beta(rho) = sum_x min(q(x), p(x)/rho); rho broadcast over the last axis."""
    return torch.minimum(draft, target / rho.unsqueeze(-1)).sum(-1)


def kseq_rho(target_probs: torch.Tensor, draft_probs: torch.Tensor, num_drafts: int) -> torch.Tensor:
    """(F11) rho* per row by bisection on [1, k]: the root of 1 - (1 - beta)^k - rho beta (decreasing in rho).

    (..., V), (..., V) tensors (no validation: the verifiers call it on checked rows) -> (...).
    When the gap is <= 0 already at rho = 1 (e.g. p == q, or k = 1), rho* = 1.
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


def _vectors(target_probs, draft_probs, num_drafts) -> tuple[torch.Tensor, torch.Tensor, int, torch.dtype]:
    """(target, draft, k, the dtype the rows came in: their precision for E2)."""
    target, draft, dtype = as_law_pair(target_probs, draft_probs, ndim=1, with_dtype=True)
    return target, draft, as_int("num_drafts", num_drafts, minimum=1, maximum=MAX_DRAFTS), dtype


def kseq_acceptance(target_probs, draft_probs, num_drafts: int) -> float:
    """Closed form of K-SEQ's acceptance: 1 - (1 - beta(rho*))^k (docs/reference.md §3.3); vectors, float64."""
    target, draft, k, _ = _vectors(target_probs, draft_probs, num_drafts)
    rho = kseq_rho(target, draft, k)
    return float(1 - (1 - _beta(target, draft, rho)) ** k)


def mss_residuals(target: torch.Tensor, draft_rows: list[torch.Tensor], dtype: torch.dtype) -> list[torch.Tensor]:
    """r_1 = p; r_{s+1} = norm((r_s - q_s)+), kept as r_s when empty (E2, for rows given in ``dtype``:
    :func:`specdec.laws.token.residual_is_empty`).  k+1 rows (..., V)."""
    rows = [target]
    for draft in draft_rows:
        r = rows[-1]
        nxt = (r - draft).clamp_min(0)
        total = nxt.sum(-1, keepdim=True)
        empty = residual_is_empty(total, dtype)
        rows.append(torch.where(empty, r, nxt / torch.where(empty, 1, total)))
    return rows


def mss_acceptance(target_probs, draft_probs, num_drafts: int) -> float:
    """(F14) 1 - prod_{s=1..k} TV(r_s, q) for i.i.d. children, r_1 = p; vectors, float64, any k.

    By induction r_s = (p - l_s q)+ / Z(l_s), with Z(l) = sum_x (p(x) - l q(x))+, l_1 = 0 and
    l_{s+1} = l_s + Z(l_s); then TV(r_s, q) = Z(l_{s+1}) / Z(l_s) and the product telescopes to
    Z(l_{k+1}).  Z is linear in l between the ratios p/q, and on each piece the recursion is affine
    with a closed form, so the k steps cost O(V log V) however large k is.
    """
    target, draft, k, _ = _vectors(target_probs, draft_probs, num_drafts)
    return 1.0 - _mss_rejection(target.numpy(), draft.numpy(), k)


def _mss_rejection(target, draft, steps: int) -> float:
    """Z(l_{k+1}) of :func:`mss_acceptance`, piece by piece (numpy float64 vectors, k = ``steps``).

    On a piece with support S, l -> l + q(S) (f - l) with f = p(S) / q(S): after m steps l has moved
    by (f - l)(1 - (1 - q(S))^m), computed with expm1/log1p so that a tiny q(S) (f huge) loses nothing.
    """
    keep = target > 0  # tokens with p = 0 never carry residual mass
    p, q = target[keep], draft[keep]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    ratio, cum_p, cum_q = ratio[order], np.cumsum(p[order]), np.cumsum(q[order])
    lam = 0.0  # l_s; the residual's support is S = {ratio > l_s}, the first j tokens in this order
    while True:
        j = int(np.searchsorted(-ratio, -lam, side="left"))  # #{ratio > lam}
        if j == 0:
            return 0.0  # nothing left: the last residual was empty (E2) and every later TV is 0
        mass_p, mass_q = float(cum_p[j - 1]), float(cum_q[j - 1])
        if mass_q == 0.0:
            return mass_p  # only tokens the draft never proposes: Z stays p(S)
        z = max(mass_p - lam * mass_q, 0.0)  # Z(l) = p(S) - l q(S) > 0 on this piece, never through a ratio that
        if steps == 0:                          # overflows when q(S) is subnormal (p(S) / q(S) = inf)
            return z
        if mass_q >= 1.0:  # the whole draft mass in S: one step reaches the fixed point
            inside = 1
        else:  # the first m with l_m >= the smallest ratio in S, where S shrinks (never if all are equal)
            fraction = (float(ratio[j - 1]) - lam) * mass_q / z if z > 0 else math.inf  # (ratio_j - l) / gap
            inside = math.inf if not fraction < 1 else max(1, math.ceil(math.log1p(-fraction) / math.log1p(-mass_q)))
        if inside > steps:  # l_{k+1} is still on this piece
            return z * math.exp(steps * math.log1p(-mass_q))
        gap = z / mass_q  # finite here: inside <= steps needs the piece to end, so q(S) is not negligible
        lam += gap if mass_q >= 1.0 else -gap * math.expm1(inside * math.log1p(-mass_q))
        steps -= inside


def _enumerate(target, draft, num_drafts, per_tuple):
    """Sum over all V^k i.i.d. draft tuples of Q(tuple) * per_tuple(tuple) -> (output law (V,), acceptance)."""
    vocab = target.shape[-1]
    if vocab**num_drafts > MAX_TUPLES:
        raise ValueError(f"V^k = {vocab}^{num_drafts} tuples is too many to enumerate (limit {MAX_TUPLES:,})")
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
    target, draft, k, dtype = _vectors(target_probs, draft_probs, num_drafts)
    rho = float(kseq_rho(target, draft, k))
    residual = (target - rho * draft).clamp_min(0)
    residual = target if residual_is_empty(float(residual.sum()), dtype) else residual / residual.sum()  # E2
    accept = torch.where(draft > 0, torch.clamp(target / (rho * draft), max=1.0), torch.zeros_like(draft))

    def per_tuple(drafts):
        out = torch.zeros_like(target)
        still = 1.0
        for x in drafts:
            out[x] += still * float(accept[x])
            still *= 1 - float(accept[x])
        return out + still * residual, 1 - still

    return _enumerate(target, draft, k, per_tuple)


def mss_law(target_probs, draft_probs, num_drafts: int, *, update_residual: bool = True) -> tuple[torch.Tensor, float]:
    """Exact (output law, acceptance probability) of MSS with i.i.d. children (F14).

    ``update_residual=False`` keeps r = p after a rejection and draws the final token from
    norm((p - q)+): the lossy variant (L6), whose output law is *not* the target's.
    """
    target, draft, k, dtype = _vectors(target_probs, draft_probs, num_drafts)
    if not isinstance(update_residual, bool):
        raise TypeError(f"update_residual must be a bool, got {type(update_residual).__name__}")
    rows = mss_residuals(target, [draft] * k, dtype) if update_residual else [target] * (k + 1)
    if not update_residual:
        last = (target - draft).clamp_min(0)
        rows[-1] = target if residual_is_empty(float(last.sum()), dtype) else last / last.sum()  # E2

    def per_tuple(drafts):
        out = torch.zeros_like(target)
        still = 1.0
        for s, x in enumerate(drafts):
            a = min(1.0, float(rows[s][x]) / float(draft[x]))
            out[x] += still * a
            still *= 1 - a
        return out + still * rows[k], 1 - still

    return _enumerate(target, draft, k, per_tuple)


def distinct_children_law(target_probs, children) -> tuple[torch.Tensor, float]:
    """Exact (output law, acceptance) of MSS with distinct deterministic children (F15).

    ``children``: distinct token ids in [0, V).  Acceptance = p(children) for any such set.
    """
    target = as_law("target_probs", target_probs, ndim=1)
    vocab = target.shape[0]
    if isinstance(children, (str, bytes)) or not hasattr(children, "__iter__"):
        raise TypeError(f"children must be a sequence of token ids, got {type(children).__name__}")
    ids = [as_int(f"children[{i}]", x, minimum=0, maximum=vocab - 1) for i, x in enumerate(children)]
    if not ids or len(set(ids)) != len(ids):
        raise ValueError(f"children must be a non-empty list of distinct token ids, got {ids}")
    # r_s is p without the children before s, renormalised: r_s(x) = p(x) / m_s with m_s the mass not yet
    # zeroed, summed (never subtracted) from the non-children and the children from s on.  O(V + k).
    others = torch.ones(vocab, dtype=torch.bool)
    others[ids] = False
    rest = float(target[others].sum())
    child = target[ids].tolist()
    remaining = [rest + float(t) for t in torch.tensor(child, dtype=torch.float64).flip(0).cumsum(0).flip(0)]
    out, still = torch.zeros_like(target), 1.0
    for s, x in enumerate(ids):
        if remaining[s] <= 0:
            break  # r is empty: every later child has r(x) = 0
        accept = min(1.0, child[s] / remaining[s])
        out[x] += still * accept
        still *= 1 - accept
    if still > 0 and rest > 0:
        out += still * torch.where(others, target, 0.0) / rest
    return out, 1 - still
