"""Optimal transport view of verification (docs/reference.md §2, §3; docs/reference.md).

The token verifier's joint law of (output, draft) is the optimal plan of
max sum_i Pi_ii s.t. Pi 1 = p, Pi^T 1 = q (F5), whose optimum is beta = 1 - TV (F1).
With k i.i.d. drafts the optimum acceptance is alpha*_k (F7), in closed form by F9-F10.
The LP oracles that cross-check both are in :mod:`specdec.laws.lp`.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_int, as_law_pair


def optimal_plan(target_probs, draft_probs) -> torch.Tensor:
    """(F6) Pi* = diag(m) + (p - m)(q - m)^T / (1 - beta), m = min(p, q); Pi* = diag(p) when beta = 1.

    Rows are the output Y ~ p, columns the draft X ~ q; float64, batched over leading dims.
    """
    target, draft = as_law_pair(target_probs, draft_probs)
    kept = torch.minimum(target, draft)
    excess_target = target - kept  # (p - m), zero where q >= p
    excess_draft = draft - kept  # (q - m), zero where p >= q
    gap = excess_target.sum(-1, keepdim=True).unsqueeze(-1)  # 1 - beta, (..., 1, 1)
    outer = excess_target.unsqueeze(-1) * excess_draft.unsqueeze(-2)
    off_diagonal = torch.where(gap > 0, outer / torch.where(gap > 0, gap, 1.0), 0.0)
    return torch.diag_embed(kept) + off_diagonal


def multidraft_optimum(target_probs, draft_probs, num_drafts: int) -> float:
    """(F9-F10) alpha*_k for k i.i.d. drafts = min_j [1 + P_j - Q_j^k], O(V log V); vectors only.

    Tokens sorted by q/p descending (p = 0 counts as +inf); P_j, Q_j are the cumulative
    target and draft masses of the first j tokens (j = 0..V).  k = 1 gives 1 - TV.
    """
    k = as_int("num_drafts", num_drafts, minimum=1, maximum=1_000_000)
    target, draft = (t.numpy() for t in as_law_pair(target_probs, draft_probs, ndim=1))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # q / p of a subnormal p overflows to inf: its order holds
        ratio = np.where(target > 0, draft / np.where(target > 0, target, 1.0), np.where(draft > 0, np.inf, 0.0))
    order = np.argsort(-ratio, kind="stable")
    cum_target = np.r_[0.0, np.cumsum(target[order])]
    cum_draft = np.r_[0.0, np.cumsum(draft[order])]
    return float(np.clip(np.min(1 + cum_target - cum_draft**k), 0.0, 1.0))
