"""Result types of the verifiers.  A third party's verifier need not use them: the
conformance engine reads only the fields named by :mod:`specdec.protocols`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..protocols import ContractError


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
    """Outcome of one multi-draft verification step (docs/reference.md §3) for B rows with k drafts each."""

    token: torch.Tensor  # (B,) int64: the emitted token
    accepted_index: torch.Tensor  # (B,) int64: index of the accepted draft, -1 when every draft was rejected
    residual_empty: torch.Tensor | None = None  # (B,) bool: E2 fallback used


def read_verification(out, batch: int, num_draft_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, K+1), num_accepted (B,)) as int64 from what a TokenVerifier returned: types,
    shapes and dtypes checked without a host sync; a :class:`ContractError` names the Protocol."""
    tokens, accepted = getattr(out, "tokens", None), getattr(out, "num_accepted", None)
    if not isinstance(tokens, torch.Tensor) or not isinstance(accepted, torch.Tensor):
        raise ContractError(
            f"the verifier returned {type(out).__name__}; a TokenVerifier (specdec.protocols.TokenVerifier) returns an "
            "object with tensors .tokens (B, K+1) and .num_accepted (B,), e.g. specdec.VerifyResult"
        )
    if tuple(tokens.shape) != (batch, num_draft_tokens + 1) or tuple(accepted.shape) != (batch,):
        raise ContractError(
            f"the verifier returned tokens of shape {tuple(tokens.shape)} and num_accepted of shape {tuple(accepted.shape)}; "
            f"a TokenVerifier returns ({batch}, {num_draft_tokens + 1}) and ({batch},) for these inputs"
        )
    if tokens.is_floating_point() or tokens.is_complex() or accepted.is_floating_point() or accepted.is_complex():
        raise ContractError(f"the verifier returned {tokens.dtype} tokens and {accepted.dtype} num_accepted; a TokenVerifier returns integers")
    return tokens.long(), accepted.long()
