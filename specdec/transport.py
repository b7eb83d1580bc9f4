"""Optimal transport view of one verification step (SPEC §2).

The token verifier's joint law of (output, draft) is the optimal plan of
max sum_i Pi_ii s.t. Pi 1 = p, Pi^T 1 = q (F5), whose optimum is beta = 1 - TV (F1).
"""

from __future__ import annotations

import torch

from .exact import _pair


def optimal_plan(target_probs, draft_probs) -> torch.Tensor:
    """(F6) Pi* = diag(m) + (p - m)(q - m)^T / (1 - beta), m = min(p, q); Pi* = diag(p) when beta = 1.

    Rows are the output Y ~ p, columns the draft X ~ q; float64, batched over leading dims.
    """
    target, draft = _pair(target_probs, draft_probs)
    kept = torch.minimum(target, draft)
    excess_target = target - kept  # (p - m), zero where q >= p
    excess_draft = draft - kept  # (q - m), zero where p >= q
    gap = excess_target.sum(-1, keepdim=True).unsqueeze(-1)  # 1 - beta, (..., 1, 1)
    outer = excess_target.unsqueeze(-1) * excess_draft.unsqueeze(-2)
    off_diagonal = torch.where(gap > 0, outer / torch.where(gap > 0, gap, 1.0), 0.0)
    return torch.diag_embed(kept) + off_diagonal
