"""Numbers and choices: how every entry point reads a scalar argument (see :mod:`specdec._validation`).

Imports neither torch nor numpy (the CLI, the server code and launchers use it cheaply): numpy and
torch scalars are recognised by duck typing (numpy registers its number types with :mod:`numbers`;
a 0-d tensor is read with ``.item()``).  The dtypes' tolerances live in :mod:`.dtypes`.
"""

from __future__ import annotations

import math
import numbers
import operator

INT64_MAX = 2**63 - 1


# ------------------------------------------------------------------ numbers


def _is_bool(value) -> bool:
    if isinstance(value, bool):
        return True
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"):
        return True
    return _is_tensor(value) and str(value.dtype) == "torch.bool"


def _is_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "numel") and hasattr(value, "dtype")


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
    if _is_tensor(value):
        if value.numel() != 1 or value.is_complex() or value.is_meta:
            raise TypeError(f"{name} must be a real number, got a tensor of shape {tuple(value.shape)} and dtype {value.dtype}")
        value = value.item()
    if not isinstance(value, numbers.Real):  # numpy's floats and integers are registered as Real, its complex types are not
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


def as_choice(name: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value
