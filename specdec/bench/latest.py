"""The latest run's files in ``.benchmarks/latest/``: ``rows.json`` and ``table.md``, written atomically,
each saying which run it is from, and ``rows.json`` read back checked.

``rows.json`` is a JSON list with one object per (configuration, task kind) - the fields of
:class:`specdec.bench.rows.Row`, plus ``"run": {"commit": ..., "started": ...}`` (the commit id,
``-dirty`` when the tree had changes, and the session's start in UTC, ISO 8601): the list stays a
list, so readers of the earlier files (``docs/data/h100-rows.json`` has no ``run``) keep working.
``table.md`` starts with a line naming the same run.  Both are written by
:func:`specdec._io.atomic_write_text` (a temporary file in the folder, renamed into place), so a
run killed mid-write leaves the previous file whole.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from .._io import atomic_write_text
from .files import BenchFileError, Checker, read_json
from .tables import format_table

# What `specdec bench plot` reads from every row; a row without one of them is refused by name.
REQUIRED = ("configuration", "kind", "speedup", "predicted", "mean_draft_tokens")


def run_stamp(commit: str | None = None) -> dict:
    """``{"commit": ..., "started": ...}`` for a session starting now (``commit``: the checkout's by default)."""
    if commit is None:
        from .environment import git_commit

        commit = git_commit()
    return {"commit": commit, "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def describe(stamp: dict | None) -> str:
    if not stamp:
        return "an unrecorded run"
    return f"commit {stamp.get('commit') or 'unknown'}, started {stamp.get('started') or 'unknown'}"


def write_rows(folder, rows: list[dict], stamp: dict) -> Path:
    """``folder/rows.json``: ``rows``, each with ``"run": stamp``, replaced atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(folder / "rows.json", json.dumps([{**row, "run": stamp} for row in rows], indent=1))


def write_table(folder, rows: list[dict], stamp: dict) -> Path:
    """``folder/table.md``: a line naming the run, then the markdown table, replaced atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    text = f"Run: {describe(stamp)}.\n\n{format_table(rows, markdown=True)}\n"
    return atomic_write_text(folder / "table.md", text)


def load_rows(path) -> list[dict]:
    """The rows in ``path`` (a list, with or without ``run`` stamps), each with the fields the plots read
    (:data:`REQUIRED`); anything else is a :class:`~specdec.bench.files.BenchFileError` naming the file."""
    data = read_json(path)
    check = Checker(path)
    rows = check.sequence("the rows (a rows.json file)", data)
    if not rows:
        check.fail("no rows: nothing to draw (did the run measure any end-to-end benchmark?)")
    for index, row in enumerate(rows):
        row = check.mapping(f"row {index}", row)
        where = f"row {index} ({row.get('configuration')}, {row.get('kind')})"
        for key in REQUIRED:
            check.entry(where, row, key)
        check.text(f"{where}: 'configuration'", row["configuration"])
        check.text(f"{where}: 'kind'", row["kind"])
        speedup = check.mapping(f"{where}: 'speedup'", row["speedup"])
        for key in ("median", "min", "max"):
            check.number(f"{where}: speedup[{key!r}]", check.entry(f"{where}: 'speedup'", speedup, key))
        check.number(f"{where}: 'predicted'", row["predicted"], optional=True)  # None: a subject that counts no drafts
        check.number(f"{where}: 'mean_draft_tokens'", row["mean_draft_tokens"])
        if "run" in row:
            stamp = check.mapping(f"{where}: 'run'", row["run"])
            check.text(f"{where}: run['commit']", stamp.get("commit"), optional=True)
            check.timestamp(f"{where}: run['started']", stamp.get("started"))
    return rows


def stamps(rows: list[dict]) -> list[dict | None]:
    """The distinct ``run`` stamps of ``rows`` in order of appearance (None for rows without one)."""
    seen: list = []
    for row in rows:
        if row.get("run") not in seen:
            seen.append(row.get("run"))
    return seen


__all__ = ["BenchFileError", "REQUIRED", "describe", "load_rows", "run_stamp", "stamps", "write_rows", "write_table"]
