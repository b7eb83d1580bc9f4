"""Greedy verification (E4, docs/reference.md): the explicit argmax path, with a fixed tie-break (lowest id).

Not softmax(logits / 1e-8): that overflows and splits ties.  A draft is accepted
iff it equals the target argmax; the emitted block is the target argmax at
positions 0..n, where n is the number of leading matches.
"""

from __future__ import annotations

import torch

from .. import _validation as c
from .result import VerifyResult


def verify_greedy(draft_tokens: torch.Tensor, target_scores: torch.Tensor, *, pad_id: int = -1) -> VerifyResult:
    """Greedy verification (E4).  draft_tokens (B, K) int; target_scores (B, K+1, V) logits or
    probabilities (any monotone score; -inf allowed, NaN not).  One host sync (validation)."""
    c.check_tensor("draft_tokens", draft_tokens, dtypes=c.TOKEN_DTYPES, ndim=2)
    if not isinstance(target_scores, torch.Tensor) or not target_scores.is_floating_point():
        got = getattr(target_scores, "dtype", type(target_scores).__name__)
        raise TypeError(f"target_scores must be a floating torch.Tensor, got {got}")
    c.check_tensor("target_scores", target_scores, dtypes=(target_scores.dtype,), ndim=3)
    batch, num_draft = draft_tokens.shape
    c.check_shape("target_scores", target_scores, (batch, num_draft + 1, target_scores.shape[-1]), "B, K+1, V")
    c.check_vocabulary("target_scores", target_scores.shape[-1])
    c.check_same_device(draft_tokens=draft_tokens, target_scores=target_scores)
    pad_id = c.as_pad_id(pad_id)
    checks = c.DeferredChecks()
    c.add_token_range_check(checks, "draft_tokens", draft_tokens, target_scores.shape[-1])
    if target_scores.numel():
        checks.add(~torch.isnan(target_scores).any(), lambda: "target_scores contain NaN")
        checks.add((target_scores.amax(-1) > -torch.inf).all(), lambda: "target_scores has a row that is -inf everywhere")
    checks.raise_if_failed()

    target_argmax = target_scores.argmax(-1)  # (B, K+1), the first maximal index
    matches = draft_tokens.long() == target_argmax[:, :num_draft]  # (B, K)
    num_accepted = matches.long().cumprod(-1).sum(-1)  # (B,)
    positions = torch.arange(num_draft + 1, device=draft_tokens.device)
    tokens = torch.where(positions <= num_accepted.unsqueeze(-1), target_argmax, pad_id)
    return VerifyResult(num_accepted, tokens, torch.zeros(batch, dtype=torch.bool, device=draft_tokens.device))
