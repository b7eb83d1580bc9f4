"""How many samples a campaign draws, and in which chunks: the first of the engine's three steps
(plan, sample, judge; docs/reference.md §9).

* what the caller asked is a :class:`specdec.settings.RunSettings`: a TV to detect (n planned by F34
  on the pooled bins), a fixed n, a time budget in seconds, or n within a time budget; ``max_n``
  caps every stream;
* :func:`make_plan` - n and the chunk size per stream, and, under a time budget, each stream's
  share of the time from a timed pilot (n proportional to each stream's noncentrality, so every
  check reaches about the same TV).  A stream without an exact law (two samples) is planned by its
  own re-planning hook as its counts come in (``Stream.needed``); it gets ``max_n`` (or ``n``) here.

Chunk sizes depend on the stream and the device *type* only (on CUDA, on the card's total memory,
fixed per model), never on timing, so (seed, chunk size, n) reproduce a campaign.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import torch

from ..settings import DEFAULT_MAX_N, RunSettings
from ..stats.power import required_noncentrality
from .checks import detectable, planned_sample_size

SampleRequest = RunSettings  # compatibility alias (one release): SampleRequest(tv, time_budget, n, max_n, chunk_size)

CHUNK_SAMPLES = 2**20  # default samples per chunk (per verifier call) on a CPU
CHUNK_ELEMENTS = 2**25  # ... fewer for large vocabularies: about this many probability entries per chunk
CUDA_CHUNK_SAMPLES = 2**22  # on a GPU: large chunks keep Python out of the way
CUDA_MEMORY_SHARE = 1 / 64  # ... each chunk's working set at most this share of the card's total memory
PILOT_SECONDS = 0.03  # a pilot run long enough to time
PILOT_STREAM = 1 << 20  # pilot chunks use stream ids far from the real ones
EVALUATION_SHARE = 0.03  # of a time budget, kept for computing the p-values

__all__ = ["CHUNK_ELEMENTS", "DEFAULT_MAX_N", "PILOT_STREAM", "Plan", "SampleRequest", "make_plan", "resolve_device"]


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


def resolve_device(device) -> torch.device:
    """A torch device the engine can run on (cpu, or cuda when available); a ValueError otherwise."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device must name a torch device, got {device!r}: {error}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device {str(device)!r}: the engine runs on cpu or cuda devices, not {device.type}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r}: CUDA is not available on this machine")
    return device


def chunk_size(elements_per_sample: int, settings: RunSettings, device: torch.device) -> int:
    """Samples per chunk: the caller's, else a function of the stream and the device type."""
    if settings.chunk_size is not None:
        return settings.chunk_size
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
        bins = max([detectable(law, 10**6, alpha)[1] for law in stream_laws] + [2])
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


def _sizes(streams: Sequence, settings: RunSettings, alpha_check: float) -> list[int]:
    if settings.n is not None:
        return [min(settings.n, settings.max_n)] * len(streams)
    if settings.tv is not None and settings.time_budget is None:
        return [max([planned_sample_size(law, settings.tv, alpha_check, max_n=settings.max_n) for law in s.laws],
                    default=settings.max_n) for s in streams]
    return [settings.max_n] * len(streams)


def make_plan(streams: Sequence, settings: RunSettings, *, alpha_check: float, device: torch.device,
              timed: bool, started: float, key_type) -> Plan:
    """The plan of a campaign (see the module docstring); ``timed``: run the pilot even without a
    time budget (to print an estimated time).  Streams that say ``pilot=False`` (every call costly:
    a server) are never piloted; under a time budget they share the time equally."""
    chunks = [s.chunk if s.chunk and settings.chunk_size is None else chunk_size(s.elements_per_sample, settings, device)
              for s in streams]
    plan = Plan(_sizes(streams, settings, alpha_check), chunks)
    budget = settings.time_budget
    piloted = all(s.pilot for s in streams)
    if (budget is None and not timed) or (budget is None and not piloted):
        return plan
    plan.deadline = None if budget is None else started + budget * (1 - EVALUATION_SHARE)
    if not piloted:  # no rates: an equal share of the time each, n up to max_n
        left = budget * (1 - EVALUATION_SHARE) - (time.perf_counter() - started)
        plan.shares = [max(left, 0.0) / len(streams)] * len(streams)
        return plan
    cap = (0.1 * budget if budget else 5.0) / max(len(streams), 1)
    plan.rates = [pilot(s.draw, i, settings.seed, device, chunks[i], cap, key_type) for i, s in enumerate(streams)]
    if budget is not None:
        # The pilot decides how the time is shared (every stream reaching about the same TV); each
        # stream then samples until its share of the time is spent (or its n), so the budget is
        # spent even when the pilot, timed on small chunks, underestimates the throughput.
        left = budget * (1 - EVALUATION_SHARE) - (time.perf_counter() - started)
        estimates = allocate([s.laws for s in streams], plan.rates, max(left, 0.0), settings.max_n, alpha_check)
        plan.estimates = [min(e, size) for e, size in zip(estimates, plan.sizes)]
        plan.shares = [n / r for n, r in zip(plan.estimates, plan.rates)]
        plan.chunks = [max(1, min(c, int(r * 0.02 * budget))) for c, r in zip(chunks, plan.rates)]
    return plan
