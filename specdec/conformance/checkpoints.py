"""A long check that survives: its counts written as it goes, and a run continued from them.

Chunk c of stream s draws from the seed (seed, s, c) and chunks are independent, so a campaign is
its tallies plus where each stream stopped.  A *checkpoint* is that, as JSON:

* ``fingerprint`` - what must not change for a continuation to be the same campaign: the subject's
  name and level, the seed, the sample-size request (tv, n, max_n, chunk size, time budget), the
  report's alpha, the device type, and per stream its name, planned n and chunk size;
* ``streams`` - per stream the samples drawn, the next chunk, and its tally (:meth:`Tally.state`);
* ``seconds`` - the sampling time spent (a time budget continues with what is left), and
  ``speculation`` - the subject's counters so far (a restarted server counts from zero again).

:func:`writer` turns ``RunSettings.checkpoint`` (a path, written atomically, or a callable given the
dict) into the engine's writer; :func:`load` reads ``RunSettings.resume`` (a checkpoint file or dict,
a report's JSON, or a ``specdec check --json`` document, whose subject of the same name is taken);
:func:`compare` refuses a checkpoint of another campaign, naming every difference.  A continued run
draws chunks c + 1, ... exactly as the uninterrupted run would have, so its final counts and verdict
are the same (for a TV or a fixed n; a time budget's n depends on the clock by design).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Callable

FORMAT = "specdec-checkpoint/1"
EVERY_SECONDS = 2.0  # at most one write per this many seconds while sampling (and always at the end)

__all__ = ["EVERY_SECONDS", "FORMAT", "compare", "fingerprint", "load", "writer"]


def fingerprint(subject: str, level: str, settings, alpha: float, device, streams, plan) -> dict:
    """What identifies a campaign: a continuation must match it exactly."""
    return {"subject": subject, "level": level, "seed": settings.seed, "tv": settings.tv, "n": settings.n,
            "max_n": settings.max_n, "chunk_size": settings.chunk_size, "time_budget": settings.time_budget,
            "alpha": alpha, "early_stop": settings.early_stop, "device": getattr(device, "type", str(device)),
            "streams": [[s.name, int(size), int(chunk)] for s, size, chunk in zip(streams, plan.sizes, plan.chunks)]}


def compare(saved: dict, current: dict) -> None:
    """A ValueError naming every field in which ``saved`` (a checkpoint's fingerprint) differs from ``current``."""
    differences = []
    for key in sorted(set(saved) | set(current)):
        before, now = saved.get(key), current.get(key)
        same = math.isclose(before, now, rel_tol=1e-12) if all(isinstance(v, float) for v in (before, now)) else before == now
        if not same:
            differences.append(f"{key}: {_short(before)} in the checkpoint, {_short(now)} now")
    if differences:
        raise ValueError("the checkpoint is of another campaign, so it cannot be continued: " + "; ".join(differences)
                         + " (resume with the subject, settings and seed it was started with)")


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:117] + "..."


def writer(target) -> Callable[[dict], None] | None:
    """The engine's checkpoint writer for ``RunSettings.checkpoint``: None, a callable (given the dict), or
    a path (the dict as JSON, replaced atomically: a reader or a kill mid-write sees a whole file)."""
    if target is None or callable(target):
        return target
    from .._io import atomic_write_text

    path = Path(os.fspath(target))
    return lambda state: atomic_write_text(path, json.dumps(state) + "\n")


def load(source, subject: str) -> dict | None:
    """The checkpoint in ``source`` (a dict or a path to JSON): a checkpoint, a report (its ``resume``
    entry), or a ``specdec check`` document (the entry of the subject named ``subject``; None when the
    document holds none: that subject starts afresh).  A ValueError says why not."""
    if isinstance(source, (str, os.PathLike)):
        try:
            source = json.loads(Path(source).read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"resume: cannot read {os.fspath(source)!r}: {error}") from None
    if not isinstance(source, dict):
        raise TypeError(f"resume must be a checkpoint (a dict, or the path of a JSON file), got {type(source).__name__}")
    if "subjects" in source:  # a specdec check document: the entry of this subject, or nothing to continue
        found = [s for s in source["subjects"] if isinstance(s, dict) and s.get("subject") == subject]
        if not found:
            return None
        source = found[0]
    if "resume" in source:  # a report
        source = source["resume"]
    if not isinstance(source, dict) or source.get("format") != FORMAT:
        raise ValueError(f"resume: not a checkpoint of format {FORMAT!r} (a finished report keeps none: nothing to continue)")
    return source
