"""The latest run's files (issue 23, item 2): ``.benchmarks/latest/rows.json`` and ``table.md`` say which
run they are from and are written atomically - by perf/'s session (``record_row``, the terminal
summary) and by :mod:`specdec.bench.latest` - and ``rows.json`` keeps its shape (a list of rows)."""

from __future__ import annotations

import json
import os
from datetime import datetime

import pytest

from specdec.bench.costs import StepCosts
from specdec.bench.latest import load_rows, run_stamp, write_rows, write_table
from specdec.bench.rows import Round, summarise


def _row(configuration="lookup-n3-K4-greedy", kind="qa") -> dict:
    costs = StepCosts({k: 0.1 * (1 + 0.05 * k) for k in range(9)}, 0.01)
    return summarise(configuration, kind, [Round(2.0, 1.0, None, None, [(4, 3)], [0.1], [0.1])], costs).as_dict()


def test_perf_session_writes_stamped_rows_and_table(pytester):
    """perf/conftest.py as a plugin in a throwaway project: a row recorded mid-run is on disk with its run
    stamp at once (a run cut short keeps it), and the summary's files name the same run."""
    pytester.makeconftest('pytest_plugins = ["perf.conftest"]')
    pytester.makepyfile(test_rows=f"""
        import json
        from pathlib import Path

        ROW = json.loads({json.dumps(json.dumps(_row()))})

        def test_record(record_row):
            record_row(ROW)
            (row,) = json.loads(Path(".benchmarks/latest/rows.json").read_text())
            assert row["configuration"] == ROW["configuration"] and set(row["run"]) == {{"commit", "started"}}
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1)
    latest = pytester.path / ".benchmarks" / "latest"
    (row,) = json.loads((latest / "rows.json").read_text())
    stamp = row["run"]
    assert datetime.fromisoformat(stamp["started"]).tzinfo is not None
    table = (latest / "table.md").read_text().splitlines()
    assert table[0] == f"Run: commit {stamp['commit'] or 'unknown'}, started {stamp['started']}."
    assert table[2].startswith("| configuration |")
    assert sorted(p.name for p in latest.iterdir()) == ["rows.json", "table.md"]  # no temporary file left
    assert load_rows(latest / "rows.json")[0]["run"] == stamp  # the plot reads what the session wrote


def test_rows_and_table_name_their_run(tmp_path):
    stamp = run_stamp("abc1234-dirty")
    assert stamp["commit"] == "abc1234-dirty" and datetime.fromisoformat(stamp["started"]).tzinfo is not None
    rows = [_row(), _row(kind="retrieval")]
    write_rows(tmp_path / "latest", rows, stamp)
    written = json.loads((tmp_path / "latest" / "rows.json").read_text())
    assert isinstance(written, list) and [r["run"] for r in written] == [stamp, stamp]
    assert [{k: v for k, v in r.items() if k != "run"} for r in written] == rows
    assert "run" not in rows[0]  # the caller's rows are not changed
    write_table(tmp_path / "latest", rows, stamp)
    text = (tmp_path / "latest" / "table.md").read_text()
    assert text.startswith(f"Run: commit abc1234-dirty, started {stamp['started']}.\n\n| configuration |")


def test_a_write_killed_midway_leaves_the_previous_files_whole(tmp_path, monkeypatch):
    folder = tmp_path / "latest"
    stamp = run_stamp("old")
    write_rows(folder, [_row()], stamp)
    write_table(folder, [_row()], stamp)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def killed(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", killed)
    for write in (write_rows, write_table):
        with pytest.raises(KeyboardInterrupt):
            write(folder, [_row(), _row(kind="math")], run_stamp("new"))
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_bad_run_stamp_in_rows_is_named(tmp_path, capsys):
    from specdec.cli import exit_codes, main

    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{**_row(), "run": {"commit": "abc", "started": None}}]))
    assert main(["bench", "plot", "--rows", str(path), "--out", str(tmp_path)]) == exit_codes.NO_VERDICT
    err = capsys.readouterr().err
    assert str(path) in err and "run['started']" in err
