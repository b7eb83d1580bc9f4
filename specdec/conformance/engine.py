"""The one engine behind every conformance check (docs/reference.md §9).

A check campaign is a list of :class:`Stream`s.  A stream draws samples from the subject in chunks
and adds each chunk to its :class:`Tally` (count vectors, or what a two-sample check keeps); it
then turns its tally into one or more :class:`Check`s.  :func:`run` does three things, in order:

1. **plan** (:mod:`.sampling_plan`): the report's family-wise alpha comes from :func:`allot` (the
   run's :class:`ErrorBudget`, or the caller's ``family_alpha``); each check is planned at alpha / m
   (Holm's first step, so power holds under Holm too); n and the chunk size per stream are fixed,
   and the plan (checks, n, cells, detectable TV, estimated time) is said before sampling;
2. **sample**: chunk c of stream s draws from the counter-based generator (seed, s, c), so a
   campaign is reproducible from (seed, chunk size, n), with a progress bar; a stream without an
   exact law re-plans its n from its tally after every chunk (``Stream.needed``: two samples, H2);
   under a time budget every stream stops at its deadline, so the whole run holds the budget;
3. **judge** (:func:`judge`): evaluate the tallies, apply Holm across the report, and state the verdict.

A subject that raises, hangs past its call timeout or breaks its Protocol stops the campaign with
an ERROR report (:mod:`.calls`); Ctrl-C stops it with an INTERRUPTED report that keeps what was
counted so far.  Every ``check_*`` goes through :func:`run` (and :func:`check_law`, one check of
counts a test drew itself, through :func:`allot` and :func:`judge`): one code path for the budget,
Holm and the verdicts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np
import torch

from ..errors import SubjectError
from ..settings import RunSettings
from ..stats.multiplicity import holm
from .checks import Check, detectable
from . import checkpoints
from .calls import subject_name
from .campaign import SPEND, Sampled, looker, replanned, sample
from .console import Console
from .report import Report, library_versions
from .ranks import process_group, sum_over_ranks
from .sampling_plan import EVALUATION_SHARE, Plan, make_plan, resolve_device  # noqa: F401 - resolve_device re-exported
from .seeds import chunk_generator, derive_seed
from .tallies import CountTally, Tally

__all__ = ["ChunkKey", "Extra", "Stream", "allot", "count_stream", "judge", "outcome_counts", "run", "subject_name"]


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
    """A source of samples and the checks its tally feeds.

    ``draw(m, key)`` draws m samples with the randomness of ``key`` and returns what ``tally()``'s
    :meth:`Tally.add` takes; ``evaluate(tally, alpha)`` turns the tally into ``num_checks`` checks at
    per-check level ``alpha``.  ``laws``: the exact laws of its goodness-of-fit checks (n is planned for
    the hardest); empty when no law is known and ``needed(tally, drawn, alpha)`` re-plans n from the
    counts after every chunk.  ``pilot``: time a pilot before sampling (False where every call is
    costly, a server).  ``samples_per_draw``: samples a unit of n stands for in the report (two
    samples: 2 x prompts).  ``chunk``: samples per call of the subject, unless the settings fix one
    (default: from ``elements_per_sample`` and the device).  Chunk c of a stream of n samples holds
    min(chunk, n - c * chunk) samples.
    """

    name: str
    laws: list[np.ndarray]
    num_checks: int
    elements_per_sample: int
    tally: Callable[[], Tally]
    draw: Callable[[int, ChunkKey], object]
    evaluate: Callable[[Tally, float], list[Check]]
    needed: Callable[[Tally, int, float], int] | None = None
    pilot: bool = True
    samples_per_draw: int = 1
    chunk: int | None = None


def count_stream(name: str, laws: list[np.ndarray], num_checks: int, elements_per_sample: int, shapes: list[int],
                 draw: Callable, evaluate: Callable[[list[np.ndarray], float], list[Check]]) -> Stream:
    """A stream whose chunks are count vectors of lengths ``shapes``, summed (``evaluate`` gets the sums)."""
    return Stream(name, laws, num_checks, elements_per_sample, lambda: CountTally(shapes), draw,
                  lambda tally, alpha: evaluate(tally.counts, alpha))


@dataclass
class Extra:
    """A check that is not a tally of samples (e.g. F28): ``run(alpha) -> Check``."""

    name: str
    run: Callable[[float], Check]


class _Budget(Protocol):
    def allot(self, num_checks: int, label: str): ...


def allot(budget: _Budget | None, num_checks: int, label: str, family_alpha: float):
    """(budget entry or None, the report's family-wise alpha): ``num_checks`` checks from ``budget``, or ``family_alpha``."""
    if budget is None:
        return None, family_alpha
    entry = budget.allot(num_checks, label)
    return entry, entry.alpha


def judge(checks: list[Check], alpha: float, entry=None) -> list[Check]:
    """Holm across ``checks`` at family-wise ``alpha``: sets each check's ``passed``; the checks join the budget ``entry``."""
    for check, rejected in zip(checks, holm([c.pvalue for c in checks], alpha)):
        check.passed = not rejected
    if entry is not None:
        entry.checks.extend(checks)
    return checks


def run(subject: str, level: str, streams: list[Stream], settings: RunSettings, *, device: torch.device,
        notes: Sequence[str] = (), extras: Sequence[Extra] = (), watch=None, law: Callable[[], dict] | None = None) -> Report:
    """Plan, sample, judge and report (see the module docstring).  ``watch``: the subject's speculation
    counters (:class:`~specdec.conformance.decoder_output.SpeculationWatch`), kept in checkpoints.  ``law()``:
    the check's fields of the law it tests, for the checkpoint's fingerprint (called once, before sampling; a
    law oracle it asks may fail as the subject may: an ERROR report)."""
    started = time.perf_counter()
    rank, world = process_group()
    console = Console() if rank else (settings.console or Console.auto())  # one voice per campaign
    m = sum(s.num_checks for s in streams) + len(extras)
    entry, alpha = allot(settings.budget, m, subject, settings.family_alpha)
    final = alpha * (1 - SPEND) if settings.early_stop else alpha  # P4: the looks spend the rest
    alpha_check = final / m
    report = Report(subject=subject, level=level, checks=[], family_alpha=alpha, asked_tv=settings.tv, seed=settings.seed,
                    chunk_size=0, device=str(device), sample_size_rule=settings.describe(), notes=list(notes),
                    versions=library_versions())
    sampled = Sampled([s.tally() for s in streams], [0] * len(streams), [0] * len(streams))
    saved = None if settings.resume is None else checkpoints.load(settings.resume, subject)
    try:
        plan = _plan(streams, settings, alpha_check, device, console, started, saved)
        identity = checkpoints.fingerprint(subject, level, settings, alpha, device, streams, plan, law() if law else None)
        if watch is not None:
            watch.start()
    except SubjectError as error:
        sampled.failure = error.failure
        return _finish(report, streams, sampled, started)
    except KeyboardInterrupt:
        sampled.interrupted = True
        return _finish(report, streams, sampled, started)
    if saved is not None:
        if world > 1:
            raise ValueError("resume: a campaign across processes continues from its ranks' checkpoints, which it does not keep")
        checkpoints.compare(saved.get("fingerprint"), identity)
        sampled.restore(checkpoints.streams_of(saved, streams, plan, [replanned(s, settings) for s in streams]))
        sampled.seconds_before = float(saved["seconds"])
        if watch is not None:
            watch.resume(saved.get("speculation"))
        report.notes.append(f"resumed from a checkpoint: {sum(sampled.drawn):,} samples drawn in {sampled.seconds_before:.1f} s before")
    report.chunk_size = min(plan.chunks)
    sampled.planned = [None if replanned(s, settings) else n for s, n in zip(streams, plan.expected)]
    _say_plan(console, subject, level, device, m, alpha, alpha_check, settings, streams, plan)
    save = _saver(settings, identity, sampled, started, watch, rank)
    progress = console.progress(sum(n if n is not None else 8 * c for n, c in zip(sampled.planned, plan.chunks)) // world, subject)
    progress.update(sum(sampled.drawn))
    look = looker(streams, sampled, alpha, m, min(plan.chunks), settings.early_stop and world == 1)
    sample(streams, plan, settings, alpha_check, lambda i, c: ChunkKey(settings.seed, i, c, device), progress, rank, world,
           sampled, save, look)
    report.stopped_early = sampled.stopped
    if world > 1 and sampled.failure is None:  # one test over the summed counts of every rank, never a vote of per-rank tests
        sum_over_ranks(sampled, device)
    if sampled.failure is None:
        checks = _evaluate(streams, extras, sampled, alpha_check)
        if sampled.failure is None:
            report.checks = judge(checks, final, entry)
    report.resume = save(True)
    if watch is not None:
        try:
            watch.record(report)
        except SubjectError as error:  # counters that break their Protocol at the end: an ERROR, not a traceback
            sampled.failure = sampled.failure or error.failure
    return _finish(report, streams, sampled, started)


def _plan(streams, settings: RunSettings, alpha_check: float, device, console, started: float, saved: dict | None) -> Plan:
    """The campaign's plan; a continued one plans n and chunks again without a pilot (the checkpoint's
    must be the same), or, under a time budget, keeps them and gets what is left of the budget."""
    if saved is None or settings.time_budget is None:
        return make_plan(streams, settings, alpha_check=alpha_check, device=device, started=started, key_type=ChunkKey,
                         timed=saved is None and console.plan_stream is not None)
    kept = saved["fingerprint"]["streams"]
    if len(kept) != len(streams):
        raise ValueError(f"the checkpoint is of another campaign: {len(kept)} streams in it, {len(streams)} now")
    plan = Plan([int(size) for _, size, _ in kept], [int(chunk) for _, _, chunk in kept])
    left = max(settings.time_budget - float(saved["seconds"]), 0.0) * (1 - EVALUATION_SHARE)
    plan.deadline, plan.shares = started + left, [left / len(streams)] * len(streams)
    return plan


def _saver(settings: RunSettings, identity: dict, sampled: Sampled, started: float, watch, rank: int):
    """``save(final)``: the checkpoint dict, handed to ``settings.checkpoint`` at most every few seconds (and when
    ``final``); returns the dict."""
    write = checkpoints.writer(settings.checkpoint) if rank == 0 else None
    last = [time.perf_counter()]

    def save(final: bool):
        now = time.perf_counter()
        if not final and watch is not None:
            watch.snapshot()  # the counters as of the chunks counted: a chunk cut short by Ctrl-C is not in them
        if not final and (write is None or now - last[0] < checkpoints.EVERY_SECONDS):
            return None
        last[0] = now
        state = {"format": checkpoints.FORMAT, "fingerprint": identity, "streams": sampled.state(),
                 "seconds": sampled.seconds_before + now - started, "complete": final and sampled.failure is None
                 and not sampled.interrupted, "speculation": None if watch is None else watch.counted}
        if write is not None:
            write(state)
        return state

    return save


def _say_plan(console, subject, level, device, m, alpha, alpha_check, settings, streams, plan: Plan) -> None:
    looks = f" (a tenth of it spent on up to 32 looks that stop at a rejection)" if settings.early_stop else ""
    console.say(f"-- {subject} ({level}) on {device}: {m} checks, Holm at family-wise alpha {alpha:.1e}{looks}; {settings.describe()}")
    for i, s in enumerate(streams):
        if not s.laws:
            console.say(f"   {s.name[:56]:56s} n re-planned from the counts as they come (at most {plan.sizes[i]:,})")
        elif plan.rates is not None:
            n, r = plan.expected[i], plan.rates[i]
            tv = max(detectable(law, n, alpha_check)[0] for law in s.laws)
            cells = max(int((law > 0).sum()) for law in s.laws)
            console.say(f"   {s.name[:56]:56s} n={n:>11,}  cells={cells:>6}  TV@.99={tv:.4f}  ~{n / r:6.1f} s")
    if plan.rates is not None:
        total = sum(n / r for n, r in zip(plan.expected, plan.rates))
        console.say(f"   estimated sampling time {total:.1f} s (pilot: {sum(plan.rates) / len(plan.rates):,.0f} samples/s on average)")


def _evaluate(streams, extras, sampled: Sampled, alpha_check: float) -> list[Check]:
    """Checks from the tallies (and the extras, unless interrupted)."""
    checks: list[Check] = []
    for stream, tally in zip(streams, sampled.tallies):
        checks.extend(stream.evaluate(tally, alpha_check))
    try:
        for extra in extras if not sampled.interrupted else ():
            checks.append(extra.run(alpha_check))
    except SubjectError as error:
        sampled.failure = error.failure
    except KeyboardInterrupt:
        sampled.interrupted = True
    return checks


def _finish(report: Report, streams, sampled: Sampled, started: float) -> Report:
    report.samples = sum(n * s.samples_per_draw for n, s in zip(sampled.drawn, streams))
    planned = [d if p is None else p for p, d in zip(sampled.planned or sampled.drawn, sampled.drawn)]
    report.planned_samples = sum(n * s.samples_per_draw for n, s in zip(planned, streams))
    report.seconds = sampled.seconds_before + time.perf_counter() - started
    report.error = None if sampled.failure is None else sampled.failure.to_dict()
    report.interrupted = sampled.interrupted
    return report


def outcome_counts(values: torch.Tensor, num_cells: int) -> torch.Tensor:
    """Counts of outcome codes (num_cells + 1,): codes outside [0, num_cells) go to the last cell."""
    values = values.long()
    invalid = (values < 0) | (values >= num_cells)
    return torch.bincount(torch.where(invalid, num_cells, values), minlength=num_cells + 1)
