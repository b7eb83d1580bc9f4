"""Input validation shared by every public entry point.

Two kinds of check:

* metadata (type, dtype, rank, shape): raised at once, no device work;
* values (NaN, negative mass, sums, token ranges, E1 proposal mismatch): each
  check is a 0-d boolean tensor collected in a :class:`DeferredChecks`; all of
  them are resolved with **one** host synchronisation.  Only when a check fails
  is the offending entry located (more syncs, on the error path only).

Every error names the argument and the value, as ``ValueError``/``TypeError``.
"""

from __future__ import annotations

import operator
from typing import Callable

import torch

PROB_DTYPES = (torch.float32, torch.float64)
TOKEN_DTYPES = (torch.int64, torch.int32, torch.int16, torch.uint8)

# |sum(probs) - 1| allowed per row before a ValueError (stated in the README).
DEFAULT_SUM_TOL = {torch.float32: 1e-4, torch.float64: 1e-9}


def default_sum_tol(dtype: torch.dtype) -> float:
    return DEFAULT_SUM_TOL[dtype]


def check_tensor(name: str, value, *, dtypes, ndim: int) -> None:
    """Raise TypeError/ValueError unless ``value`` is a tensor of a dtype in ``dtypes`` and rank ``ndim``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        allowed = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"{name} must have dtype in ({allowed}), got {value.dtype}")
    if value.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(value.shape)}")


def check_num_drafts(num_drafts) -> int:
    """k, the number of drafts per position in multi-draft schemes: an integer >= 1."""
    try:
        k = operator.index(num_drafts)  # int or numpy integer; not float, not bool
    except TypeError:
        k = 0
    if isinstance(num_drafts, bool) or k < 1:
        raise ValueError(f"num_drafts must be an integer >= 1, got {num_drafts!r}")
    return k


def check_shape(name: str, value: torch.Tensor, expected: tuple[int, ...], meaning: str) -> None:
    if tuple(value.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)} ({meaning}), got {tuple(value.shape)}")


def check_same_device(**tensors: torch.Tensor | None) -> None:
    present = {k: v for k, v in tensors.items() if v is not None}
    devices = {k: v.device for k, v in present.items()}
    if len(set(devices.values())) > 1:
        raise ValueError(f"all tensors must be on one device, got {devices}")


def check_generator(generator, device: torch.device) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if torch.device(generator.device).type != device.type:
        raise ValueError(f"generator is on {generator.device} but the tensors are on {device}")


class DeferredChecks:
    """Value checks resolved together with a single host synchronisation."""

    def __init__(self) -> None:
        self._checks: list[tuple[torch.Tensor, Callable[[], str]]] = []

    def add(self, ok: torch.Tensor, describe: Callable[[], str]) -> None:
        """``ok`` is a 0-d bool tensor; ``describe()`` builds the error message if it is False."""
        self._checks.append((ok, describe))

    def raise_if_failed(self) -> None:
        if not self._checks:
            return
        flags = torch.stack([ok for ok, _ in self._checks])
        if bool(flags.all()):  # the one host sync
            return
        for ok, describe in self._checks:
            if not bool(ok):
                raise ValueError(describe())


def _first_index(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.nonzero(mask)[0])


def add_probability_checks(checks: DeferredChecks, name: str, probs: torch.Tensor, sum_tol: float) -> None:
    """Finite, non-negative, rows summing to one within ``sum_tol`` (last dim is the vocabulary)."""
    if probs.numel() == 0:
        return
    # amin propagates NaN, so one reduction covers NaN, -inf and negative mass.
    checks.add(probs.amin() >= 0, lambda: _describe_bad_entry(name, probs))
    row_error = (probs.sum(-1) - 1.0).abs()  # native dtype: float32 pairwise sums err ~1e-6 << tol
    # NaN/inf rows give NaN/inf errors, which fail the comparison.
    checks.add(row_error.amax() <= sum_tol, lambda: _describe_bad_sum(name, probs, row_error, sum_tol))


def _describe_bad_entry(name: str, probs: torch.Tensor) -> str:
    bad = ~torch.isfinite(probs)
    if bool(bad.any()):
        idx = _first_index(bad)
        return f"{name} has a non-finite entry {probs[idx].item()} at index {idx}"
    idx = _first_index(probs < 0)
    return f"{name} has a negative probability {probs[idx].item()!r} at index {idx}"


def _describe_bad_sum(name: str, probs: torch.Tensor, row_error: torch.Tensor, sum_tol: float) -> str:
    if not bool(torch.isfinite(probs).all()):
        return _describe_bad_entry(name, probs)
    idx = _first_index(~(row_error <= sum_tol))
    total = probs[idx].sum(dtype=torch.float64).item()
    return (
        f"{name} row {idx} sums to {total!r}, not 1 within sum_tol={sum_tol:g}; "
        "renormalise the probabilities (in float64 for float64 inputs)"
    )


def add_token_range_check(checks: DeferredChecks, name: str, tokens: torch.Tensor, vocab_size: int) -> None:
    if tokens.numel() == 0:
        return
    in_range = (tokens.amin() >= 0) & (tokens.amax() < vocab_size)

    def describe() -> str:
        idx = _first_index((tokens < 0) | (tokens >= vocab_size))
        return f"{name} has token id {int(tokens[idx])} at index {idx}, outside [0, {vocab_size})"

    checks.add(in_range, describe)


def add_proposal_check(
    checks: DeferredChecks, draft_tokens: torch.Tensor, draft_at_draft: torch.Tensor
) -> None:
    """E1: a drafted token with draft probability 0 cannot have been sampled from draft_probs."""
    if draft_at_draft.numel() == 0:
        return

    def describe() -> str:
        idx = _first_index(draft_at_draft <= 0)
        token = int(draft_tokens[idx])
        return (
            f"proposal mismatch (SPEC E1): draft_probs{list(idx) + [token]} = 0 for drafted token "
            f"{token} at (row, position) {idx}; draft_tokens were not sampled from draft_probs"
        )

    checks.add((draft_at_draft > 0).all(), describe)
