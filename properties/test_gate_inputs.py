"""`specdec bench gate` on empty, partial and malformed inputs (issue 23, items 4 and 6).

The gate cannot pass on nothing: a run with no benchmark, renamed benchmarks or no ratio exits
NO_VERDICT (4) saying what is missing; benchmarks or metrics in one run only are listed; a ratio
that is not finite and positive is refused by benchmark and metric.  A malformed file - given as
BASELINE / CURRENT or stored under --storage - is one line on stderr naming the file and what is
wrong, exit 4, never a traceback and never the regression code.  A path that is not a file is a
bad argument (2), refused before any work.
"""

from __future__ import annotations

import copy
import json

import pytest

from specdec.cli import exit_codes, main

NAME = "perf/test_x.py::test_a"


def run_data(values=(2.0, 2.1, 1.95), *, name=NAME, exact=0.8, commit="abc", when="2026-11-22T00:00:01") -> dict:
    return {
        "machine_info": {"cpu_model": "x", "torch": "2", "gpu": None, "torch_threads": 2},
        "commit_info": {"id": commit},
        "datetime": when,
        "benchmarks": [{"fullname": name, "stats": {"median": 1.0},
                        "extra_info": {"ratios": {"speedup": {"values": list(values), "higher_is_better": True}},
                                       "exact": {"acceptance": exact}}}],
    }


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def gate(capsys, *args):
    code = main(["bench", "gate", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- nothing comparable: NO_VERDICT


def _no_benchmarks():
    data = run_data()
    data["benchmarks"] = []
    return data


def _renamed():
    return run_data(name="perf/test_x.py::test_renamed")


def _no_ratios():
    data = run_data()
    data["benchmarks"][0]["extra_info"] = {}
    return data


@pytest.mark.parametrize("baseline, current, flags, says", [
    (run_data(), _no_benchmarks(), [], "holds no benchmark"),
    (run_data(), _renamed(), [], "no benchmark in both runs"),
    (_no_ratios(), _no_ratios(), ["--no-exact"], "no ratio"),
    (_no_ratios(), _no_ratios(), [], "no ratio"),
])
def test_gate_with_nothing_comparable_has_no_verdict(tmp_path, capsys, baseline, current, flags, says):
    base = write(tmp_path, "base.json", baseline)
    cur = write(tmp_path, "cur.json", current)
    code, out, err = gate(capsys, base, cur, *flags)
    assert code == exit_codes.NO_VERDICT, (out, err)
    assert says in err and "cur.json" in err
    assert "0 failing" not in out


def test_gate_lists_renamed_benchmarks_on_both_sides(tmp_path, capsys):
    base = write(tmp_path, "base.json", run_data())
    cur = write(tmp_path, "cur.json", _renamed())
    code, out, _ = gate(capsys, base, cur)
    assert code == exit_codes.NO_VERDICT
    assert f"MISSING     {NAME}: only in the baseline run" in out
    assert "MISSING     perf/test_x.py::test_renamed: only in the current run" in out


def test_gate_judges_what_compares_and_lists_what_is_missing(tmp_path, capsys):
    base_data, cur_data = run_data(), run_data()
    extra = copy.deepcopy(base_data["benchmarks"][0])
    extra["fullname"] = "perf/test_x.py::test_gone"
    base_data["benchmarks"].append(extra)
    cur_data["benchmarks"][0]["extra_info"]["ratios"]["new_metric"] = {"values": [1.0, 1.0], "higher_is_better": True}
    code, out, _ = gate(capsys, write(tmp_path, "base.json", base_data), write(tmp_path, "cur.json", cur_data))
    assert code == exit_codes.OK, out
    assert "MISSING     perf/test_x.py::test_gone: only in the baseline run" in out
    assert f"MISSING     {NAME} new_metric: only in the current run" in out
    assert "2 comparisons: 0 failing, 0 improved; 2 missing (listed above)" in out


def test_a_ratio_the_current_run_dropped_fails_the_gate(tmp_path, capsys):
    """The newer run keeps its exact metric but no longer stores the speedup ratio: not a pass (issue 31)."""
    cur_data = run_data()
    del cur_data["benchmarks"][0]["extra_info"]["ratios"]["speedup"]
    code, out, _ = gate(capsys, write(tmp_path, "base.json", run_data()), write(tmp_path, "cur.json", cur_data))
    assert code == exit_codes.FAIL, out
    assert f"DROPPED     {NAME} speedup: in the baseline run, not in the current one" in out
    assert "1 failing" in out


@pytest.mark.parametrize("flags, dropped", [([], ["speedup", "acceptance"]), (["--no-exact"], ["speedup"])])
def test_a_current_run_that_dropped_every_metric_fails_the_gate(tmp_path, capsys, flags, dropped):
    """Issue 40 item 8: every comparison DROPPED (a load run whose every request failed stores no ratio) is a failing
    gate, exit 1 saying why - not "nothing to compare" (exit 4), though each line says it fails the gate."""
    code, out, err = gate(capsys, write(tmp_path, "base.json", run_data()), write(tmp_path, "cur.json", _no_ratios()), *flags)
    assert code == exit_codes.FAIL, (out, err)
    assert all(f"DROPPED     {NAME} {metric}" in out for metric in dropped), out
    assert f"{len(dropped)} failing" in out and "dropped every metric" in out and not err


@pytest.mark.parametrize("current, verdict, code", [
    ([0.0, 0.0, 0.0], "REGRESSION", exit_codes.FAIL),  # goodput fell to 0: a ratio of 0, judged
    ([1.1, 1.2, 1.0], "OK", exit_codes.OK),
])
def test_a_goodput_ratio_that_fell_to_zero_is_judged_a_regression(tmp_path, capsys, current, verdict, code):
    """Issue 40 item 8: a higher-is-better ratio of 0 is stored and judged (a regression), not a missing ratio; a
    baseline of 0 judges a current of 0 unchanged and anything above it an improvement."""
    base = write(tmp_path, "base.json", run_data([1.1, 1.2, 1.0]))
    done = gate(capsys, base, write(tmp_path, "cur.json", run_data(current)), "--no-exact", "--verbose")
    assert done[0] == code and f"{verdict:11s} {NAME} speedup" in done[1], done
    zero = write(tmp_path, "zero.json", run_data([0.0, 0.0, 0.0]))
    for after, says in ((zero, "OK"), (base, "IMPROVEMENT")):
        found, out, err = gate(capsys, zero, after, "--no-exact", "--verbose")
        assert found in (exit_codes.OK,) and f"{says:11s} {NAME} speedup" in out and not err, (out, err)


def test_a_regression_still_fails_beside_missing_benchmarks(tmp_path, capsys):
    base_data = run_data()
    extra = copy.deepcopy(base_data["benchmarks"][0])
    extra["fullname"] = "perf/test_x.py::test_gone"
    base_data["benchmarks"].append(extra)
    cur = write(tmp_path, "cur.json", run_data([1.0, 1.05, 0.98]))
    code, out, _ = gate(capsys, write(tmp_path, "base.json", base_data), cur)
    assert code == exit_codes.FAIL
    assert "REGRESSION" in out and "MISSING" in out


@pytest.mark.parametrize("values, higher, shown", [
    ([2.0, float("inf"), 2.0], True, "inf"),
    ([2.0, float("nan")], True, "nan"),
    ([2.0, 0.0], False, "0.0"),  # 0 is a lower-is-better ratio's impossible value (a higher-is-better one's total loss)
    ([-1.0, 2.0], True, "-1.0"),
    ([2.0, -0.5], False, "-0.5"),
])
def test_a_ratio_that_is_not_finite_and_positive_is_refused_by_benchmark_and_metric(tmp_path, capsys, values, higher, shown):
    base_data, cur_data = run_data(), run_data(values)
    for data in (base_data, cur_data):
        data["benchmarks"][0]["extra_info"]["ratios"]["speedup"]["higher_is_better"] = higher
    base = write(tmp_path, "base.json", base_data)
    cur = write(tmp_path, "cur.json", cur_data)  # json.dumps writes Infinity / NaN, json.loads reads them
    code, out, err = gate(capsys, base, cur)
    assert code == exit_codes.NO_VERDICT, (out, err)
    assert "cur.json" in err and NAME in err and "speedup" in err and shown in err
    assert "OK" not in out and "comparisons" not in out


# ---------------------------------------------------------------- malformed files: one line naming the file, exit 4


def _mutate(change):
    data = run_data()
    change(data)
    return json.dumps(data)


MALFORMED = {
    "no fullname": (_mutate(lambda d: d["benchmarks"][0].pop("fullname")), "fullname"),
    "no values": (_mutate(lambda d: d["benchmarks"][0]["extra_info"]["ratios"]["speedup"].pop("values")), "values"),
    "values not a list": (_mutate(lambda d: d["benchmarks"][0]["extra_info"]["ratios"]["speedup"].update(values="2.0")), "values"),
    "values empty": (_mutate(lambda d: d["benchmarks"][0]["extra_info"]["ratios"]["speedup"].update(values=[])), "values"),
    "value a bool": (_mutate(lambda d: d["benchmarks"][0]["extra_info"]["ratios"]["speedup"].update(values=[True])), "values"),
    "direction not a bool": (_mutate(lambda d: d["benchmarks"][0]["extra_info"]["ratios"]["speedup"].update(higher_is_better="yes")),
                             "higher_is_better"),
    "ratios a list": (_mutate(lambda d: d["benchmarks"][0]["extra_info"].update(ratios=[1.0])), "ratios"),
    "exact a list": (_mutate(lambda d: d["benchmarks"][0]["extra_info"].update(exact=[0.8])), "exact"),
    "exact not finite": (_mutate(lambda d: d["benchmarks"][0]["extra_info"]["exact"].update(acceptance=float("nan"))), "acceptance"),
    "extra_info a list": (_mutate(lambda d: d["benchmarks"][0].update(extra_info=[])), "extra_info"),
    "benchmark a string": (_mutate(lambda d: d.update(benchmarks=["x"])), "benchmarks[0]"),
    "duplicate fullname": (_mutate(lambda d: d["benchmarks"].append(copy.deepcopy(d["benchmarks"][0]))), "twice"),
    "machine_info a list": (_mutate(lambda d: d.update(machine_info=["x"])), "machine_info"),
    "machine_info a string": (_mutate(lambda d: d.update(machine_info="x")), "machine_info"),
    "commit_info a string": (_mutate(lambda d: d.update(commit_info="abc")), "commit_info"),
    "commit id a number": (_mutate(lambda d: d.update(commit_info={"id": 5})), "commit_info"),
    "benchmarks a number": (_mutate(lambda d: d.update(benchmarks=5)), "benchmarks"),
    "no benchmarks key": (_mutate(lambda d: d.pop("benchmarks")), "benchmarks"),
    "null datetime": (_mutate(lambda d: d.update(datetime=None)), "datetime"),
    "datetime not a date": (_mutate(lambda d: d.update(datetime="yesterday")), "datetime"),
    "a list, not an object": ("[]", "JSON object"),
    "empty": ("", "not JSON"),
    "truncated": (json.dumps(run_data())[:40], "not JSON"),
    "UTF-16": (None, "UTF-8"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_run_is_one_line_naming_the_file(tmp_path, capsys, case):
    text, says = MALFORMED[case]
    bad = tmp_path / "bad.json"
    if text is None:
        bad.write_bytes(json.dumps(run_data()).encode("utf-16"))
    else:
        bad.write_text(text)
    good = write(tmp_path, "good.json", run_data())
    for args in ((good, bad), (bad, good)):
        code, out, err = gate(capsys, *args)
        assert code == exit_codes.NO_VERDICT, (case, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert str(bad) in lines[0] and says in lines[0], lines[0]


def test_a_malformed_stored_run_in_the_history_is_named(tmp_path, capsys):
    folder = tmp_path / "Linux-CPython-3.11-64bit"
    folder.mkdir()
    write(folder, "0001_aaa_run1.json", run_data(when="2026-11-22T00:00:01"))
    write(folder, "0002_bbb_run2.json", run_data(when="2026-11-22T00:00:02"))
    bad = write(folder, "0003_ccc_run3.json", _mutate(lambda d: d["benchmarks"][0].pop("fullname")))
    code, _, err = gate(capsys, "--storage", tmp_path)
    assert code == exit_codes.NO_VERDICT
    assert len(err.strip().splitlines()) == 1 and bad in err and "fullname" in err
    (tmp_path / "Linux-CPython-3.11-64bit" / "0003_ccc_run3.json").write_text(_mutate(lambda d: d.update(datetime=None)))
    code, _, err = gate(capsys, "--storage", tmp_path)  # a null datetime used to crash the sort
    assert code == exit_codes.NO_VERDICT and bad in err and "datetime" in err


def test_a_history_of_fewer_than_two_runs_has_no_verdict(tmp_path, capsys):
    folder = tmp_path / "Linux-CPython-3.11-64bit"
    folder.mkdir()
    write(folder, "0001_aaa_run1.json", run_data())
    code, _, err = gate(capsys, "--storage", tmp_path)
    assert code == exit_codes.NO_VERDICT and "1 stored run" in err


@pytest.mark.parametrize("where", ["baseline", "current"])
def test_a_path_that_is_not_a_file_is_a_usage_error(tmp_path, capsys, where):
    good = write(tmp_path, "good.json", run_data())
    for bad, says in ((tmp_path, "is a folder"), (tmp_path / "nowhere.json", "does not exist")):
        args = (bad, good) if where == "baseline" else (good, bad)
        code, out, err = gate(capsys, *args)
        assert code == exit_codes.USAGE and says in err and str(bad) in err and not out
    code, out, err = gate(capsys, "--storage", tmp_path / "nowhere")
    assert code == exit_codes.USAGE and "nowhere" in err
