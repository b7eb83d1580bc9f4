"""What the engine says while it works: the plan before sampling, a progress bar while sampling.

A bar is drawn only on a terminal and never in CI (the ``CI`` environment variable)
or under pytest's capture (stderr is not a terminal there).  Plain Python: one
line redrawn with a carriage return, at most ten times a second.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO


def _interactive(stream) -> bool:
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("CI"))


class Console:
    """Where the plan (``plan``) and the progress bar (``bar``) go; None silences either."""

    def __init__(self, plan: IO | None = None, bar: IO | None = None) -> None:
        self.plan_stream = plan
        self.bar_stream = bar

    @classmethod
    def auto(cls) -> "Console":
        """Plan and bar on stderr when it is an interactive terminal (not CI); silent otherwise."""
        return cls(sys.stderr, sys.stderr) if _interactive(sys.stderr) else cls()

    @classmethod
    def for_cli(cls) -> "Console":
        """The plan on stdout always; the bar on stderr when interactive."""
        return cls(sys.stdout, sys.stderr if _interactive(sys.stderr) else None)

    def say(self, line: str) -> None:
        if self.plan_stream is not None:
            print(line, file=self.plan_stream, flush=True)

    def progress(self, total: int, label: str) -> "Progress":
        return Progress(total, label, self.bar_stream)


class Progress:
    """``label [#####.....] 52%  1.2M/2.3M samples  3.1 s, ~2.9 s left``."""

    WIDTH = 24

    def __init__(self, total: int, label: str, stream: IO | None) -> None:
        self.total, self.label, self.stream = max(int(total), 1), label, stream
        self.done = 0
        self.started = time.perf_counter()
        self._drawn = 0.0

    def update(self, count: int) -> None:
        self.done += int(count)
        now = time.perf_counter()
        if self.stream is not None and (now - self._drawn > 0.1 or self.done >= self.total):
            self._drawn = now
            fraction = min(self.done / self.total, 1.0)
            elapsed = now - self.started
            left = elapsed * (1 - fraction) / fraction if fraction > 0 else float("nan")
            bar = "#" * round(self.WIDTH * fraction) + "." * (self.WIDTH - round(self.WIDTH * fraction))
            self.stream.write(
                f"\r  {self.label[:40]:40s} [{bar}] {fraction:4.0%} {_short(self.done)}/{_short(self.total)} "
                f"{elapsed:6.1f} s, ~{left:5.1f} s left "
            )
            self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()


def _short(count: int) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if count >= size:
            return f"{count / size:.1f}{suffix}"
    return str(count)
