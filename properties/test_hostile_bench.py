"""Hostile arguments and hostile stored files for ``specdec bench load / run / gate`` (issue 40, item 11).

Every bad argument - nan, inf, 0, negatives, huge values, wrong types, a path that is a file or is missing, a device
this machine lacks - is refused with exit 2 in one line naming the option as it was typed, before any subject is
built (the subject is :func:`fixtures.load_subjects.tripwire`, which fails the test when called) and before any
request is sent or any tokenizer loaded (each refusal takes well under a second).  A value argparse cannot convert
is argparse's own refusal (exit 2, its usage line, then one line naming the option).  A hostile stored run handed to
the gate (truncated JSON, a key missing, ratios zero, negative, nan, infinite) is exit 4 with one line naming the
file, or a verdict (0 / 1) - never a traceback.  Hypothesis is derandomized (properties/conftest.py) and sized to
keep the file near half a minute on two cores.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from specdec.bench.arrivals import MAX_ARRIVALS
from specdec.cli import exit_codes, main
from specdec.workload.prompts import KINDS, LENGTH_BUCKETS, PROMPTS

TRIP = "fixtures.load_subjects:tripwire"
INT64_MAX = 2**63 - 1
TOTAL_PROMPTS = sum(len(PROMPTS[k]) for k in KINDS)
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    (root / "a-file").write_text("not a folder\n")
    return {"file": str(root / "a-file"), "under-file": str(root / "a-file" / "sub"), "missing": str(root / "missing" / "deeper"),
            "store": str(root / "store"), "latest": str(root / "latest")}


def run(argv) -> tuple[int, str, str, bool]:
    """(exit status, stdout, stderr, refused by argparse) of ``specdec ARGV``, in-process."""
    out, err = io.StringIO(), io.StringIO()
    by_argparse = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as stop:
            code, by_argparse = stop.code, True
    return code, out.getvalue(), err.getvalue(), by_argparse


def assert_refused(argv, option: str) -> None:
    started = time.perf_counter()
    code, out, err, by_argparse = run(argv)
    lines = err.strip().splitlines()
    assert code == exit_codes.USAGE, (argv, code, out, err)
    assert lines and option in lines[-1] and "Traceback" not in err, (argv, err)
    assert by_argparse or len(lines) == 1, (argv, err)  # ours: exactly one line
    assert not out, (argv, out)  # nothing started (bench load / run print their plan first)
    assert time.perf_counter() - started < 3.0, argv  # no tokenizer, no subject, no window


def load_argv(paths, *extra):
    return ["bench", "load", TRIP, "--rate", "1", "--duration", "1", "--warmup", "0", "--rounds", "1", "--prompts", "2",
            "--new-tokens", "2", "--storage", paths["store"], *extra]


def run_argv(paths, *extra):
    return ["bench", "run", TRIP, "--kinds", "qa", "--rounds", "1", "--new-tokens", "2", "--storage", paths["store"],
            "--latest", paths["latest"], *extra]


# ---------------------------------------------------------------- the cases, one by one

LOAD_CASES = [
    (["--rate", "nan"], "--rate"), (["--rate", "1", "nan"], "--rate"), (["--rate=-1"], "--rate"), (["--rate", "0"], "--rate"),
    (["--rate", "1e12"], "--rate"), (["--rate", "inf"], "--rate"),
    (["--duration", "0"], "--duration"), (["--duration=-1"], "--duration"), (["--duration", "nan"], "--duration"),
    (["--duration", "1e300"], "--duration"), (["--warmup=-1"], "--warmup"), (["--warmup", "nan"], "--warmup"),
    (["--rounds", "0"], "--rounds"), (["--prompts", "0"], "--prompts"), (["--prompts", str(TOTAL_PROMPTS + 1)], "--prompts"),
    (["--new-tokens", "0"], "--new-tokens"), (["--seed=-1"], "--seed"),
    (["--rounds", "2", "--seed", str(INT64_MAX)], "--seed"), (["--process", "gamma", "--burstiness", "0"], "--burstiness"),
    (["--burstiness", "0.5"], "--burstiness"),
    (["--k", "0"], "--k"), (["--max-batch", "0"], "--max-batch"), (["--objective-ttft", "0"], "--objective-ttft"),
    (["--objective-tpot", "nan"], "--objective-tpot"),
]


@pytest.mark.parametrize("extra, option", LOAD_CASES)
def test_bench_load_refuses_each_bad_number_first(paths, extra, option):
    assert_refused(load_argv(paths, *extra), option)


@pytest.mark.parametrize("option, which", [("--storage", "file"), ("--storage", "under-file"), ("--tokenizer", "missing"),
                                           ("--tokenizer", "file")])
def test_bench_load_refuses_bad_paths_first(paths, option, which):
    assert_refused(load_argv(paths, option, paths[which]), option)


RUN_CASES = [
    (["--k", "0"], "--k"), (["--k", "2", "-3"], "--k"), (["--batch", "0"], "--batch"), (["--batch", "4", "0"], "--batch"),
    (["--lengths", "5"], "--lengths"), (["--prompts", "0"], "--prompts"), (["--prompts", "99"], "--prompts"),
    (["--mix-prompts", "0"], "--mix-prompts"), (["--length-prompts", "0"], "--length-prompts"), (["--new-tokens", "1"], "--new-tokens"),
    (["--rounds", "0"], "--rounds"), (["--seed=-1"], "--seed"), (["--seed", str(INT64_MAX)], "--seed"),
    (["--kinds", "nope"], "--kinds"), (["--device", "tpu9"], "--device"), (["--device", "meta"], "--device"),
]


@pytest.mark.parametrize("extra, option", RUN_CASES)
def test_bench_run_refuses_each_bad_argument_first_by_its_option_name(paths, extra, option):
    assert_refused(run_argv(paths, *extra), option)


@pytest.mark.parametrize("option, which", [("--storage", "file"), ("--latest", "file"), ("--latest", "under-file"),
                                           ("--tokenizer", "missing")])
def test_bench_run_refuses_bad_paths_first(paths, option, which):
    assert_refused(run_argv(paths, option, paths[which]), option)


def test_bench_run_refuses_cuda_without_cuda_like_check(paths):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert_refused(run_argv(paths, "--device", "cuda"), "--device cuda")
    assert_refused(["check", "--device", "cuda"], "--device cuda")  # the same words as specdec check


@pytest.mark.parametrize("extra, option", [(["--margin", "nan"], "--margin"), (["--margin", "1"], "--margin"),
                                           (["--confidence", "2"], "--confidence"), (["--confidence", "nan"], "--confidence")])
def test_bench_gate_refuses_bad_numbers_first(paths, extra, option):
    assert_refused(["bench", "gate", "--storage", paths["store"], *extra], option)


# ---------------------------------------------------------------- fuzzed: every option, hostile values

NOT_A_NUMBER = st.sampled_from(["abc", "", "1,5", "0x10", "--", "1e", "None"])
NOT_AN_INT = st.one_of(NOT_A_NUMBER, st.sampled_from(["1.5", "nan", "inf", "1e3", "2.0"]))


def bad_float(*, minimum: float, open_low: bool, above: float | None = None):
    """Strings for a float option: not numbers, nan, +-inf, values below ``minimum`` (at it when open), above ``above``."""
    low = st.floats(max_value=minimum if open_low else minimum - 5e-324, allow_nan=False, allow_infinity=False)
    parts = [NOT_A_NUMBER, st.sampled_from(["nan", "inf", "-inf", "1e400", "-1e400"]), low.map(repr)]
    if above is not None:
        parts.append(st.floats(min_value=above, allow_nan=False, allow_infinity=False).map(repr))
    return st.one_of(*parts)


def bad_int(*, minimum: int, maximum: int | None = None):
    parts = [NOT_AN_INT, st.integers(max_value=minimum - 1).map(str)]
    if maximum is not None:
        parts.append(st.integers(min_value=maximum + 1, max_value=maximum + 2**70).map(str))
    return st.one_of(*parts)


LOAD_OPTIONS = {  # with the base arguments of load_argv: a window of 1 s
    "--rate": bad_float(minimum=0.0, open_low=True, above=2.0 * MAX_ARRIVALS),
    "--duration": bad_float(minimum=0.0, open_low=True, above=2.0 * MAX_ARRIVALS),
    "--warmup": bad_float(minimum=0.0, open_low=False, above=2.0 * MAX_ARRIVALS),
    "--burstiness": st.one_of(bad_float(minimum=0.0, open_low=True), st.floats(0.01, 100).filter(lambda b: b != 1.0).map(repr)),
    "--objective-ttft": bad_float(minimum=0.0, open_low=True), "--objective-tpot": bad_float(minimum=0.0, open_low=True),
    "--k": bad_int(minimum=1), "--rounds": bad_int(minimum=1), "--prompts": bad_int(minimum=1, maximum=TOTAL_PROMPTS),
    "--new-tokens": bad_int(minimum=1), "--max-batch": bad_int(minimum=1), "--seed": bad_int(minimum=0, maximum=INT64_MAX),
    "--process": st.sampled_from(["", "uniform", "Poisson"]),
}


@FAST
@given(st.sampled_from(sorted(LOAD_OPTIONS)).flatmap(lambda name: st.tuples(st.just(name), LOAD_OPTIONS[name])))
def test_fuzzed_bench_load_arguments_are_refused_before_any_work(paths, hostile):
    option, value = hostile
    assert_refused(load_argv(paths, f"{option}={value}"), option)


RUN_OPTIONS = {
    "--k": bad_int(minimum=1), "--batch": bad_int(minimum=1).filter(lambda v: v != "--"),  # "--batch=--": no batch, valid
    "--prompts": bad_int(minimum=1, maximum=min(map(len, PROMPTS.values()))),
    "--mix-prompts": bad_int(minimum=1, maximum=TOTAL_PROMPTS), "--length-prompts": bad_int(minimum=1),
    "--new-tokens": bad_int(minimum=2), "--rounds": bad_int(minimum=1), "--seed": bad_int(minimum=0, maximum=INT64_MAX),
    "--lengths": st.one_of(NOT_AN_INT.filter(lambda v: v != "--"),
                           st.integers(-10**6, 10**6).filter(lambda n: n not in LENGTH_BUCKETS).map(str)),
    "--kinds": st.text(st.characters(codec="ascii", exclude_characters="-"), min_size=1, max_size=8).filter(lambda k: k not in KINDS),
    "--device": st.sampled_from(["tpu9", "cuda:x", "", "meta", "mps", "gpu", "cpu:-1:2"]),
}


@FAST
@given(st.sampled_from(sorted(RUN_OPTIONS)).flatmap(lambda name: st.tuples(st.just(name), RUN_OPTIONS[name])))
def test_fuzzed_bench_run_arguments_are_refused_before_any_work(paths, hostile):
    option, value = hostile
    assert_refused(run_argv(paths, f"{option}={value}"), option)


@FAST
@given(st.sampled_from(["--margin", "--confidence"]).flatmap(
    lambda name: st.tuples(st.just(name), bad_float(minimum=0.0, open_low=name == "--confidence", above=1.0))))
def test_fuzzed_bench_gate_arguments_are_refused(paths, hostile):
    option, value = hostile
    assert_refused(["bench", "gate", "--storage", paths["store"], f"{option}={value}"], option)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["load", "run", "gate"]), st.sampled_from(["file", "under-file", "missing"]))
def test_fuzzed_paths_are_refused_before_any_work(paths, command, which):
    if command == "load":
        option = "--tokenizer" if which == "missing" else "--storage"
        argv = load_argv(paths, option, paths[which])
    elif command == "run":
        option = "--tokenizer" if which == "missing" else "--latest"
        argv = run_argv(paths, option, paths[which])
    else:
        option = "--storage"
        argv = ["bench", "gate", "--storage", paths[which]]
    assert_refused(argv, option)


# ---------------------------------------------------------------- hostile stored runs handed to the gate

NAME = "open-loop::subject::K4::rate=1"


def stored(values=(1.1, 1.2, 1.0), higher=True) -> dict:
    return {"machine_info": {"cpu_model": "x"}, "commit_info": {"id": "abc"}, "datetime": "2026-11-22T00:00:01",
            "benchmarks": [{"fullname": NAME, "stats": {"median": 1.0},
                            "extra_info": {"ratios": {"goodput": {"values": list(values), "higher_is_better": higher}},
                                           "exact": {"acceptance": 0.5}}}]}


def gate_on(paths, baseline, current, *flags):
    """The gate on two files written from ``baseline`` / ``current`` (a dict, or the text to write)."""
    files = []
    for name, data in (("base.json", baseline), ("cur.json", current)):
        path = f"{paths['store']}-{name}"
        with open(path, "w") as handle:
            handle.write(data if isinstance(data, str) else json.dumps(data))
        files.append(path)
    code, out, err, by_argparse = run(["bench", "gate", *files, *flags])
    assert not by_argparse and "Traceback" not in err, err
    if code == exit_codes.NO_VERDICT:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and ".json" in lines[0], err
    else:
        assert code in (exit_codes.OK, exit_codes.FAIL) and "comparisons" in out and not err, (code, out, err)
    return code, out, err


HOSTILE_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                           st.sampled_from([0.0, -0.0, -1.0, 5e-324, 1e308, float("nan"), float("inf")]))


@FAST
@given(st.lists(st.one_of(st.floats(0.0, 10.0), HOSTILE_FLOATS), max_size=5), st.booleans(), st.booleans())
@example([0.0, 0.0, 0.0], True, True)
@example([0.0, -0.0], False, True)
@example([1e308, 1e308], False, False)
@example([5e-324, 1.0], False, True)
def test_fuzzed_stored_ratios_give_a_verdict_or_one_line(paths, values, higher, mutate_current):
    hostile, plain = stored(values, higher), stored(higher=higher)
    code, out, err = gate_on(paths, *((plain, hostile) if mutate_current else (hostile, plain)), "--no-exact")
    refused = not values or any(not math.isfinite(v) or v < 0 or (v == 0 and not higher) for v in values)
    assert (code == exit_codes.NO_VERDICT) == refused, (values, higher, code, out, err)
    if refused:
        assert "goodput" in err or "values" in err, err
    elif mutate_current and higher and all(v == 0 for v in values):
        assert code == exit_codes.FAIL and "REGRESSION" in out  # a goodput that fell to 0 is judged


def _drop(data, where):
    target = data
    for key in where[:-1]:
        target = target[key]
    del target[where[-1]]
    return data


KEYS = [("benchmarks",), ("datetime",), ("commit_info",), ("machine_info",), ("benchmarks", 0, "fullname"),
        ("benchmarks", 0, "stats"), ("benchmarks", 0, "extra_info"), ("benchmarks", 0, "extra_info", "ratios"),
        ("benchmarks", 0, "extra_info", "exact"), ("benchmarks", 0, "extra_info", "ratios", "goodput", "values"),
        ("benchmarks", 0, "extra_info", "ratios", "goodput", "higher_is_better"), ("benchmarks", 0, "extra_info", "ratios", "goodput")]


@FAST
@given(st.sampled_from(KEYS), st.booleans(), st.integers(min_value=1, max_value=10**6))
def test_fuzzed_truncated_or_keyless_runs_give_a_verdict_or_one_line(paths, where, mutate_current, cut):
    text = json.dumps(stored())
    truncated = text[: cut % len(text)]
    keyless = _drop(copy.deepcopy(stored()), where)
    for hostile in (truncated, keyless):
        code, out, err = gate_on(paths, *((stored(), hostile) if mutate_current else (hostile, stored())))
        if hostile is truncated:
            assert code == exit_codes.NO_VERDICT and "not JSON" in err, err
        elif where in (("benchmarks",), ("datetime",), ("benchmarks", 0, "fullname"),
                       ("benchmarks", 0, "extra_info", "ratios", "goodput", "values")):
            assert code == exit_codes.NO_VERDICT and where[-1] in err, (where, err)
        elif mutate_current and where[-1] in ("extra_info", "ratios", "exact", "goodput"):
            assert code == exit_codes.FAIL and "DROPPED" in out, (where, out)  # a measurement that stopped fails
