"""Dtypes: which dtypes probabilities and token ids may have, and the row-sum tolerance of each
(see :mod:`specdec._validation`)."""

from __future__ import annotations

import torch

from .scalars import as_float

PROB_DTYPES = (torch.float32, torch.float64)
# Token ids: every integer dtype torch has (uint16/32/64 where this torch has them), compared in int64.
TOKEN_DTYPES = tuple(
    getattr(torch, name) for name in ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64") if hasattr(torch, name)
)

# |sum(row) - 1| allowed before a ValueError, by the dtype the caller's values came in.
SUM_TOL = {torch.float64: 1e-9, torch.float32: 1e-4, torch.float16: 1e-4, torch.bfloat16: 1e-4}


def sum_tolerance(dtype: torch.dtype) -> float:
    """The default row-sum tolerance for probabilities given in ``dtype`` (exact dtypes: float64's)."""
    return SUM_TOL.get(dtype, SUM_TOL[torch.float64])


def as_sum_tol(value, dtype: torch.dtype) -> float:
    """``sum_tol``: None (the default for ``dtype``) or a number >= 0."""
    if value is None:
        return sum_tolerance(dtype)
    return as_float("sum_tol", value, minimum=0.0)
