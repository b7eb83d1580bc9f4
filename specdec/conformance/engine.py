"""The one engine behind every conformance check (docs/reference.md, "The conformance engine").

A check campaign is a list of :class:`Stream`s.  A stream draws samples from the
subject in chunks and counts outcomes; it then turns its counts into one or more
:class:`Check`s.  The engine, for every campaign:

1. takes the report's family-wise alpha (from the run's :class:`ErrorBudget`, or the
   caller's ``family_alpha``) and plans each check at alpha / m (Holm's first step,
   so power holds under Holm too);
2. fixes n per stream: planned for ``tv`` on the pooled bins (F34), fixed by ``n``, or
   fitted to ``time_budget`` seconds from a timed pilot (n proportional to each
   stream's noncentrality, so every check reaches the same TV), capped by ``max_n``;
3. says the plan (checks, n, cells, detectable TV, estimated time) before sampling
   and shows progress while sampling;
4. samples chunk c of stream s from the counter-based generator (seed, s, c), so
   a campaign is reproducible from (seed, chunk size, n); under a time budget every
   stream stops at its deadline, so the whole run holds the budget;
5. evaluates the counts, applies Holm across the report, and states the verdict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from .._checks import as_float, as_int
from ..stats.multiplicity import holm
from ..stats.power import POWER, required_noncentrality
from .budget import ErrorBudget
from .checks import Check, detectable, planned_sample_size
from .console import Console
from .report import Report, library_versions
from .seeds import chunk_generator, derive_seed

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
    n is as large as the time allows (up to ``max_n``).  ``chunk_size`` (samples per
    call of the subject) is part of what makes a campaign reproducible.
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
            return f"n = {self.n:,} per check, fixed by the caller"
        if self.time_budget is not None:
            return f"as many samples as fit a time budget of {self.time_budget:g} s (max_n {self.max_n:,})"
        return f"planned to detect TV {self.tv:g} with power {POWER} (max_n {self.max_n:,})"


@dataclass(frozen=True)
class ChunkKey:
    """Where a chunk's randomness comes from: (campaign seed, stream, chunk)."""

    seed: int
    stream: int
    chunk: int
    device: torch.device

    def generator(self) -> torch.Generator:
        return chunk_generator(self.seed, self.stream, self.chunk, self.device)

    def int_seed(self) -> int:
        return derive_seed(self.seed, self.stream, self.chunk)


@dataclass
class Stream:
    """A source of samples and the checks its counts feed.

    ``draw(m, key)`` draws m samples with the randomness of ``key`` and returns count
    vectors (tensors on any device, or arrays); ``evaluate(counts, alpha)`` turns the
    summed counts into ``num_checks`` checks planned at per-check level ``alpha``.
    ``laws`` are the laws of its goodness-of-fit checks (n is planned for the hardest).
    Chunk c of a stream of n samples holds min(chunk, n - c * chunk) samples.
    """

    name: str
    laws: list[np.ndarray]
    num_checks: int
    elements_per_sample: int
    shapes: list[int]  # the lengths of the count vectors draw returns
    draw: Callable[[int, ChunkKey], Sequence]
    evaluate: Callable[[list[np.ndarray], float], list[Check]]


@dataclass
class Extra:
    """A check that is not a count of samples (e.g. F28): ``run(alpha) -> Check``."""

    name: str
    run: Callable[[float], Check]


def subject_name(subject) -> str:
    """A readable name for any callable: module.qualname, ``<lambda at file:line>``, class name."""
    code = getattr(subject, "__code__", None)
    name = getattr(subject, "__qualname__", None) or getattr(subject, "__name__", None)
    if name and name.endswith("<lambda>") and code is not None:
        return f"<lambda at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}>"
    if name:
        module = getattr(subject, "__module__", None)
        return f"{module}.{name}" if module and module != "__main__" else name
    func = getattr(subject, "func", None)  # functools.partial
    if func is not None:
        return f"partial({subject_name(func)})"
    return type(subject).__name__


def resolve_device(device) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device must name a torch device, got {device!r}: {error}") from None


def _to_host(counts) -> list[np.ndarray]:
    out = []
    for c in counts:
        arr = c.detach().cpu().numpy() if isinstance(c, torch.Tensor) else np.asarray(c)
        out.append(arr.astype(np.int64))
    return out


def _chunk(stream: Stream, request: SampleRequest, device: torch.device) -> int:
    """Samples per chunk: the caller's, else a function of the stream and the device *type* (on CUDA,
    of the card's total memory, fixed per model) - never of timing, so (seed, chunk, n) reproduce."""
    if request.chunk_size is not None:
        return request.chunk_size
    per_sample = max(stream.elements_per_sample, 1)
    if device.type == "cuda":
        memory = torch.cuda.get_device_properties(device).total_memory
        return max(1, min(CUDA_CHUNK_SAMPLES, int(memory * CUDA_MEMORY_SHARE) // (8 * per_sample)))
    return max(1, min(CHUNK_SAMPLES, CHUNK_ELEMENTS // per_sample))


def _pilot(stream: Stream, index: int, seed: int, device: torch.device, chunk: int, cap_seconds: float) -> float:
    """Samples per second of ``stream`` (sizes 16, 64, ... until a run takes PILOT_SECONDS)."""
    size, rate, spent = 16, None, 0.0
    while True:
        started = time.perf_counter()
        stream.draw(size, ChunkKey(seed, PILOT_STREAM + index, size, device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - started
        spent += elapsed
        rate = size / max(elapsed, 1e-9)
        if elapsed >= PILOT_SECONDS or size >= chunk or spent >= cap_seconds:
            return rate
        size = min(size * 4, chunk)


def _allocate(laws, rates, seconds: float, max_n: int, alpha: float) -> list[int]:
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


def run(
    subject: str,
    level: str,
    streams: list[Stream],
    request: SampleRequest,
    *,
    seed: int,
    family_alpha: float,
    budget: ErrorBudget | None,
    device: torch.device,
    console: Console,
    notes: Sequence[str] = (),
    extras: Sequence[Extra] = (),
) -> Report:
    """Plan, sample, test and report (see the module docstring)."""
    started = time.perf_counter()
    seed = as_int("seed", seed, minimum=0, maximum=2**63 - 1)
    rank, world = _process_group()
    if rank:  # one voice per campaign
        console = Console()
    m = sum(s.num_checks for s in streams) + len(extras)
    if budget is not None:
        entry = budget.allot(m, subject)
        alpha = entry.alpha
    else:
        entry = None
        alpha = as_float("family_alpha", family_alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    alpha_check = alpha / m
    chunks = [_chunk(s, request, device) for s in streams]
    if request.n is not None:
        sizes = [min(request.n, request.max_n)] * len(streams)
    elif request.tv is not None and request.time_budget is None:
        sizes = [max(planned_sample_size(law, request.tv, alpha_check, max_n=request.max_n) for law in s.laws) for s in streams]
    else:
        sizes = None
    rates = None
    if request.time_budget is not None or console.plan_stream is not None:
        cap = (0.1 * request.time_budget if request.time_budget else 5.0) / max(len(streams), 1)
        rates = [_pilot(s, i, seed, device, chunks[i], cap) for i, s in enumerate(streams)]
    deadline = shares = None
    if request.time_budget is not None:
        # The pilot decides how the time is shared (every stream reaching about the same TV); each
        # stream then samples until its share of the time is spent (or max_n), so the budget is
        # spent even when the pilot, timed on small chunks, underestimates the throughput.
        left = request.time_budget * (1 - EVALUATION_SHARE) - (time.perf_counter() - started)
        estimates = _allocate([s.laws for s in streams], rates, max(left, 0.0), request.max_n, alpha_check)
        shares = [n / r for n, r in zip(estimates, rates)]
        chunks = [max(1, min(c, int(r * 0.02 * request.time_budget))) for c, r in zip(chunks, rates)]
        deadline = started + request.time_budget * (1 - EVALUATION_SHARE)
        sizes = [request.max_n] * len(streams)

    console.say(f"-- {subject} ({level}) on {device}: {m} checks, Holm at family-wise alpha {alpha:.1e}; {request.describe()}")
    if rates is not None:
        planned = estimates if shares is not None else sizes
        total = sum(n / r for n, r in zip(planned, rates))
        for s, n, r in zip(streams, planned, rates):
            tv = max(detectable(law, n, alpha_check)[0] for law in s.laws)
            cells = max(int((law > 0).sum()) for law in s.laws)
            console.say(f"   {s.name[:56]:56s} n={n:>11,}  cells={cells:>6}  TV@.99={tv:.4f}  ~{n / r:6.1f} s")
        console.say(f"   estimated sampling time {total:.1f} s (pilot: {sum(rates) / len(rates):,.0f} samples/s on average)")

    totals = [[np.zeros(size, dtype=np.int64) for size in s.shapes] for s in streams]
    drawn = [0] * len(streams)
    progress = console.progress(sum(estimates if shares is not None else sizes) // world, subject)
    for i, stream in enumerate(streams):
        stream_deadline = None
        if deadline is not None:
            now = time.perf_counter()
            remaining = sum(shares[i:])
            stream_deadline = now + (shares[i] / remaining if remaining > 0 else 1.0) * max(deadline - now, 0.0)
        for chunk_index in range(rank, -(-sizes[i] // chunks[i]), world):  # this rank's chunks
            size = min(chunks[i], sizes[i] - chunk_index * chunks[i])
            counts = _to_host(stream.draw(size, ChunkKey(seed, i, chunk_index, device)))
            totals[i] = [a + b for a, b in zip(totals[i], counts)]
            drawn[i] += size
            progress.update(size)
            if stream_deadline is not None and time.perf_counter() >= stream_deadline:
                break
    progress.close()
    if world > 1:  # one test over the summed counts of every rank, never a vote of per-rank tests
        totals, drawn = _sum_over_ranks(totals, drawn, device)

    checks: list[Check] = []
    for stream, counts in zip(streams, totals):
        checks.extend(stream.evaluate(counts, alpha_check))
    for extra in extras:
        checks.append(extra.run(alpha_check))
    for check, rejected in zip(checks, holm([c.pvalue for c in checks], alpha)):
        check.passed = not rejected
    if entry is not None:
        entry.checks.extend(checks)
    chunk_note = chunks[0] if len(set(chunks)) == 1 else min(chunks)
    return Report(
        subject=subject,
        level=level,
        checks=checks,
        family_alpha=alpha,
        asked_tv=request.tv,
        seed=seed,
        chunk_size=chunk_note,
        device=str(device),
        sample_size_rule=request.describe(),
        seconds=time.perf_counter() - started,
        samples=sum(drawn),
        notes=list(notes),
        versions=library_versions(),
    )


def _process_group() -> tuple[int, int]:
    """(rank, world size) of an initialised torch.distributed group, else (0, 1)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _sum_over_ranks(totals: list[list[np.ndarray]], drawn: list[int], device: torch.device):
    """All-reduce (sum) every count vector and the sample counts across the process group."""
    import torch.distributed as dist

    on = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    flat = np.concatenate([np.concatenate(t) for t in totals] + [np.asarray(drawn, dtype=np.int64)])
    buffer = torch.from_numpy(flat).to(on)
    dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
    flat = buffer.cpu().numpy()
    out, at = [], 0
    for counts in totals:
        out.append([])
        for c in counts:
            out[-1].append(flat[at : at + c.size])
            at += c.size
    return out, [int(x) for x in flat[at:]]


def outcome_counts(values: torch.Tensor, num_cells: int) -> torch.Tensor:
    """Counts of outcome codes (num_cells + 1,): codes outside [0, num_cells) go to the last cell."""
    values = values.long()
    invalid = (values < 0) | (values >= num_cells)
    return torch.bincount(torch.where(invalid, num_cells, values), minlength=num_cells + 1)
