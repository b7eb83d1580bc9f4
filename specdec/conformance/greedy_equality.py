"""Greedy decoding with speculation against without it: the outputs must be equal, row by row (E4).

At temperature 0 the law of each side is a point mass, and a two-sample test has nothing to count (one cell:
:func:`specdec.check_ab` excludes no TV).  The exact statement is equality: for every prompt row, the subject's
first ``length`` tokens are the reference's.  :func:`compare_greedy` asks both for the same rows and reports
the first row and position that differ (FAIL) or the number of rows found equal (PASS: equal on those rows, no
more - a greedy engine whose output depends on the batch or on the seed may still differ elsewhere).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

from .._validation import as_int, as_seed
from .decoder_output import read_rows, speculation_delta, speculation_of

__all__ = ["GreedyComparison", "compare_greedy"]


@dataclass
class GreedyComparison:
    """What :func:`compare_greedy` found, shaped as the matrix reads a report."""

    verdict: str  # PASS (every row equal) or FAIL
    detail: str
    rows: int
    seconds: float
    speculation: dict | None = None
    error: dict | None = None
    checks: list = field(default_factory=list)
    reached_tv: float | None = None  # no TV: an equality, not a test

    @property
    def samples(self) -> int:
        return 2 * self.rows

    def to_json(self) -> str:
        import json
        from dataclasses import asdict

        return json.dumps({**asdict(self), "kind": "greedy equality"}, indent=1)


def compare_greedy(subject, reference, prompts: Sequence[Sequence[int]], *, length: int, rows: int = 64, seed: int = 0,
                   eos_token_id=None, **_ignored) -> GreedyComparison:
    """Both decoders on ``rows`` copies of each prompt (seeds differ between the sides: greedy must not read them)."""
    length, rows, seed = as_int("length", length, minimum=1), as_int("rows", rows, minimum=1), as_seed(seed)
    eos = frozenset() if eos_token_id is None else frozenset([eos_token_id] if isinstance(eos_token_id, int) else eos_token_id)
    asked = [list(p) for p in prompts for _ in range(rows)]
    started = time.perf_counter()
    try:
        before = speculation_of(subject)
        ours = read_rows(subject(asked, length, seed), len(asked), length, eos, asked=length)
        theirs = read_rows(reference(asked, length, seed + 1), len(asked), length, eos, asked=length)
        spec = speculation_delta(before, speculation_of(subject))
    except Exception as error:  # noqa: BLE001 - a decoder's failure is the comparison's ERROR, named
        message = f"{type(error).__name__}: {error}"
        return GreedyComparison("ERROR", message, len(asked), time.perf_counter() - started, error={"message": message})
    seconds = time.perf_counter() - started
    for row, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            position = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return GreedyComparison("FAIL", f"row {row} (prompt {row // rows}) differs at position {position + 1}: {list(a)} with "
                                    f"speculation, {list(b)} without", len(asked), seconds, spec)
    distinct = len(set(ours))
    return GreedyComparison("PASS", f"equal on {len(asked)} rows ({distinct} distinct output(s))", len(asked), seconds, spec)
