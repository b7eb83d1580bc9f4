"""How many samples a campaign draws, and in which chunks: the first of the engine's three steps
(plan, sample, judge; docs/reference.md, "The conformance engine").

* :class:`SampleRequest` - what the caller asked: a TV to detect (n planned by F34 on the pooled
  bins), a fixed n, or a time budget in seconds; ``max_n`` caps every stream.
* :func:`make_plan` - n and the chunk size per stream, and, under a time budget, each stream's
  share of the time from a timed pilot (n proportional to each stream's noncentrality, so every
  check reaches about the same TV).

Chunk sizes depend on the stream and the device *type* only (on CUDA, on the card's total memory,
fixed per model), never on timing, so (seed, chunk size, n) reproduce a campaign.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import torch

from .._checks import as_float, as_int
from ..stats.power import POWER, required_noncentrality
from .checks import detectable, planned_sample_size

CHUNK_SAMPLES = 2**20  # default samples per chunk (per verifier call) on a CPU
CHUNK_ELEMENTS = 2**25  # ... fewer for large vocabularies: about this many probability entries per chunk
CUDA_CHUNK_SAMPLES = 2**22  # on a GPU: large chunks keep Python out of the way
CUDA_MEMORY_SHARE = 1 / 64  # ... each chunk's working set at most this share of the card's total memory
DEFAULT_MAX_N = 20_000_000
PILOT_SECONDS = 0.03  # a pilot run long enough to time
PILOT_STREAM = 1 << 20  # pilot chunks use stream ids far from the real ones
EVALUATION_SHARE = 0.03  # of a time budget, kept for computing the p-values


@dataclass(frozen=True)
class SampleRequest:
    """How many samples: planned for ``tv``, fixed ``n``, or fitted to ``time_budget`` seconds.

    ``tv`` is also the TV the verdict is held to (INCONCLUSIVE when a budget or
    ``max_n`` leaves the test weaker).  With ``time_budget`` the budget is spent:
    n is as large as the time allows (up to ``max_n``).  A fixed ``n`` above ``max_n`` is
    capped at ``max_n`` (and said so).  ``chunk_size`` (samples per call of the subject)
    is part of what makes a campaign reproducible.
    """

    tv: float | None = 0.01
    time_budget: float | None = None
    n: int | None = None
    max_n: int = DEFAULT_MAX_N
    chunk_size: int | None = None

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        if self.tv is not None:
            set_("tv", as_float("tv", self.tv, minimum=0.0, maximum=1.0, low_open=True, high_open=True))
        if self.time_budget is not None:
            set_("time_budget", as_float("time_budget", self.time_budget, minimum=0.0, low_open=True))
        if self.n is not None:
            set_("n", as_int("n", self.n, minimum=1))
        set_("max_n", as_int("max_n", self.max_n, minimum=1))
        if self.chunk_size is not None:
            set_("chunk_size", as_int("chunk_size", self.chunk_size, minimum=1))
        if self.tv is None and self.time_budget is None and self.n is None:
            raise ValueError("give tv (the deviation to detect), n (samples per check) or time_budget (seconds)")
        if self.n is not None and self.time_budget is not None:
            raise ValueError("give n or time_budget, not both")

    def describe(self) -> str:
        if self.n is not None:
            if self.n > self.max_n:
                return f"n = {self.max_n:,} per check (asked {self.n:,}, capped by max_n)"
            return f"n = {self.n:,} per check, fixed by the caller"
        if self.time_budget is not None:
            return f"as many samples as fit a time budget of {self.time_budget:g} s (max_n {self.max_n:,})"
        return f"planned to detect TV {self.tv:g} with power {POWER} (max_n {self.max_n:,})"


@dataclass
class Plan:
    """n and chunk size per stream; under a time budget, each stream's seconds and the deadline."""

    sizes: list[int]  # samples to draw per stream (max_n under a time budget: the deadline stops it)
    chunks: list[int]  # samples per call of the subject, per stream
    rates: list[float] | None = None  # pilot samples per second, when timed
    estimates: list[int] | None = None  # under a time budget: the n each stream is expected to reach
    shares: list[float] | None = None  # under a time budget: seconds per stream
    deadline: float | None = None  # perf_counter time when sampling stops

    @property
    def expected(self) -> list[int]:
        """The samples each stream is expected to draw (for the plan's lines and the progress bar)."""
        return self.estimates if self.estimates is not None else self.sizes


def chunk_size(elements_per_sample: int, request: SampleRequest, device: torch.device) -> int:
    """Samples per chunk: the caller's, else a function of the stream and the device type."""
    if request.chunk_size is not None:
        return request.chunk_size
    per_sample = max(elements_per_sample, 1)
    if device.type == "cuda":
        memory = torch.cuda.get_device_properties(device).total_memory
        return max(1, min(CUDA_CHUNK_SAMPLES, int(memory * CUDA_MEMORY_SHARE) // (8 * per_sample)))
    return max(1, min(CHUNK_SAMPLES, CHUNK_ELEMENTS // per_sample))


def pilot(draw, index: int, seed: int, device: torch.device, chunk: int, cap_seconds: float, key_type) -> float:
    """Samples per second of ``draw`` (sizes 16, 64, ... until a run takes PILOT_SECONDS)."""
    size, spent = 16, 0.0
    while True:
        started = time.perf_counter()
        draw(size, key_type(seed, PILOT_STREAM + index, size, device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - started
        spent += elapsed
        rate = size / max(elapsed, 1e-9)
        if elapsed >= PILOT_SECONDS or size >= chunk or spent >= cap_seconds:
            return rate
        size = min(size * 4, chunk)


def allocate(laws, rates, seconds: float, max_n: int, alpha: float) -> list[int]:
    """n per stream so every stream reaches the same TV within ``seconds``: n_i proportional to lambda_i."""
    weights = []
    for stream_laws in laws:
        bins = max(max(detectable(law, 10**6, alpha)[1] for law in stream_laws), 2)
        weights.append(required_noncentrality(bins, alpha=alpha))
    sizes = [0] * len(laws)
    free = list(range(len(laws)))
    while free:
        scale = seconds / sum(weights[i] / rates[i] for i in free)
        capped = [i for i in free if scale * weights[i] >= max_n]
        if not capped:
            for i in free:
                sizes[i] = max(1, int(scale * weights[i]))
            break
        for i in capped:
            sizes[i] = max_n
            seconds -= max_n / rates[i]
            free.remove(i)
        seconds = max(seconds, 0.0)
    return sizes


def make_plan(streams: Sequence, request: SampleRequest, *, alpha_check: float, seed: int, device: torch.device,
              timed: bool, started: float, key_type) -> Plan:
    """The plan of a campaign (see the module docstring); ``timed``: run the pilot even without a
    time budget (to print an estimated time)."""
    chunks = [chunk_size(s.elements_per_sample, request, device) for s in streams]
    if request.n is not None:
        sizes = [min(request.n, request.max_n)] * len(streams)
    elif request.tv is not None and request.time_budget is None:
        sizes = [max(planned_sample_size(law, request.tv, alpha_check, max_n=request.max_n) for law in s.laws) for s in streams]
    else:
        sizes = [request.max_n] * len(streams)
    plan = Plan(sizes, chunks)
    if request.time_budget is None and not timed:
        return plan
    cap = (0.1 * request.time_budget if request.time_budget else 5.0) / max(len(streams), 1)
    plan.rates = [pilot(s.draw, i, seed, device, chunks[i], cap, key_type) for i, s in enumerate(streams)]
    if request.time_budget is not None:
        # The pilot decides how the time is shared (every stream reaching about the same TV); each
        # stream then samples until its share of the time is spent (or max_n), so the budget is
        # spent even when the pilot, timed on small chunks, underestimates the throughput.
        left = request.time_budget * (1 - EVALUATION_SHARE) - (time.perf_counter() - started)
        plan.estimates = allocate([s.laws for s in streams], plan.rates, max(left, 0.0), request.max_n, alpha_check)
        plan.shares = [n / r for n, r in zip(plan.estimates, plan.rates)]
        plan.chunks = [max(1, min(c, int(r * 0.02 * request.time_budget))) for c, r in zip(chunks, plan.rates)]
        plan.deadline = started + request.time_budget * (1 - EVALUATION_SHARE)
    return plan
