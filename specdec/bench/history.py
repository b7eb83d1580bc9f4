"""Benchmark runs stored by pytest-benchmark (``--benchmark-autosave`` / ``--benchmark-save``), oldest first.

Storage: ``.benchmarks/<machine>/<NNNN>_<commit>_<date>.json``; each file holds the machine
info (extended by :func:`specdec.bench.environment.machine_info`), the commit and, per
benchmark, pytest-benchmark's timing stats and our ``extra_info`` (rows, per-round ratios,
exact metrics).

:func:`load_run` checks every part the gate and the plots read - the benchmarks' names, the
ratios (finite and positive, with a direction; 0 too where higher is better: a goodput that fell
to 0), the exact metrics, the machine and commit info, the date - and refuses anything else in one
line naming the file (:class:`~specdec.bench.files.BenchFileError`); other ``extra_info`` entries
are kept unread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .files import BenchFileError, Checker, read_json, shown


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
    """One stored run (a pytest-benchmark JSON file), checked as described in the module docstring."""
    path = Path(path)
    data = read_json(path)
    check = Checker(path)
    if not isinstance(data, dict):
        check.fail(f"not a pytest-benchmark run: the top level must be a JSON object, got {shown(data)}")
    if "benchmarks" not in data:
        check.fail("not a pytest-benchmark run: no 'benchmarks' key")
    commit_info = check.mapping("commit_info", data.get("commit_info"), optional=True)
    commit = check.text("commit_info['id']", commit_info.get("id"), optional=True) or "unknown"
    machine = check.mapping("machine_info", data.get("machine_info"), optional=True)
    when = check.timestamp("datetime", check.entry("the run", data, "datetime"))
    benchmarks: dict = {}
    for index, entry in enumerate(check.sequence("benchmarks", data["benchmarks"])):
        entry = check.mapping(f"benchmarks[{index}]", entry)
        name = check.text(f"benchmarks[{index}]['fullname']", check.entry(f"benchmarks[{index}]", entry, "fullname"))
        if name in benchmarks:
            check.fail(f"benchmark {name} appears twice")
        benchmarks[name] = {"stats": check.mapping(f"{name}: stats", entry.get("stats"), optional=True),
                            "extra_info": _extra_info(check, name, entry.get("extra_info"))}
    return Run(path, commit, when, machine, benchmarks)


def _extra_info(check: Checker, name: str, info) -> dict:
    """``extra_info`` with its ``ratios`` and ``exact`` entries checked (the gate reads them)."""
    info = check.mapping(f"{name}: extra_info", info, optional=True)
    ratios = check.mapping(f"{name}: extra_info['ratios']", info.get("ratios"), optional=True)
    for metric, spec in ratios.items():
        where = f"{name}: extra_info['ratios'][{metric!r}]"
        spec = check.mapping(where, spec)
        values = check.sequence(f"{where}['values']", check.entry(where, spec, "values"), nonempty=True)
        higher = check.flag(f"{where}['higher_is_better']", spec.get("higher_is_better", True))
        for value in values:  # 0: a higher-is-better ratio that fell to 0 (goodput), judged; a lower-is-better one cannot
            check.number(f"{where}['values']" + ("" if higher else " (lower is better)"), value, positive=not higher, nonnegative=higher)
    exact = check.mapping(f"{name}: extra_info['exact']", info.get("exact"), optional=True)
    for metric, value in exact.items():
        check.number(f"{name}: extra_info['exact'][{metric!r}]", value, optional=True)
    return info


def load_history(storage=".benchmarks") -> list[Run]:
    """Every stored run under ``storage`` (all machines), oldest first; ``latest/`` is not a run.
    A malformed stored run is a :class:`~specdec.bench.files.BenchFileError` naming it."""
    root = Path(storage)
    if not root.is_dir():
        problem = "is not a folder" if root.exists() else "does not exist: run `make bench` (it saves under the commit id)"
        raise ValueError(f"benchmark storage {root} {problem}")
    runs = [load_run(p) for p in sorted(root.glob("*/[0-9]*.json"))]
    return sorted(runs, key=lambda run: run.datetime)


__all__ = ["BenchFileError", "Run", "load_history", "load_run"]
