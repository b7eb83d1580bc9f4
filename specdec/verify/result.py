"""Result types of the verifiers.  A third party's verifier need not use them: the
conformance engine reads only the fields named by :mod:`specdec.protocols`."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of one token-level verification step for B rows with K drafts each."""

    num_accepted: torch.Tensor  # (B,) int64 in [0, K]: accepted draft tokens per row
    tokens: torch.Tensor  # (B, K+1) int64: accepted drafts, then the residual/bonus token, then pad_id
    residual_empty: torch.Tensor | None = None  # (B,) bool: E2, the residual was empty and p was used

    @property
    def num_emitted(self) -> torch.Tensor:
        """(B,) int64: tokens emitted per row, always num_accepted + 1."""
        return self.num_accepted + 1


@dataclass(frozen=True)
class MultiDraftResult:
    """Outcome of one multi-draft verification step (SPEC §3) for B rows with k drafts each."""

    token: torch.Tensor  # (B,) int64: the emitted token
    accepted_index: torch.Tensor  # (B,) int64: index of the accepted draft, -1 when every draft was rejected
    residual_empty: torch.Tensor | None = None  # (B,) bool: E2 fallback used
