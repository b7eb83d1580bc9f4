"""Argument validation shared by every public entry point of specdec.

One policy, used everywhere:

* **Numbers** are accepted the way numpy and torch accept them: ``operator.index``
  for integers (int, numpy integers, 0-d integer tensors), ``float`` for reals
  (int, float, numpy reals, 0-d real tensors).  ``bool`` is refused as a number,
  complex values and strings are refused, NaN is refused unless a caller allows it.
* **Probability rows** are finite, non-negative and sum to one within one
  tolerance per dtype (:data:`SUM_TOL`: 1e-4 for float32 and lower precisions,
  1e-9 for float64 and exact inputs); ``sum_tol=`` overrides it where offered.
* **Tensors** are checked for type, dtype, rank and shape at once (no device
  work); value checks on tensors (NaN, negative mass, row sums, token ranges,
  E1 proposal mismatch) are collected in a :class:`DeferredChecks` and resolved
  with **one** host synchronisation.  The failing entry is located only on the
  error path.

Every error is a ``TypeError`` (wrong kind of value) or ``ValueError`` (right
kind, wrong value) whose message names the argument and shows the value.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Callable

import numpy as np
import torch

PROB_DTYPES = (torch.float32, torch.float64)
# Token ids: every integer dtype torch has (uint16/32/64 where this torch has them), compared in int64.
TOKEN_DTYPES = tuple(
    getattr(torch, name) for name in ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64") if hasattr(torch, name)
)
INT64_MAX = 2**63 - 1

# |sum(row) - 1| allowed before a ValueError, by the dtype the caller's values came in.
SUM_TOL = {torch.float64: 1e-9, torch.float32: 1e-4, torch.float16: 1e-4, torch.bfloat16: 1e-4}


def sum_tolerance(dtype: torch.dtype) -> float:
    """The default row-sum tolerance for probabilities given in ``dtype`` (exact dtypes: float64's)."""
    return SUM_TOL.get(dtype, SUM_TOL[torch.float64])


# ------------------------------------------------------------------ numbers


def _is_bool(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, torch.Tensor) and value.dtype == torch.bool


def as_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int (int, numpy integer, 0-d integer tensor); bools and floats are refused."""
    if type(value) is int:  # the common case, without the generic path (bool is a subclass, not int itself)
        result = value
    elif _is_bool(value):
        raise TypeError(f"{name} must be an integer, got the bool {value!r}")
    else:
        try:
            result = operator.index(value)
        except TypeError:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if minimum is not None and result < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {result}")
    if maximum is not None and result > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {result}")
    return int(result)


def as_float(
    name: str,
    value,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    finite: bool = True,
) -> float:
    """``value`` as a Python float; bools, complex numbers, strings and NaN are refused.

    ``minimum``/``maximum`` bound it (exclusive when ``low_open``/``high_open``);
    ``finite=False`` lets +-inf through (the bounds still apply).
    """
    if _is_bool(value):
        raise TypeError(f"{name} must be a real number, got the bool {value!r}")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.is_complex() or value.is_meta:
            raise TypeError(f"{name} must be a real number, got a tensor of shape {tuple(value.shape)} and dtype {value.dtype}")
        value = value.item()
    if isinstance(value, (complex, np.complexfloating)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        result = float(value)
    except OverflowError:  # Python ints and Fractions are unbounded; floats end near 1.8e308
        shown = f"an integer of {len(str(abs(value)))} digits" if isinstance(value, int) else f"{type(value).__name__} {str(value):.40}"
        raise ValueError(f"{name} must be a real number of float range, got {shown}") from None
    if math.isnan(result):
        raise ValueError(f"{name} must be a number, got nan")
    if finite and math.isinf(result):
        raise ValueError(f"{name} must be finite, got {result}")
    if minimum is not None and (result <= minimum if low_open else result < minimum):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {minimum}, got {result!r}")
    if maximum is not None and (result >= maximum if high_open else result > maximum):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {maximum}, got {result!r}")
    return result


def as_probability(name: str, value) -> float:
    """A real number in [0, 1]."""
    return as_float(name, value, minimum=0.0, maximum=1.0)


def as_token_id(name: str, value, vocab_size: int) -> int:
    return as_int(name, value, minimum=0, maximum=vocab_size - 1)


def as_pad_id(value) -> int:
    """``pad_id``: any int64 value (negative ids such as -1 are the usual padding)."""
    return as_int("pad_id", value, minimum=-INT64_MAX - 1, maximum=INT64_MAX)


def as_sum_tol(value, dtype: torch.dtype) -> float:
    """``sum_tol``: None (the default for ``dtype``) or a number >= 0."""
    if value is None:
        return sum_tolerance(dtype)
    return as_float("sum_tol", value, minimum=0.0)


def as_choice(name: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


# ------------------------------------------------------------------ tensors (metadata: no device work)


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


def as_law(name: str, values, *, ndim: int | None = None, sum_tol: float | None = None) -> torch.Tensor:
    """``values`` (tensor, array or nested sequence) as a float64 CPU tensor of probability rows.

    Checked: real dtype (complex and bool refused), non-empty last dimension, rank
    ``ndim`` when given, finite, non-negative, every row summing to one within the
    tolerance of the dtype the values came in (:func:`sum_tolerance`).  Then every row
    is renormalised in float64: the law is the distribution the rows define.
    """
    return _law(name, _source(name, values), ndim=ndim, sum_tol=sum_tol)


def _source(name: str, values) -> torch.Tensor:
    """``values`` as a CPU tensor in the dtype they came in (lists: numpy's choice, float64 for floats)."""
    if isinstance(values, torch.Tensor):
        if values.is_meta:
            raise ValueError(f"{name} is a meta tensor (no values)")
        source = values.detach().cpu()
    else:
        try:
            source = torch.as_tensor(np.asarray(values))
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"{name} must be an array of probabilities, got {type(values).__name__}: {error}") from None
    if source.is_complex() or source.dtype == torch.bool:
        raise TypeError(f"{name} must hold real probabilities, got dtype {source.dtype}")
    return source


def _law(name: str, source: torch.Tensor, *, ndim: int | None, sum_tol: float | None) -> torch.Tensor:
    tol = sum_tolerance(source.dtype) if sum_tol is None else sum_tol
    law = source.to(torch.float64)
    if law.ndim < 1 or law.shape[-1] < 1:
        raise ValueError(f"{name} must have a non-empty last (vocabulary) dimension, got shape {tuple(law.shape)}")
    if ndim is not None and law.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(law.shape)}")
    if not bool(torch.isfinite(law).all()):
        raise ValueError(f"{name} has a non-finite entry")
    if bool((law < 0).any()):
        raise ValueError(f"{name} has a negative probability {float(law.min())!r}")
    error = (law.sum(-1) - 1).abs()
    if float(error.max()) > tol:
        worst = first_index(error == error.max()) if law.ndim > 1 else ()
        raise ValueError(
            f"{name} row {worst} sums to {float(law.sum(-1).reshape(-1)[int(error.reshape(-1).argmax())])!r}, "
            f"not 1 within {tol:g}"
        )
    return law / law.sum(-1, keepdim=True)


def as_law_pair(target_probs, draft_probs, *, ndim: int | None = None, with_dtype: bool = False):
    """(target, draft) as float64 laws of one shape; ``with_dtype``: and, third, the coarser of the two
    dtypes they came in (their precision: E2 judges their residual by it)."""
    target_source = _source("target_probs", target_probs)
    target = _law("target_probs", target_source, ndim=ndim, sum_tol=None)
    draft_source = _source("draft_probs", draft_probs)
    draft = _law("draft_probs", draft_source, ndim=ndim, sum_tol=None)
    if target.shape != draft.shape:
        raise ValueError(f"target_probs shape {tuple(target.shape)} != draft_probs shape {tuple(draft.shape)}")
    if with_dtype:
        return target, draft, max(target_source.dtype, draft_source.dtype, key=_eps)
    return target, draft


def _eps(dtype: torch.dtype) -> float:
    """Machine epsilon of a floating dtype; 0 for exact (integer) dtypes."""
    return torch.finfo(dtype).eps if dtype.is_floating_point else 0.0


def as_counts(name: str, values) -> np.ndarray:
    """Non-negative integer counts as a flat int64 array (integral floats accepted, fractions refused)."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer counts, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} has a non-finite entry")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold whole counts, got a fractional value {arr[arr != np.round(arr)].ravel()[0]!r}")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must be non-negative, got {arr.min()!r}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > INT64_MAX:
        raise ValueError(f"{name} has a count {arr.max()!r} beyond int64")
    if arr.dtype.kind == "f" and arr.size and arr.max() > 2**53:
        raise ValueError(f"{name} has a count {arr.max()!r} too large to be exact in float64")
    return arr.astype(np.int64).ravel()


def count_total(counts: np.ndarray) -> int:
    """The exact sum of int64 counts (from :func:`as_counts`) as a Python int: int64 sums wrap past 2**63."""
    if counts.size == 0:
        return 0
    if int(counts.max()) <= INT64_MAX // counts.size:  # the int64 sum cannot wrap
        return int(counts.sum())
    return sum(counts.tolist())  # Python ints: exact at any size

