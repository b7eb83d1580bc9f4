"""Tensors: type, dtype, rank, shape and device at once, and value checks deferred to one host
synchronisation (:class:`DeferredChecks`) (see :mod:`specdec._validation`)."""

from __future__ import annotations

from typing import Callable

import torch

def check_tensor(name: str, value, *, dtypes, ndim: int) -> None:
    """TypeError/ValueError unless ``value`` is a real-device tensor of a dtype in ``dtypes`` and rank ``ndim``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.is_meta:
        raise ValueError(f"{name} is a meta tensor (it has a shape but no values); pass a tensor on a real device")
    if value.dtype not in dtypes:
        allowed = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"{name} must have dtype in ({allowed}), got {value.dtype}")
    if value.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(value.shape)}")


def check_shape(name: str, value: torch.Tensor, expected: tuple[int, ...], meaning: str) -> None:
    if tuple(value.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)} ({meaning}), got {tuple(value.shape)}")


def check_vocabulary(name: str, vocab: int) -> None:
    if vocab < 1:
        raise ValueError(f"{name} must have a vocabulary of at least 1 token, got V={vocab}")


def check_same_device(**tensors: torch.Tensor | None) -> None:
    devices = {k: v.device for k, v in tensors.items() if v is not None}
    if len(set(devices.values())) > 1:
        raise ValueError(f"all tensors must be on one device, got {devices}")


def check_generator(generator, device: torch.device) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if generator.device.type != torch.device(device).type:
        raise ValueError(f"generator is on {generator.device} but the tensors are on {device}")


# ------------------------------------------------------------------ tensor values (one host sync)


class DeferredChecks:
    """Value checks resolved together with a single host synchronisation."""

    def __init__(self) -> None:
        self._validation: list[tuple[torch.Tensor, Callable[[], str]]] = []

    def add(self, ok: torch.Tensor, describe: Callable[[], str]) -> None:
        """``ok`` is a 0-d bool tensor; ``describe()`` builds the error message if it is False."""
        self._validation.append((ok, describe))

    def raise_if_failed(self) -> None:
        if not self._validation:
            return
        flags = torch.stack([ok for ok, _ in self._validation])
        if bool(flags.all()):  # the one host sync
            return
        for ok, describe in self._validation:
            if not bool(ok):
                raise ValueError(describe())


def first_index(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.nonzero(mask)[0])


def distinct_view(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` without its broadcast (stride-0) dimensions: every value it holds, each once.

    ``p.expand(n, K, V)`` repeats one (K, V) block n times; checking the block once
    checks them all.  Error messages then index into this view.
    """
    for dim in range(tensor.ndim - 1):
        if tensor.stride(dim) == 0 and tensor.shape[dim] > 1:
            tensor = tensor.narrow(dim, 0, 1)
    return tensor


def add_probability_checks(checks: DeferredChecks, name: str, probs: torch.Tensor, sum_tol: float) -> None:
    """Finite, non-negative, rows (last dim) summing to one within ``sum_tol``."""
    probs = distinct_view(probs)
    if probs.numel() == 0:
        return
    # amin propagates NaN, so one reduction covers NaN, -inf and negative mass.
    checks.add(probs.amin() >= 0, lambda: describe_bad_entry(name, probs))
    row_error = (probs.sum(-1) - 1.0).abs()  # native dtype: float32 pairwise sums err ~1e-6 << tol
    checks.add(row_error.amax() <= sum_tol, lambda: _describe_bad_sum(name, probs, row_error, sum_tol))


def describe_bad_entry(name: str, probs: torch.Tensor, what: str = "probability") -> str:
    """The first non-finite, else the first negative, entry of ``probs`` (the error path only)."""
    bad = ~torch.isfinite(probs)
    if bool(bad.any()):
        idx = first_index(bad)
        return f"{name} has a non-finite entry {probs[idx].item()} at index {idx}"
    idx = first_index(probs < 0)
    return f"{name} has a negative {what} {probs[idx].item()!r} at index {idx}"


def _describe_bad_sum(name: str, probs: torch.Tensor, row_error: torch.Tensor, sum_tol: float) -> str:
    if not bool(torch.isfinite(probs).all()):
        return describe_bad_entry(name, probs)
    idx = first_index(~(row_error <= sum_tol))
    total = probs[idx].sum(dtype=torch.float64).item()
    return (
        f"{name} row {idx} sums to {total!r}, not 1 within sum_tol={sum_tol:g}; "
        "renormalise the probabilities (in float64 for float64 inputs)"
    )


def add_token_range_check(checks: DeferredChecks, name: str, tokens: torch.Tensor, vocab_size: int) -> None:
    """Ids in [0, vocab_size), compared in int64 (in the ids' own dtype V could wrap: 256 is 0 in uint8)."""
    if tokens.numel() == 0:
        return
    tokens = tokens.long()
    in_range = (tokens.amin() >= 0) & (tokens.amax() < vocab_size)

    def describe() -> str:
        idx = first_index((tokens < 0) | (tokens >= vocab_size))
        return f"{name} has token id {int(tokens[idx])} at index {idx}, outside [0, {vocab_size})"

    checks.add(in_range, describe)


def add_proposal_check(checks: DeferredChecks, draft_tokens: torch.Tensor, draft_at_draft: torch.Tensor) -> None:
    """E1: a drafted token with draft probability 0 cannot have been sampled from draft_probs."""
    if draft_at_draft.numel() == 0:
        return

    def describe() -> str:
        idx = first_index(draft_at_draft <= 0)
        token = int(draft_tokens[idx])
        return (
            f"proposal mismatch (E1): draft_probs{list(idx) + [token]} = 0 for drafted token "
            f"{token} at {idx}; draft_tokens were not sampled from draft_probs"
        )

    checks.add((draft_at_draft > 0).all(), describe)


# ------------------------------------------------------------------ host-side laws (float64)


