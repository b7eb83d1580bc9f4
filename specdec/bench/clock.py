"""Wall clocks that mean what they say: synchronised on CUDA, threads pinned, per-step timestamps."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .._validation import as_int


def synchronize(device: torch.device) -> None:
    """Wait for queued work on ``device`` (no-op on CPU) so a clock read after it covers that work."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def pin_threads(num_threads: int | None = None) -> int:
    """Fix torch's intra-op threads (default: the CPUs this process may use) and return the count."""
    if num_threads is None:
        try:
            import os

            num_threads = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # not Linux
            num_threads = torch.get_num_threads()
    torch.set_num_threads(as_int("num_threads", num_threads, minimum=1))
    return torch.get_num_threads()


def cuda_median_seconds(call, repeats: int = 20) -> float:
    """Median seconds of ``call`` over ``repeats`` calls, CUDA events around each (GPU micro benchmarks)."""
    import statistics

    repeats = as_int("repeats", repeats, minimum=1)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def timed(call, device: torch.device) -> tuple[float, object]:
    """(seconds, result) of ``call()``, synchronised before and after on CUDA."""
    synchronize(device)
    started = time.perf_counter()
    result = call()
    synchronize(device)
    return time.perf_counter() - started, result


@dataclass
class StepClock:
    """A decoding loop's ``on_step`` hook timing when each step's tokens became available (batch of one).

    ``start()`` just before the call; then ``ttft`` is the time to the first emitted
    token (prefill, first draft and first verification) and ``inter_token_latencies``
    the gaps between consecutive tokens after it: a step that emits n tokens gives one
    gap of its duration and n - 1 gaps of zero (speculative output is bursty by design).
    """

    device: torch.device = torch.device("cpu")
    _start: float = 0.0
    stamps: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, tokens emitted)

    def start(self) -> None:
        synchronize(self.device)
        self.stamps = []
        self._start = time.perf_counter()

    def __call__(self, record) -> None:
        synchronize(self.device)
        self.stamps.append((time.perf_counter() - self._start, sum(record.num_emitted)))

    @property
    def ttft(self) -> float:
        for seconds, emitted in self.stamps:
            if emitted:
                return seconds
        raise ValueError("no step emitted a token")

    @property
    def inter_token_latencies(self) -> np.ndarray:
        gaps, last = [], None
        for seconds, emitted in self.stamps:
            if not emitted:
                continue
            if last is not None:
                gaps.append(seconds - last)
            gaps.extend([0.0] * (emitted - 1))  # the step's other tokens arrive with its first
            last = seconds
        return np.asarray(gaps, dtype=np.float64)


def spread(values) -> dict[str, float]:
    """median, min and max of a list of measurements."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("spread needs at least one value")
    return {"median": float(np.median(arr)), "min": float(arr.min()), "max": float(arr.max())}
