"""Benchmark runs stored by pytest-benchmark (``--benchmark-autosave`` / ``--benchmark-save``), oldest first.

Storage: ``.benchmarks/<machine>/<NNNN>_<commit>_<date>.json``; each file holds the machine
info (extended by :func:`specdec.bench.environment.machine_info`), the commit and, per
benchmark, pytest-benchmark's timing stats and our ``extra_info`` (rows, per-round ratios,
exact metrics).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    path: Path
    commit: str
    datetime: str
    machine: dict
    benchmarks: dict  # fullname -> {"stats": ..., "extra_info": ...}

    @property
    def label(self) -> str:
        return (self.commit or "unknown")[:7]


def load_run(path) -> Run:
    """One stored run (a pytest-benchmark JSON file)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable pytest-benchmark JSON file ({error})") from None
    if not isinstance(data, dict) or "benchmarks" not in data:
        raise ValueError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' key)")
    commit = (data.get("commit_info") or {}).get("id") or "unknown"
    benchmarks = {b["fullname"]: {"stats": b.get("stats") or {}, "extra_info": b.get("extra_info") or {}} for b in data["benchmarks"]}
    return Run(path, commit, data.get("datetime", ""), data.get("machine_info") or {}, benchmarks)


def load_history(storage=".benchmarks") -> list[Run]:
    """Every stored run under ``storage`` (all machines), oldest first; ``latest/`` is not a run."""
    root = Path(storage)
    if not root.is_dir():
        raise ValueError(f"benchmark storage {root} does not exist: run `make bench` (it saves under the commit id)")
    runs = [load_run(p) for p in sorted(root.glob("*/[0-9]*.json"))]
    return sorted(runs, key=lambda run: run.datetime)
