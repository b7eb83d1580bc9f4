"""Numbers and choices: how every entry point reads a scalar argument (see :mod:`specdec._checks`)."""

from __future__ import annotations

import math
import numbers
import operator

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


def as_seed(value, name: str = "seed") -> int:
    """A seed: an int in [0, 2**63 - 1], the one bound everywhere (torch generators, engines' seeds)."""
    return as_int(name, value, minimum=0, maximum=INT64_MAX)


def as_probability(name: str, value) -> float:
    """A real number in [0, 1]."""
    return as_float(name, value, minimum=0.0, maximum=1.0)


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


