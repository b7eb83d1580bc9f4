"""``specdec bench gate`` (the ratio gate over two stored runs, :mod:`specdec.bench.gate`) and
``specdec bench plot`` (the latest run's rows and the stored history, :mod:`specdec.bench.plots`)."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path

from . import exit_codes
from ._args import UsageError, unit_interval


def _input_file(name: str, path: str, hint: str = "") -> Path:
    """A path argument that must name an existing file (checked before any work: a bad argument)."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{name} {path} is a folder; give a file")
    if not path.exists():
        raise UsageError(f"{name} {path} does not exist{hint}")
    return path


def _no_verdict(command: str, problem) -> int:
    """Nothing to judge or draw, or an unreadable input file: one line on stderr, NO_VERDICT."""
    print(f"specdec bench {command}: error: {problem}", file=sys.stderr)
    return exit_codes.NO_VERDICT


def gate_command(args) -> int:
    from ..bench.files import BenchFileError
    from ..bench.gate import compare_runs, nothing_to_judge, same_machine
    from ..bench.history import load_history, load_run

    unit_interval("--confidence", args.confidence)
    if not (math.isfinite(args.margin) and 0 <= args.margin < 1):
        raise UsageError(f"--margin must be in [0, 1), got {args.margin}")
    if bool(args.baseline) != bool(args.current):
        raise UsageError("give both BASELINE and CURRENT, or neither (then the two newest runs in --storage)")
    if args.baseline:
        paths = _input_file("BASELINE", args.baseline), _input_file("CURRENT", args.current)
    elif not Path(args.storage).is_dir():
        problem = "is not a folder" if Path(args.storage).exists() else "does not exist: run `make bench` (it saves under the commit id)"
        raise UsageError(f"--storage {args.storage} {problem}")
    try:
        runs = [load_run(p) for p in paths] if args.baseline else load_history(args.storage)
    except BenchFileError as error:
        return _no_verdict("gate", error)
    if len(runs) < 2:
        return _no_verdict("gate", f"{args.storage} holds {len(runs)} stored run(s); the gate needs two "
                                   "(make bench saves one per run)")
    baseline, current = runs[-2], runs[-1]
    print(f"baseline {baseline.path} (commit {baseline.label}); current {current.path} (commit {current.label}); "
          f"margin {args.margin:.0%}, {args.confidence:.0%} bootstrap interval on median(current)/median(baseline)")
    if not same_machine(baseline, current):
        print("warning: the runs come from different machines or settings; ratios travel better than times, exact metrics do not")
    findings = compare_runs(baseline, current, margin=args.margin, confidence=args.confidence, exact=not args.no_exact)
    for finding in findings:
        if args.verbose or finding.verdict != "ok":
            print(finding.line())
    reason = nothing_to_judge(baseline, current, findings, exact=not args.no_exact)
    if reason:
        return _no_verdict("gate", f"nothing to compare: {reason}")
    bad = [f for f in findings if f.verdict in ("regression", "changed")]
    missing = sum(not f.judged for f in findings)
    print(f"{sum(f.judged for f in findings)} comparisons: {len(bad)} failing, "
          f"{sum(f.verdict == 'improvement' for f in findings)} improved"
          + (f"; {missing} missing (listed above)" if missing else ""))
    return exit_codes.FAIL if bad else exit_codes.OK


def plot_command(args) -> int:
    from ..bench.files import BenchFileError
    from ..bench.history import load_history
    from ..bench.latest import describe, load_rows, stamps
    from ..bench.plots import history_series, k_sweeps, plot_history, plot_speedup_vs_k

    out, storage = Path(args.out), Path(args.storage)
    for name, folder in (("--out", out), ("--storage", storage)):
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"{name} {folder} is not a folder")
    if not out.is_dir():
        raise UsageError(f"--out {out}: the folder does not exist")
    if not os.access(out, os.W_OK):
        raise UsageError(f"--out {out}: the folder is not writable")
    rows_path = _input_file("--rows", args.rows, ": run `make bench` first (it writes .benchmarks/latest/rows.json)")
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("specdec bench plot needs matplotlib: pip install 'specdec[plot]' (make install does)")
    try:  # read and check everything before drawing anything
        rows = load_rows(rows_path)
        runs = load_history(storage) if storage.is_dir() else []
        series = history_series(runs)
    except BenchFileError as error:
        return _no_verdict("plot", error)
    drawn = 0
    origin = "; ".join(describe(stamp) for stamp in stamps(rows))
    if k_sweeps(rows):
        plot_speedup_vs_k(rows, str(out / "speedup_vs_k.png"), f"{len(rows)} rows of {rows_path}, {origin}")
        print(f"wrote {out / 'speedup_vs_k.png'} ({len(rows)} rows of {rows_path}, {origin})")
        drawn += 1
    else:
        print(f"no configuration with a K sweep in {rows_path} ({len(rows)} rows, {origin}): no speedup_vs_k.png")
    if series:
        plot_history(runs, str(out / "history.png"), series)
        print(f"wrote {out / 'history.png'} ({len(runs)} stored run(s))")
        drawn += 1
    else:
        found = f"{len(runs)} stored run(s) under {storage} and no end-to-end row among them" if runs else f"no stored runs under {storage}"
        print(f"{found}: no history.png")
    if not drawn:
        return _no_verdict("plot", f"nothing to draw from {rows_path} and {storage}")
    return exit_codes.OK


def add_parser(sub) -> None:
    bench = sub.add_parser("bench", help="benchmark history: the ratio gate and plots (make bench stores the runs)")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    gate = bench_sub.add_parser("gate", help="fail when a stored run's ratios regressed against a baseline run")
    gate.add_argument("baseline", nargs="?", help="baseline pytest-benchmark JSON (default: the second newest in --storage)")
    gate.add_argument("current", nargs="?", help="current pytest-benchmark JSON (default: the newest in --storage)")
    gate.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder (default .benchmarks)")
    gate.add_argument("--margin", type=float, default=0.2, help="tolerated relative change of a ratio (default 0.2)")
    gate.add_argument("--confidence", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    gate.add_argument("--no-exact", action="store_true", help="do not compare seeded metrics exactly (runs from different machines)")
    gate.add_argument("--verbose", action="store_true", help="print every comparison, not only failures and improvements")
    gate.set_defaults(run=gate_command)
    plot = bench_sub.add_parser("plot", help="PNGs: speedup vs K per task kind (latest run) and the stored history")
    plot.add_argument("--rows", default=".benchmarks/latest/rows.json", help="rows of the latest run (default .benchmarks/latest/rows.json)")
    plot.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder (default .benchmarks)")
    plot.add_argument("--out", default=".", help="folder for speedup_vs_k.png and history.png (default .)")
    plot.set_defaults(run=plot_command)
