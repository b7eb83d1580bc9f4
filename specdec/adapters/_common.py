"""What every adapter of a peer's token verifier checks before calling it."""

from __future__ import annotations

import torch

from .._checks import as_pad_id, check_generator
from ..verify import validate_token_inputs


def check_adapter_inputs(draft_tokens, draft_probs, target_probs, generator, pad_id, validate: bool) -> int:
    """:func:`specdec.verify_tokens`' checks (values only when ``validate``), the generator on the
    tensors' device, and ``pad_id``; returns the pad id as an int."""
    validate_token_inputs(draft_tokens, draft_probs, target_probs, values=validate)
    check_generator(generator, target_probs.device)
    return as_pad_id(pad_id)


def repad(tokens: torch.Tensor, pad_id: int, placeholder: int = -1) -> torch.Tensor:
    """int64 tokens with the peer's ``placeholder`` replaced by ``pad_id``."""
    tokens = tokens.to(torch.int64)
    return tokens if pad_id == placeholder else torch.where(tokens == placeholder, pad_id, tokens)


def import_peer(module: str, attr: str, requirement: str):
    """``module.attr`` of a peer's package, imported on first use; an ImportError names the version
    the adapter was written against."""
    import importlib

    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as error:  # pragma: no cover - exercised only where the peer is absent
        raise ImportError(f"this adapter needs {requirement}: {error}") from None
