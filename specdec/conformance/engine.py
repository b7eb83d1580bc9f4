"""The one engine behind every conformance check (docs/reference.md, "The conformance engine").

A check campaign is a list of :class:`Stream`s.  A stream draws samples from the
subject in chunks and counts outcomes; it then turns its counts into one or more
:class:`Check`s.  :func:`run` does three things, in order:

1. **plan** (:mod:`.plan`): take the report's family-wise alpha (from the run's
   :class:`ErrorBudget`, or the caller's ``family_alpha``), plan each check at alpha / m
   (Holm's first step, so power holds under Holm too), fix n and the chunk size per stream,
   and say the plan (checks, n, cells, detectable TV, estimated time) before sampling;
2. **sample**: draw chunk c of stream s from the counter-based generator (seed, s, c), so a
   campaign is reproducible from (seed, chunk size, n), with a progress bar; under a time budget
   every stream stops at its deadline, so the whole run holds the budget;
3. **judge**: evaluate the counts, apply Holm across the report, and state the verdict.

A subject that raises, hangs past its call timeout or breaks its Protocol stops the campaign
with an ERROR report (:mod:`.subject`); Ctrl-C stops it with an INTERRUPTED report that keeps
what was counted so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from .._checks import as_float, as_seed
from ..stats.multiplicity import holm
from .budget import ErrorBudget
from .checks import Check, detectable
from .console import Console
from .plan import CHUNK_ELEMENTS, DEFAULT_MAX_N, Plan, SampleRequest, make_plan
from .report import Report, library_versions
from .seeds import chunk_generator, derive_seed
from .subject import SubjectError, SubjectFailure

__all__ = ["CHUNK_ELEMENTS", "DEFAULT_MAX_N", "ChunkKey", "Extra", "SampleRequest", "Stream", "outcome_counts", "run"]


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


def _to_host(counts) -> list[np.ndarray]:
    out = []
    for c in counts:
        arr = c.detach().cpu().numpy() if isinstance(c, torch.Tensor) else np.asarray(c)
        out.append(arr.astype(np.int64))
    return out


@dataclass
class _Sampled:
    """What the sampling step leaves: summed counts per stream, samples drawn, and why it stopped early."""

    totals: list[list[np.ndarray]]
    drawn: list[int]
    failure: SubjectFailure | None = None
    interrupted: bool = False


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
    """Plan, sample, judge and report (see the module docstring)."""
    started = time.perf_counter()
    seed = as_seed(seed)
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
    report = Report(subject=subject, level=level, checks=[], family_alpha=alpha, asked_tv=request.tv, seed=seed,
                    chunk_size=0, device=str(device), sample_size_rule=request.describe(), notes=list(notes),
                    versions=library_versions())
    sampled = _Sampled([[np.zeros(size, dtype=np.int64) for size in s.shapes] for s in streams], [0] * len(streams))
    try:
        plan = make_plan(streams, request, alpha_check=alpha_check, seed=seed, device=device,
                         timed=console.plan_stream is not None, started=started, key_type=ChunkKey)
    except SubjectError as error:
        sampled.failure = error.failure
        return _finish(report, sampled, started)
    except KeyboardInterrupt:
        sampled.interrupted = True
        return _finish(report, sampled, started)
    report.chunk_size = plan.chunks[0] if len(set(plan.chunks)) == 1 else min(plan.chunks)
    report.planned_samples = sum(plan.expected)
    _say_plan(console, subject, level, device, m, alpha, alpha_check, request, streams, plan)
    _sample(streams, plan, seed, device, console.progress(sum(plan.expected) // world, subject), rank, world, sampled)
    if world > 1 and sampled.failure is None:  # one test over the summed counts of every rank, never a vote of per-rank tests
        sampled.totals, sampled.drawn = _sum_over_ranks(sampled.totals, sampled.drawn, device)
    if sampled.failure is None:
        _judge(report, streams, extras, sampled, alpha, alpha_check)
    if entry is not None:
        entry.checks.extend(report.checks)
    return _finish(report, sampled, started)


def _say_plan(console, subject, level, device, m, alpha, alpha_check, request, streams, plan: Plan) -> None:
    console.say(f"-- {subject} ({level}) on {device}: {m} checks, Holm at family-wise alpha {alpha:.1e}; {request.describe()}")
    if plan.rates is None:
        return
    for s, n, r in zip(streams, plan.expected, plan.rates):
        tv = max(detectable(law, n, alpha_check)[0] for law in s.laws)
        cells = max(int((law > 0).sum()) for law in s.laws)
        console.say(f"   {s.name[:56]:56s} n={n:>11,}  cells={cells:>6}  TV@.99={tv:.4f}  ~{n / r:6.1f} s")
    total = sum(n / r for n, r in zip(plan.expected, plan.rates))
    console.say(f"   estimated sampling time {total:.1f} s (pilot: {sum(plan.rates) / len(plan.rates):,.0f} samples/s on average)")


def _sample(streams, plan: Plan, seed: int, device, progress, rank: int, world: int, sampled: _Sampled) -> None:
    """Draw every stream's chunks (this rank's share); stop at a subject's failure or at Ctrl-C."""
    try:
        for i, stream in enumerate(streams):
            stream_deadline = None
            if plan.deadline is not None:
                now = time.perf_counter()
                remaining = sum(plan.shares[i:])
                stream_deadline = now + (plan.shares[i] / remaining if remaining > 0 else 1.0) * max(plan.deadline - now, 0.0)
            for chunk_index in range(rank, -(-plan.sizes[i] // plan.chunks[i]), world):  # this rank's chunks
                size = min(plan.chunks[i], plan.sizes[i] - chunk_index * plan.chunks[i])
                counts = _to_host(stream.draw(size, ChunkKey(seed, i, chunk_index, device)))
                sampled.totals[i] = [a + b for a, b in zip(sampled.totals[i], counts)]
                sampled.drawn[i] += size
                progress.update(size)
                if stream_deadline is not None and time.perf_counter() >= stream_deadline:
                    break
    except SubjectError as error:
        sampled.failure = error.failure
    except KeyboardInterrupt:
        sampled.interrupted = True
    finally:
        progress.close()


def _judge(report: Report, streams, extras, sampled: _Sampled, alpha: float, alpha_check: float) -> None:
    """Checks from the counts (and the extras, unless interrupted), Holm across the report."""
    checks: list[Check] = []
    for stream, counts in zip(streams, sampled.totals):
        checks.extend(stream.evaluate(counts, alpha_check))
    try:
        for extra in extras if not sampled.interrupted else ():
            checks.append(extra.run(alpha_check))
    except SubjectError as error:
        sampled.failure = error.failure
        return
    except KeyboardInterrupt:
        sampled.interrupted = True
    for check, rejected in zip(checks, holm([c.pvalue for c in checks], alpha)):
        check.passed = not rejected
    report.checks = checks


def _finish(report: Report, sampled: _Sampled, started: float) -> Report:
    report.samples = sum(sampled.drawn)
    report.seconds = time.perf_counter() - started
    report.error = None if sampled.failure is None else sampled.failure.to_dict()
    report.interrupted = sampled.interrupted
    return report


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
