"""Small helpers for transformers causal LMs, shared by the laws, the decoding loop and the adapters."""

from __future__ import annotations

import torch


def is_causal_lm(model) -> bool:
    return hasattr(model, "config") and callable(model) and hasattr(model, "parameters")


def check_causal_lm(name: str, model) -> None:
    if not is_causal_lm(model):
        raise TypeError(f"{name} must be a transformers causal LM (callable, with .config), got {type(model).__name__}")


def model_vocab_size(model) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.vocab_size)


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def check_logits(logits: torch.Tensor, who: str) -> torch.Tensor:
    """Raise a ValueError naming the model when its logits hold NaN (one host sync)."""
    if bool(torch.isnan(logits).any()):
        raise ValueError(f"the {who} model produced NaN logits; its next-token distribution is undefined")
    return logits
