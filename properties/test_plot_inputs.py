"""`specdec bench plot` on empty, incomplete and malformed inputs, and PNGs written atomically (issue 23,
items 2, 4 and 6).

A path that is not what the option needs (a folder for --rows, a file for --out or --storage) is a
bad argument (2), refused before any work; an empty, truncated or incomplete rows file, or a
malformed stored run, is one line naming the file (4) and no PNG is written; nothing to draw is 4,
not a PNG of empty axes.  A PNG is drawn to a temporary file beside it and renamed into place.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from specdec.bench.costs import StepCosts
from specdec.bench.rows import Round, summarise
from specdec.cli import exit_codes, main

ROOT = Path(__file__).resolve().parent.parent
H100_ROWS = ROOT / "docs" / "data" / "h100-rows.json"


def sweep_rows(ks=(1, 2, 4, "adapt")) -> list[dict]:
    costs = StepCosts({k: 0.1 * (1 + 0.05 * k) for k in range(9)}, 0.01)
    return [summarise(f"lookup-n3-K{k}-greedy", kind, [Round(2.0, 1.0, None, None, [(4, 3)], [0.1], [0.1])], costs).as_dict()
            for kind in ("qa", "retrieval") for k in ks]


def plot(capsys, *args):
    code = main(["bench", "plot", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_a_path_of_the_wrong_kind_is_a_usage_error_before_any_work(tmp_path, capsys, out):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows()))
    cases = [
        (["--rows", tmp_path, "--out", out], "is a folder"),
        (["--rows", tmp_path / "nowhere.json", "--out", out], "does not exist"),
        (["--rows", rows, "--out", tmp_path / "nowhere"], "does not exist"),
        (["--rows", rows, "--out", rows], "not a folder"),
        (["--rows", rows, "--out", out, "--storage", rows], "not a folder"),
    ]
    for args, says in cases:
        code, printed, err = plot(capsys, *args)
        assert code == exit_codes.USAGE, (args, err)
        assert says in err and len(err.strip().splitlines()) == 1 and not printed
    assert list(out.iterdir()) == []


def test_without_matplotlib_plot_is_one_line_before_any_work(tmp_path, capsys, out, monkeypatch):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows()))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were not installed
    code, printed, err = plot(capsys, "--rows", rows, "--out", out)
    assert code == exit_codes.USAGE and "needs matplotlib" in err and len(err.strip().splitlines()) == 1 and not printed
    assert list(out.iterdir()) == []


def test_an_unwritable_out_folder_is_a_usage_error(tmp_path, capsys, out, monkeypatch):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows()))
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as for a non-root user in a read-only folder
    code, printed, err = plot(capsys, "--rows", rows, "--out", out)
    assert code == exit_codes.USAGE and "not writable" in err and not printed
    assert list(out.iterdir()) == []


def _rows_with(change) -> str:
    rows = sweep_rows()
    change(rows)
    return json.dumps(rows)


MALFORMED = {
    "empty file": ("", "not JSON"),
    "truncated": (json.dumps(sweep_rows())[:300], "not JSON"),
    "no rows": ("[]", "no rows"),
    "an object": ("{}", "must be a JSON list"),
    "a number": ("5", "must be a JSON list"),
    "a row a string": (json.dumps(["x"]), "row 0"),
    "no speedup": (_rows_with(lambda r: r[2].pop("speedup")), "has no 'speedup'"),
    "speedup without max": (_rows_with(lambda r: r[0]["speedup"].pop("max")), "'max'"),
    "median a string": (_rows_with(lambda r: r[1]["speedup"].update(median="1.2")), "median"),
    "median not finite": (_rows_with(lambda r: r[1]["speedup"].update(median=float("nan"))), "median"),
    "predicted a string": (_rows_with(lambda r: r[0].update(predicted="1.2x")), "predicted"),  # null is allowed: a subject without counters
    "configuration a number": (_rows_with(lambda r: r[0].update(configuration=4)), "configuration"),
    "no kind": (_rows_with(lambda r: r[3].pop("kind")), "kind"),
    "UTF-16": (None, "UTF-8"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_rows_file_is_one_line_naming_it_and_draws_nothing(tmp_path, capsys, out, case):
    text, says = MALFORMED[case]
    rows = tmp_path / "rows.json"
    if text is None:
        rows.write_bytes(json.dumps(sweep_rows()).encode("utf-16"))
    else:
        rows.write_text(text)
    code, _, err = plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "none")
    assert code == exit_codes.NO_VERDICT, (case, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and str(rows) in lines[0] and says in lines[0], err
    assert list(out.iterdir()) == []


def _stored(tmp_path, extra_info, name="0001_aaa_run.json") -> Path:
    folder = tmp_path / "store" / "Linux-CPython-3.11-64bit"
    folder.mkdir(parents=True, exist_ok=True)
    data = {"commit_info": {"id": "aaa"}, "datetime": "2026-11-22T00:00:01", "machine_info": {},
            "benchmarks": [{"fullname": "perf/test_end_to_end.py::test_x", "extra_info": extra_info}]}
    (folder / name).write_text(json.dumps(data))
    return folder / name


@pytest.mark.parametrize("extra_info, says", [
    ({"predicted": 1.2, "configuration": "lookup-n3-K4-greedy", "speedup": {"median": 1.1}}, "has no 'efficiency'"),
    ({"predicted": 1.2, "configuration": "lookup-n3-K4-greedy", "speedup": {"median": 0.0}, "efficiency": 0.9}, "median"),
    ({"predicted": 1.2, "configuration": None, "speedup": {"median": 1.1}, "efficiency": 0.9}, "configuration"),
    ("not an object", "extra_info"),
])
def test_a_malformed_stored_run_is_named_and_nothing_is_drawn(tmp_path, capsys, out, extra_info, says):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows()))
    bad = _stored(tmp_path, extra_info)
    code, _, err = plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "store")
    assert code == exit_codes.NO_VERDICT, err
    assert len(err.strip().splitlines()) == 1 and str(bad) in err and says in err, err
    assert list(out.iterdir()) == []


def test_nothing_to_draw_has_no_verdict(tmp_path, capsys, out):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows(ks=(4,))))  # one K per configuration: no sweep to draw
    _stored(tmp_path, {"ratios": {"r": {"values": [1.0], "higher_is_better": True}}})  # a run without end-to-end rows
    code, printed, err = plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "store")
    assert code == exit_codes.NO_VERDICT, (printed, err)
    assert "no configuration with a K sweep" in printed and "no end-to-end row" in printed and "nothing to draw" in err
    assert list(out.iterdir()) == []


def test_the_h100_rows_in_the_docs_still_plot(capsys, out):
    pytest.importorskip("matplotlib")
    code, printed, err = plot(capsys, "--rows", H100_ROWS, "--out", out, "--storage", out / "none")
    assert code == exit_codes.OK, err
    assert "66 rows" in printed and (out / "speedup_vs_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_history_of_stored_rows_is_drawn(tmp_path, capsys, out):
    pytest.importorskip("matplotlib")
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows(ks=(4,))))  # no sweep: only the history is drawn
    row = sweep_rows()[0]  # stored as perf/test_end_to_end.py stores it: the row, its ratios for the gate
    _stored(tmp_path, {**row, "ratios": {"speedup": {"values": row["ratios"], "higher_is_better": True}}})
    _stored(tmp_path, {"ratios": {"r": {"values": [1.0], "higher_is_better": True}}}, name="0002_bbb_run.json")
    code, printed, err = plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "store")
    assert code == exit_codes.OK, err
    assert "history.png (2 stored run(s))" in printed
    assert sorted(p.name for p in out.iterdir()) == ["history.png"]
    assert "commit aaa, 2026-11-22T00:00:01, 0001_aaa_run.json" in _description(out / "history.png")


def _description(png: Path) -> str:
    from PIL import Image

    with Image.open(png) as image:
        return image.text.get("Description", "")


def test_a_png_names_the_run_its_rows_are_from(tmp_path, capsys, out):
    pytest.importorskip("matplotlib")
    rows = tmp_path / "rows.json"
    stamp = {"commit": "abc1234-dirty", "started": "2026-11-23T10:00:00+00:00"}
    rows.write_text(json.dumps([{**row, "run": stamp} for row in sweep_rows()]))
    code, printed, err = plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "none")
    assert code == exit_codes.OK, err
    said = f"8 rows of {rows}, commit abc1234-dirty, started 2026-11-23T10:00:00+00:00"
    assert said in printed and _description(out / "speedup_vs_k.png") == said


def test_a_png_is_renamed_into_place_whole_or_not_at_all(tmp_path, capsys, out, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(sweep_rows()))
    assert plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "none")[0] == exit_codes.OK
    whole = (out / "speedup_vs_k.png").read_bytes()

    def killed_mid_write(self, fname, *args, **kwargs):
        Path(fname).write_bytes(whole[:100])  # half a PNG, then the process dies
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", killed_mid_write)
    with pytest.raises(KeyboardInterrupt):
        plot(capsys, "--rows", rows, "--out", out, "--storage", tmp_path / "none")
    assert (out / "speedup_vs_k.png").read_bytes() == whole  # the previous plot, untouched
    assert sorted(p.name for p in out.iterdir()) == ["speedup_vs_k.png"]  # no temporary file left behind
