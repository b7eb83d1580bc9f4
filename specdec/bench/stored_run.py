"""A benchmark run written in pytest-benchmark's file format by specdec itself (the open-loop rows, issue 33), so that
``specdec bench gate`` and the history read it like ``make bench``'s runs (:mod:`specdec.bench.history`).

``<storage>/<machine>/<NNNN>_<commit>_<date>.json`` with ``machine_info`` (:func:`specdec.bench.environment.machine_info`),
``commit_info``, ``datetime`` and one entry per benchmark: ``fullname``, ``stats`` (its median) and ``extra_info``
(the row, with its per-round ``ratios``).
"""

from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path

from .._io import atomic_write_text

__all__ = ["write_run"]


def write_run(storage, entries: list[dict], *, commit: str | None = None) -> Path:
    """Write ``entries`` ({"fullname", "median", "extra_info"}) as the next numbered run under ``storage``; its path."""
    from .environment import git_commit, machine_info

    machine = machine_info()
    commit = commit or git_commit() or "unknown"
    folder = Path(storage) / f"{platform.system()}-{platform.python_implementation()}-{'.'.join(platform.python_version_tuple()[:2])}-64bit"
    folder.mkdir(parents=True, exist_ok=True)
    number = 1 + max((int(p.name[:4]) for p in folder.glob("[0-9][0-9][0-9][0-9]_*.json")), default=0)
    now = datetime.datetime.now(datetime.timezone.utc)
    path = folder / f"{number:04d}_{commit[:40]}_{now.strftime('%Y%m%d_%H%M%S')}.json"
    data = {"machine_info": machine, "commit_info": {"id": commit}, "datetime": now.isoformat(),
            "benchmarks": [{"fullname": e["fullname"], "stats": {"median": e["median"]}, "extra_info": e["extra_info"]} for e in entries]}
    atomic_write_text(path, json.dumps(data, indent=1, default=str))
    return path
