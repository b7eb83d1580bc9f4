"""What a stream keeps between chunks: its tally (docs/reference.md §9).

A :class:`Tally` takes each chunk a stream draws (:meth:`Tally.add`); the stream's ``evaluate``
reads it when sampling stops.  Chunks are independent draws (counter-based seeds), so a tally is
a sum, and summing is all a tally does.  :meth:`Tally.state` gives a JSON-able picture of it and
:meth:`Tally.restore` takes one back, checking it first (the shapes, non-negative integer counts, and
that they are the counts of the ``drawn`` samples): a check stopped after chunk c resumes at chunk c + 1 with the
same tally, and ends with the counts an uninterrupted run would have (floats kept exactly: JSON
writes Python floats by their shortest round-trip repr).

* :class:`CountTally` - count vectors of fixed lengths (outcome codes of a verifier step, sequences
  of an exact law): what most streams keep, and what ranks of a process group sum together.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol, Sequence, runtime_checkable

import numpy as np
import torch


@runtime_checkable
class Tally(Protocol):
    """A stream's running sum of its chunks."""

    def add(self, chunk) -> None: ...

    def state(self) -> dict: ...

    def restore(self, state: dict, drawn: int) -> None: ...


def saved_counts(value, shape: tuple, what: str) -> np.ndarray:
    """A checkpoint's counts as an int64 array of ``shape``: a ValueError naming ``what`` unless they are
    non-negative integers of that shape."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"resume: {what} must be an array of counts, got {_shown(value)}") from None
    if array.shape != tuple(shape):
        raise ValueError(f"resume: {what} has shape {array.shape}, this stream keeps {tuple(shape)}: another campaign")
    if not np.all(np.isfinite(array)) or (array < 0).any() or (array != np.round(array)).any() or (array > 2**62).any():
        raise ValueError(f"resume: {what} must hold non-negative integer counts")
    return array.astype(np.int64)


def saved_numbers(value, shape: tuple, what: str) -> np.ndarray:
    """A checkpoint's sums (expectations) as a float64 array of ``shape``, finite and non-negative."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"resume: {what} must be an array of numbers, got {_shown(value)}") from None
    if array.shape != tuple(shape) or not np.all(np.isfinite(array)) or (array < 0).any():
        raise ValueError(f"resume: {what} must be finite non-negative numbers of shape {tuple(shape)}, got shape {array.shape}")
    return array


def saved_sequences(saved, what: str) -> Counter:
    """A checkpoint's [sequence, count] pairs as a Counter; a ValueError unless they are token-id lists and counts >= 1."""
    found: Counter = Counter()
    for item in saved if isinstance(saved, list) else [None]:
        ok = isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], list) and _positive(item[1]) \
            and all(_positive(t, zero=True) for t in item[0])
        if not ok:
            raise ValueError(f"resume: {what} must be a list of [token ids, count] pairs, got {str(item)[:60]}")
        found[tuple(item[0])] += item[1]
    return found


def _positive(value, zero: bool = False) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= (0 if zero else 1)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def to_host(counts) -> list[np.ndarray]:
    """Count vectors (tensors on any device, or arrays) as int64 numpy arrays."""
    out = []
    for c in counts:
        arr = c.detach().cpu().numpy() if isinstance(c, torch.Tensor) else np.asarray(c)
        out.append(arr.astype(np.int64))
    return out


class CountTally:
    """Count vectors of lengths ``shapes``, summed over chunks (a chunk: one vector per length)."""

    def __init__(self, shapes: Sequence[int]) -> None:
        self.counts = [np.zeros(int(size), dtype=np.int64) for size in shapes]

    def add(self, chunk) -> None:
        for i, c in enumerate(to_host(chunk)):
            self.counts[i] = self.counts[i] + c

    def state(self) -> dict:
        return {"counts": [c.tolist() for c in self.counts]}

    def restore(self, state: dict, drawn: int) -> None:
        """Every count vector sums to ``drawn`` (each sample is one outcome in each)."""
        saved = state.get("counts")
        if not isinstance(saved, list) or len(saved) != len(self.counts):
            raise ValueError(f"resume: the tally's counts must be a list of {len(self.counts)} count vectors, got {_shown(saved)}")
        counts = [saved_counts(c, mine.shape, f"counts[{i}]") for i, (c, mine) in enumerate(zip(saved, self.counts))]
        for i, c in enumerate(counts):
            if int(c.sum()) != drawn:
                raise ValueError(f"resume: counts[{i}] sum to {int(c.sum()):,}, not the {drawn:,} samples drawn: "
                                 "not the counts of a run (an edited or damaged checkpoint)")
        self.counts = counts
