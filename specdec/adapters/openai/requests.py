"""The requests of one call of an OpenAI-compatible server subject, and their seeds.

The rows of a call that carry the same prompt are grouped and asked in requests of up to
``samples_per_request`` samples (``"n"``); the requests are ordered round-robin over the prompts (so
the server batches different prompts together, B13) and each gets its own seed, derived from the
call's seed in that order: a call is reproducible, and the same request always carries the same
seed (what makes a retried request draw the same samples, and a resumed check the same chunks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .._common import request_seeds as _base_seeds

__all__ = ["Request", "plan_requests", "request_seeds"]


def request_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent seeds below 2**62 derived from ``seed`` (:func:`specdec.adapters._common.request_seeds`,
    halved: a server that seeds the i-th of n samples with ``seed + i``, as vLLM does, stays within int64)."""
    return [s >> 1 for s in _base_seeds(seed, count)]


@dataclass(frozen=True)
class Request:
    """One POST: ``rows`` of the call (all with the same prompt) answered by its ``n`` choices."""

    number: int  # position in the call's request order (0-based)
    prompt: tuple[int, ...]
    rows: tuple[int, ...]
    seed: int

    def describe(self, url: str, total: int) -> str:
        return (f"request {self.number + 1} of {total}: POST {url} (prompt row {self.rows[0]}, "
                f"{len(self.prompt)} tokens; n={len(self.rows)}, seed={self.seed})")


def plan_requests(prompts: Sequence[Sequence[int]], seed: int, samples_per_request: int) -> list[Request]:
    """The requests of one call, in order, with their seeds."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for row, prompt in enumerate(prompts):
        groups.setdefault(tuple(int(t) for t in prompt), []).append(row)
    chunks = [[tuple(rows[i:i + samples_per_request]) for i in range(0, len(rows), samples_per_request)]
              for rows in groups.values()]
    ordered = [(prompt, chunk[j]) for j in range(max(map(len, chunks), default=0))
               for prompt, chunk in zip(groups, chunks) if j < len(chunk)]
    seeds = request_seeds(seed, len(ordered))
    return [Request(i, prompt, rows, s) for i, ((prompt, rows), s) in enumerate(zip(ordered, seeds))]
