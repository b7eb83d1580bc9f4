"""The sampling step of a campaign: chunks drawn into the streams' tallies, until each stream's n.

:class:`Sampled` is what the step leaves: a tally per stream, the samples drawn, the next chunk of
each stream, and why it stopped early (the subject's failure, an interruption).  :func:`sample`
draws every stream's chunks in order - chunk c of stream s from the seed (seed, s, c), so a campaign
is reproducible and a continued one draws exactly the chunks an uninterrupted one would - re-planning
a stream's n from its tally where it has no exact law, stopping each stream at its share of a time
budget, and handing a checkpoint to ``save`` after every chunk (:mod:`.checkpoints`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import SubjectError
from ..settings import RunSettings
from .tallies import Tally

__all__ = ["Sampled", "replanned", "sample"]


@dataclass
class Sampled:
    """What the sampling step leaves: a tally per stream, samples drawn, and why it stopped early."""

    tallies: list[Tally]
    drawn: list[int]
    next_chunk: list[int]  # per stream: the chunk a continuation starts at
    failure: object = None  # a SubjectFailure
    interrupted: bool = False
    planned: list[int | None] = field(default_factory=list)  # per stream: the plan's n (None: re-planned from the counts)
    seconds_before: float = 0.0  # sampling time of the run this one continues
    stopped: dict | None = None  # an early stop (P4): the look, the samples drawn, the check and its p-value

    def state(self) -> list[dict]:
        return [{"drawn": d, "next_chunk": c, "tally": t.state()} for d, c, t in zip(self.drawn, self.next_chunk, self.tallies)]

    def restore(self, streams: list[dict]) -> None:
        """Per stream a checked state (:func:`.checkpoints.streams_of`); each tally checks its own counts."""
        for i, saved in enumerate(streams):
            self.tallies[i].restore(saved["tally"], saved["drawn"])
            self.drawn[i], self.next_chunk[i] = saved["drawn"], saved["next_chunk"]


def replanned(stream, settings: RunSettings) -> bool:
    """Whether the stream's n comes from its re-planning hook (a TV asked, no fixed n)."""
    return stream.needed is not None and settings.n is None and settings.tv is not None


def _goal(stream, tally: Tally, drawn: int, planned: int, settings: RunSettings, alpha_check: float) -> int:
    """The samples this stream needs now: its plan, or its re-planning hook's answer (never above the plan's cap)."""
    if not replanned(stream, settings):
        return planned
    return min(planned, stream.needed(tally, drawn, alpha_check))


def sample(streams, plan, settings: RunSettings, alpha_check: float, key: Callable, progress, rank: int, world: int,
           sampled: Sampled, save: Callable[[bool], None], look: Callable[[], bool] = lambda: False) -> None:
    """Draw every stream's chunks (this rank's share; ``key(stream, chunk)`` gives a chunk's randomness);
    stop at a subject's failure, at Ctrl-C, or when ``look()`` (called after every chunk) says a check has
    rejected.  ``save(final)`` is called after every chunk."""
    try:
        for i, stream in enumerate(streams):
            deadline = _stream_deadline(plan, i)
            tally = sampled.tallies[i]
            if stream.needed is not None and world > 1:
                raise ValueError(f"stream {stream.name!r} re-plans its n from its counts: run it in one process")
            chunk_index = sampled.next_chunk[i] if world == 1 else rank
            while True:
                done = sampled.drawn[i] if world == 1 else chunk_index * plan.chunks[i]
                goal = _goal(stream, tally, sampled.drawn[i], plan.sizes[i], settings, alpha_check)
                if done >= goal:
                    break
                size = min(plan.chunks[i], goal - done)
                tally.add(stream.draw(size, key(i, chunk_index)))
                sampled.drawn[i] += size
                chunk_index += world
                sampled.next_chunk[i] = chunk_index
                progress.update(size)
                save(False)
                if look():
                    _plans_at_stop(streams, plan, settings, alpha_check, sampled)
                    return
                if deadline is not None and time.perf_counter() >= deadline:
                    break
    except SubjectError as error:
        sampled.failure = error.failure
    except KeyboardInterrupt:
        sampled.interrupted = True
    finally:
        progress.close()


def _plans_at_stop(streams, plan, settings: RunSettings, alpha_check: float, sampled: Sampled) -> None:
    """At an early stop, a re-planned stream's plan is what its hook asks for on the counts so far (the report's
    "after n of N planned samples")."""
    for j, stream in enumerate(streams):
        if sampled.planned and sampled.planned[j] is None:
            sampled.planned[j] = max(sampled.drawn[j], _goal(stream, sampled.tallies[j], sampled.drawn[j], plan.sizes[j], settings,
                                                             alpha_check))


def _stream_deadline(plan, i: int) -> float | None:
    """Under a time budget: when stream i stops (its share of the time left, rescaled to what is left)."""
    if plan.deadline is None:
        return None
    now = time.perf_counter()
    remaining = sum(plan.shares[i:])
    return now + (plan.shares[i] / remaining if remaining > 0 else 1.0) * max(plan.deadline - now, 0.0)


SPEND = 0.1  # of the report's alpha, spent on the interim looks (P4); the final test keeps the rest
LOOKS = 32  # at most this many interim looks: at 1, 2, 4, ... times the first chunk's samples


def looker(streams, sampled: Sampled, alpha: float, m: int, first: int, enabled: bool) -> Callable[[], bool]:
    """``look()``: at the first chunk past 1, 2, 4, ... x ``first`` samples drawn (at most LOOKS looks), every
    stream's checks at the interim level SPEND * alpha / (m * LOOKS); True (and ``sampled.stopped`` set) when
    one rejects (P4: Bonferroni over the looks and the checks, so the interim looks spend at most SPEND * alpha)."""
    interim = SPEND * alpha / (m * LOOKS)
    state = {"next": max(first, 1), "looks": 0}
    while state["next"] <= sum(sampled.drawn):  # a continued run: the looks the interrupted one made are behind it
        state["next"] *= 2
        state["looks"] += 1

    def look() -> bool:
        total = sum(sampled.drawn)
        if not enabled or state["looks"] >= LOOKS or total < state["next"]:
            return False
        while state["next"] <= total:
            state["next"] *= 2
        state["looks"] += 1
        for stream, tally in zip(streams, sampled.tallies):
            for check in stream.evaluate(tally, interim):
                if check.pvalue <= interim:
                    sampled.stopped = {"look": state["looks"], "samples": total, "check": check.name, "pvalue": check.pvalue,
                                       "level": interim}
                    return True
        return False

    return look
