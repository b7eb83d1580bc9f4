"""What a stream keeps between chunks: its tally (docs/reference.md §9).

A :class:`Tally` takes each chunk a stream draws (:meth:`Tally.add`); the stream's ``evaluate``
reads it when sampling stops.  Chunks are independent draws (counter-based seeds), so a tally is
a sum, and summing is all a tally does.  :meth:`Tally.state` gives a JSON-able picture of it and
:meth:`Tally.restore` takes one back: a check stopped after chunk c resumes at chunk c + 1 with the
same tally, and ends with the counts an uninterrupted run would have (floats kept exactly: JSON
writes Python floats by their shortest round-trip repr).

* :class:`CountTally` - count vectors of fixed lengths (outcome codes of a verifier step, sequences
  of an exact law): what most streams keep, and what ranks of a process group sum together.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np
import torch


@runtime_checkable
class Tally(Protocol):
    """A stream's running sum of its chunks."""

    def add(self, chunk) -> None: ...

    def state(self) -> dict: ...

    def restore(self, state: dict) -> None: ...


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

    def restore(self, state: dict) -> None:
        counts = [np.asarray(c, dtype=np.int64) for c in state["counts"]]
        if [c.shape for c in counts] != [c.shape for c in self.counts]:
            raise ValueError(f"the checkpoint's count vectors have lengths {[c.size for c in counts]}, this stream's "
                             f"{[c.size for c in self.counts]}: another campaign")
        self.counts = counts
