"""The loop every engine's driver shares: its command line, the plan stated before it starts, one cell after
another (printed and written as each finishes, so an interrupted run keeps what it did), a later run with
``--append`` replacing only its own cells.  Each write re-reads the file under a lock and merges into it, so two drivers
may run on one file side by side (one core each) and keep each other's cells."""

from __future__ import annotations

import argparse
import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from specdec.conformance.budget import ErrorBudget
from specdec.conformance.matrix import Cell, merge_cells, read_cells, write_cells

from .header import header

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / ".peers" / "matrix"  # reports and server logs (not committed)
CELLS = ROOT / "docs" / "data" / "matrix"  # the cells, committed: the table is rebuilt from them and later runs append
RUN_KEYS = ("date", "commit", "samples_per_side", "per_token_tv")  # what a file's header says of each run that wrote cells
FAMILY_ALPHA = 1e-6  # each engine's matrix run, over 4 checks per cell at most


def arguments(doc: str, default_n: int | None, methods: list[str], names: list[str], argv=None, *,
              default_tv: float | None = None) -> argparse.Namespace:
    """The driver's command line: ``--n`` samples per side (A/B cells), or with ``default_tv`` the per-token ``--tv``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    if default_tv is None:
        parser.add_argument("--n", type=int, default=default_n, help=f"samples per side and cell (default {default_n})")
    else:
        parser.add_argument("--tv", type=float, default=default_tv, help=f"per-token TV each cell is planned for (default {default_tv})")
    parser.add_argument("--method", nargs="*", default=methods[:1], choices=methods, help=f"default {methods[0]}")
    parser.add_argument("--only", nargs="*", default=None, choices=names, metavar="SETTING", help="settings to run (default: all)")
    parser.add_argument("--append", action="store_true", help="keep the file's other cells (replace only the ones run)")
    parser.add_argument("--resume", action="store_true",
                        help="continue a stopped run: keep the file's cells and run only the planned cells it does not hold yet "
                             "(a per-token cell stopped midway continues from its checkpoints)")
    parser.add_argument("--out", type=Path, default=CELLS, help=f"the cells' folder (default {CELLS.relative_to(ROOT)})")
    return parser.parse_args(argv)


def slug(*parts: str) -> str:
    """A file name of ``parts``: each with every character but letters and digits as ``_``, joined by ``-``."""
    return "-".join("".join(ch if ch.isalnum() else "_" for ch in part) for part in parts)


def keeper(engine: str, method: str, setting: str):
    """A ``keep`` for :func:`specdec.conformance.matrix.run_cell`: the cell's whole report in ``.peers/matrix/reports/``."""
    name = slug(engine, method, setting)

    def keep(report) -> None:
        (OUT / "reports").mkdir(parents=True, exist_ok=True)
        (OUT / "reports" / f"{name}.json").write_text(report.to_json())

    return keep


def run(plan: list[tuple[str, str]], cell_of: Callable[[int, str, str, ErrorBudget], Cell], *, file: str, engine: str, n: int,
        append: bool, seconds_per_cell: float, out: Path = CELLS, resume: bool = False, checks_per_cell: int = 4,
        tv: float | None = None, label: Callable[[str], str]) -> list[Cell]:
    """Run ``cell_of(number, method, setting, budget)`` for each (method, setting) of ``plan``; the cells go to ``out / file``.
    ``resume``: keep the file's cells and skip the planned cells it already holds (a stopped run continues at the next
    unfinished cell; each cell keeps its number, so its seeds are those of the uninterrupted run).  ``label``: a plan
    method -> the method its cells carry (the table's label, as ``cell_of`` writes it).  ``tv``: per-token cells,
    planned for this TV (``n`` unused)."""
    path = Path(out) / file
    OUT.mkdir(parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    earlier = read_cells(path)[1] if resume and path.exists() else []
    done = {(c.method, c.setting) for c in earlier}
    this_run = header(engine, n, tv)
    budget = ErrorBudget(family_alpha=FAMILY_ALPHA, capacity=checks_per_cell * max(len(plan), 1))
    todo = [(number, method, name) for number, (method, name) in enumerate(plan, 1)
            if (label(method), name) not in done]
    skipped = f"; {len(plan) - len(todo)} already in the file, kept" if done else ""
    size = f"n = {n} per side" if tv is None else f"per-token TV {tv:g}"
    print(f"{engine} matrix: {len(todo)} cells of {size}, about {len(todo) * seconds_per_cell / 60:.0f} minutes "
          f"(family-wise alpha {FAMILY_ALPHA:g}){skipped}; cells go to {path}", flush=True)
    cells: list[Cell] = []
    run_index = None  # this run's entry in the file header's runs, once it has written
    for number, method, name in todo:
        cell = cell_of(number, method, name, budget)
        if cell.verdict == "INTERRUPTED":  # Ctrl-C: not a cell of the file; the run stops here
            print(f"[{number}/{len(plan)}] {method} {name}: interrupted after {cell.seconds:.0f} s; not written (--resume "
                  "continues a per-token cell from its checkpoints)", flush=True)
            break
        cells.append(cell)
        tv = "" if cell.reached_tv is None else f"TV {cell.reached_tv:.3f}"
        print(f"[{number}/{len(plan)}] {method:12s} {name:28s} {cell.verdict:12s} {tv:9s} n {cell.samples} drafts {cell.drafts} "
              f"{cell.seconds:.0f} s {cell.detail}", flush=True)
        run_index = write_merged(path, this_run, cells, keep=append or resume or run_index is not None, run_index=run_index)
    return cells


@contextmanager
def locked(path: Path):
    """An exclusive lock on the cells' file ``path`` (``flock`` on a hidden ``.NAME.lock`` beside it), held while a run
    reads, merges and writes it."""
    with open(path.with_name(f".{path.name}.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_merged(path: Path, this_run: dict, cells: list[Cell], *, keep: bool, run_index: int | None) -> int:
    """Write this run's ``cells`` into ``path`` as the file is now, under :func:`locked`: re-read it (``keep``; a fresh
    run's first write starts an empty file), replace its cells of the same (engine, method, setting), and give the
    cells the index of this run's entry in the header's runs.  The entry is appended at the run's first write and
    stays at ``run_index`` after (writers only append), unless a fresh run has replaced the file since.  Returns the
    index."""
    entry = {key: this_run[key] for key in RUN_KEYS if key in this_run}
    with locked(path):
        file_header, file_cells = read_cells(path) if keep and path.exists() else ({}, [])
        runs = runs_of(file_header)
        if run_index is None or run_index >= len(runs) or runs[run_index] != entry:
            run_index = len(runs)
            runs.append(entry)
        for cell in cells:
            cell.extra["run"] = run_index  # which of the header's runs made it
        write_cells(merge_cells(file_cells, cells), path, {**this_run, "runs": runs})
    return run_index


def runs_of(file_header: dict) -> list[dict]:
    """The runs a cell file's header lists (a file written by one run: that run)."""
    if not file_header:
        return []
    return list(file_header.get("runs") or [{key: file_header[key] for key in RUN_KEYS if key in file_header}])
