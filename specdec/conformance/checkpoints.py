"""A long check that survives: its counts written as it goes, and a run continued from them.

Chunk c of stream s draws from the seed (seed, s, c) and chunks are independent, so a campaign is
its tallies plus where each stream stopped.  A *checkpoint* is that, as JSON:

* ``fingerprint`` - what must not change for a continuation to be the same campaign: the subject's
  name and level, the seed, the sample-size request (tv, n, max_n, chunk size, time budget), the
  report's alpha, the device type, per stream its name, planned n and chunk size, a digest of the exact
  laws the counts are tested against (the target, its warpers, the prompts, L and EOS all enter them),
  and what each check adds of the law it tests (:func:`fingerprint`'s ``law``: prompts, length, EOS,
  tokens asked, the reference's or the oracle's identity and settings, the oracle's laws of each
  prompt's first token, compared within ``PROBE_TOLERANCE``);
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

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Callable

import numpy as np

FORMAT = "specdec-checkpoint/2"  # 2: the law's identity in the fingerprint, counts checked before they are trusted
EVERY_SECONDS = 2.0  # at most one write per this many seconds while sampling (and always at the end)
PROBE = "oracle_probe"  # a fingerprint entry compared within its own tolerance (a server's laws vary by rounding)

__all__ = ["EVERY_SECONDS", "FORMAT", "compare", "fingerprint", "laws_digest", "load", "party", "probe", "streams_of", "writer"]


def fingerprint(subject: str, level: str, settings, alpha: float, device, streams, plan, law: dict | None = None) -> dict:
    """What identifies a campaign: a continuation must match it exactly.  ``law``: the check's own fields of
    the law it tests (prompts, length, EOS, the reference or oracle and their settings)."""
    identity = {"subject": subject, "level": level, "seed": settings.seed, "tv": settings.tv, "n": settings.n,
                "max_n": settings.max_n, "chunk_size": settings.chunk_size, "time_budget": settings.time_budget,
                "alpha": alpha, "early_stop": settings.early_stop, "device": getattr(device, "type", str(device)),
                "streams": [[s.name, int(size), int(chunk)] for s, size, chunk in zip(streams, plan.sizes, plan.chunks)],
                "exact_laws": laws_digest(streams)}
    clash = sorted(set(identity) & set(law or {}))
    if clash:
        raise ValueError(f"a check's law fields may not replace the campaign's: {clash}")
    return {**identity, **json.loads(json.dumps(law or {}))}  # as JSON keeps it: a fresh and a saved one compare equal


def party(decoder) -> dict:
    """What a fingerprint keeps of a decoder or a law oracle: its name and the sampling settings it states (the label
    of its ``sampling_settings`` record, else its ``settings`` text; not where it runs, which may change)."""
    from .calls import subject_name

    label = getattr(getattr(decoder, "sampling_settings", None), "label", None)
    settings = label if isinstance(label, str) else getattr(decoder, "settings", None)
    return {"name": subject_name(decoder), "settings": settings if isinstance(settings, str) else None}


def laws_digest(streams) -> str | None:
    """SHA-256 of every stream's exact laws (float64), or None when no stream has one (two samples, per token)."""
    laws = [law for s in streams for law in s.laws]
    if not laws:
        return None
    digest = hashlib.sha256()
    for law in laws:
        array = np.ascontiguousarray(law, dtype="float64")
        digest.update(str(array.shape).encode() + array.tobytes())
    return digest.hexdigest()[:32]


def probe(laws, tolerance: float) -> dict:
    """A fingerprint entry of a law oracle's laws (TokenLaws, one per prompt): each law's 8 most likely tokens
    with their probabilities, compared within ``tolerance`` (another temperature or model moves them further)."""
    top = []
    for law in laws:
        probs = np.asarray(law.probs, dtype="float64")
        ids = range(probs.size) if law.ids is None else [int(i) for i in law.ids]
        ranked = sorted(zip(ids, probs.tolist()), key=lambda item: (-item[1], item[0]))[:8]
        top.append({str(i): p for i, p in ranked})
    return {"tolerance": float(tolerance), "top": top}


def _same_probe(before, now) -> bool:
    if not (isinstance(before, dict) and isinstance(now, dict)) or len(before.get("top", ())) != len(now.get("top", ())):
        return False
    tolerance = max(float(before.get("tolerance", 0.0)), float(now.get("tolerance", 0.0)))
    for a, b in zip(before["top"], now["top"]):  # a token among one side's top 8 and not the other's: compared with 0
        shared = [(a.get(i, 0.0), b.get(i, 0.0)) for i in set(a) | set(b)]
        if any(abs(x - y) > tolerance for x, y in shared):
            return False
    return True


def compare(saved: dict, current: dict) -> None:
    """A ValueError naming every field in which ``saved`` (a checkpoint's fingerprint) differs from ``current``."""
    if not isinstance(saved, dict):
        raise ValueError(f"resume: the checkpoint's fingerprint must be an object, got {type(saved).__name__}")
    differences = []
    for key in sorted(set(saved) | set(current)):
        before, now = saved.get(key), current.get(key)
        if key == PROBE:
            same = _same_probe(before, now)
        elif all(isinstance(v, float) for v in (before, now)):
            same = math.isclose(before, now, rel_tol=1e-12)
        else:
            same = before == now
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


def streams_of(saved: dict, streams, plan, replanned: list[bool]) -> list[dict]:
    """The checkpoint's per-stream states, each checked against the plan before it is trusted: ``drawn`` and
    ``next_chunk`` non-negative integers, at most the plan's n, and the samples of the chunks drawn (a
    fixed-n stream: exactly min(chunks x chunk size, n); a re-planned one: between one and a chunk size per
    chunk).  The tallies check their own counts (:meth:`Tally.restore`).  A ValueError names the field."""
    kept = saved.get("streams")
    if not isinstance(kept, list) or len(kept) != len(streams):
        got = f"{len(kept)} streams" if isinstance(kept, list) else type(kept).__name__
        raise ValueError(f"resume: the checkpoint's streams must be a list of {len(streams)}, got {got}")
    seconds = saved.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"resume: the checkpoint's seconds must be a finite number >= 0, got {seconds!r}")
    out = []
    for i, (state, size, chunk) in enumerate(zip(kept, plan.sizes, plan.chunks)):
        where = f"resume: streams[{i}]"
        if not isinstance(state, dict) or not isinstance(state.get("tally"), dict):
            raise ValueError(f"{where} must be an object with drawn, next_chunk and tally")
        drawn, chunks = (_count(state.get(key), f"{where}.{key}") for key in ("drawn", "next_chunk"))
        if drawn > size:
            raise ValueError(f"{where}.drawn is {drawn:,}, beyond the plan's {size:,} samples")
        fits = (chunks <= drawn <= chunks * chunk) if replanned[i] else drawn == min(chunks * chunk, size)
        if not fits:
            raise ValueError(f"{where}: {drawn:,} samples drawn in {chunks:,} chunks of at most {chunk:,} samples: not the "
                             "counts of a run (an edited or damaged checkpoint)")
        out.append({"drawn": drawn, "next_chunk": chunks, "tally": state["tally"]})
    return out


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0, got {value!r}")
    return value
