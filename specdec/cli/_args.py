"""Argument checks shared by every command, run before any work: a bad argument is one line on
stderr and its own exit status (:data:`specdec.cli.exit_codes.USAGE`)."""

from __future__ import annotations

import os

from .._validation.scalars import as_float
from ..errors import UsageError  # noqa: F401 - re-exported: its home before specdec.errors


def unit_interval(name: str, value: float) -> float:
    try:
        return as_float(name, value, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be in (0, 1), got {value}") from None


def seconds(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    try:
        return as_float(name, value, minimum=0.0, low_open=True)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a positive number of seconds, got {value}") from None


def writable(name: str, path: str | None) -> None:
    """``path`` can be written: not a folder, its folder exists and is writable."""
    if path is None:
        return
    if not path:
        raise UsageError(f"{name} must be a file path, got an empty string")
    if os.path.isdir(path):
        raise UsageError(f"{name} {path!r} is a folder; give a file path")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{name} {path!r}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{name} {path!r} is not writable")


def folder(name: str, path: str | None) -> None:
    """``path`` (when given) is an existing folder, e.g. ``--tokenizer``."""
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{name} {path} is a file; give a folder")
    if not os.path.isdir(path):
        raise UsageError(f"{name} {path}: the folder does not exist")


def output_folder(name: str, path: str) -> None:
    """A folder the command writes into, made when missing: not a file, nor under one, and writable where it starts."""
    if not isinstance(path, str) or not path:
        raise UsageError(f"{name} must be a folder path, got {path!r}")
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{name} {path} is a file; give a folder")
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"{name} {path}: {existing} is a file, so the folder cannot be made")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{name} {path}: the folder {existing} is not writable")


def checked(name: str, read, value, **bounds):
    """``read(name, value, **bounds)`` - a reader of :mod:`specdec._validation` (as_int, as_float) - with its refusal
    a UsageError naming the option as it was typed."""
    try:
        return read(name, value, **bounds)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def each(name: str, read, values, **bounds) -> list:
    """:func:`checked` for every value of a list option (at least one)."""
    if not isinstance(values, list) or not values:
        raise UsageError(f"{name} needs at least one value, got {values!r}")
    return [checked(name, read, value, **bounds) for value in values]


def device(text: str | None):
    """A torch device the engine can run on, or None (the default)."""
    if text is None:
        return None
    import torch

    try:
        parsed = torch.device(text)
    except (RuntimeError, TypeError):
        raise UsageError(f"--device must name a torch device (cpu, cuda, cuda:1), got {text!r}") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: CUDA is not available on this machine")
    if parsed.type not in ("cpu", "cuda"):
        raise UsageError(f"--device {text!r}: the engine runs on cpu or cuda devices, not {parsed.type}")
    return parsed


def vector(name: str, text: str):
    import torch

    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--{name} must be comma-separated numbers, got {text!r}") from None
    t = torch.tensor(values, dtype=torch.float64)
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()) or float(t.sum()) <= 0:
        raise UsageError(f"--{name} must be finite, non-negative and not all zero, got {text!r}")
    return t / t.sum()
