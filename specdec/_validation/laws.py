"""Probability vectors and count vectors given as lists, arrays or tensors (see :mod:`specdec._validation`)."""

from __future__ import annotations

import numpy as np
import torch

from .dtypes import sum_tolerance
from .scalars import INT64_MAX
from .tensors import first_index

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

