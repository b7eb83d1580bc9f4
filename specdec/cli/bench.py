"""``specdec bench run`` (any decoder against its autoregressive twin, :mod:`specdec.bench.pairs`),
``specdec bench load`` (open-loop load at request rates, :mod:`specdec.cli.load`),
``specdec bench gate`` (the ratio gate over two stored runs, :mod:`specdec.bench.gate`) and
``specdec bench plot`` (the latest run's rows and the stored history, :mod:`specdec.plots`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from . import exit_codes
from ._args import UsageError, device, folder, output_folder, unit_interval


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
    from .._validation import as_float
    from ..bench.files import BenchFileError
    from ..bench.gate import compare_runs, nothing_to_judge, same_machine
    from ..bench.history import load_history, load_run

    unit_interval("--confidence", args.confidence)
    try:
        as_float("--margin", args.margin, minimum=0.0, maximum=1.0, high_open=True)
    except (TypeError, ValueError):
        raise UsageError(f"--margin must be in [0, 1), got {args.margin}") from None
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
    bad = [f for f in findings if f.verdict in ("regression", "changed", "dropped")]
    missing, judged = sum(f.verdict == "missing" for f in findings), sum(f.judged for f in findings)
    print(f"{judged} comparisons: {len(bad)} failing, "
          f"{sum(f.verdict == 'improvement' for f in findings)} improved"
          + (f"; {missing} missing (listed above)" if missing else ""))
    if not judged:  # every metric both runs' benchmarks had in the baseline is gone: a run that stopped measuring
        print(f"the current run {current.path} dropped every metric the baseline held for their shared benchmarks "
              "(a run whose requests all failed stores none): the gate fails")
    return exit_codes.FAIL if bad else exit_codes.OK


def plot_command(args) -> int:
    from ..bench.files import BenchFileError
    from ..bench.history import load_history
    from ..bench.latest import describe, load_rows, stamps
    from ..plots import history_series, k_sweeps, load_series, plot_history, plot_speedup_vs_batch, plot_speedup_vs_k, plot_subjects, side_by_side

    out, storage = Path(args.out), Path(args.storage)
    for name, folder in (("--out", out), ("--storage", storage)):
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"{name} {folder} is not a folder")
    if not out.is_dir():
        raise UsageError(f"--out {out}: the folder does not exist")
    if not os.access(out, os.W_OK):
        raise UsageError(f"--out {out}: the folder is not writable")
    paths = [_input_file("--rows", p, ": run `make bench` first (it writes .benchmarks/latest/rows.json)") for p in args.rows]
    rows_path = " + ".join(str(p) for p in paths)
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("specdec bench plot needs matplotlib: pip install 'specdec[plot]' (make install does)")
    try:  # read and check everything before drawing anything
        rows = [row for p in paths for row in load_rows(p)]
        runs = load_history(storage) if storage.is_dir() else []
        series = history_series(runs)
    except BenchFileError as error:
        return _no_verdict("plot", error)
    drawn = 0
    origin = "; ".join(describe(stamp) for stamp in stamps(rows))
    for name, has, draw in (("speedup_vs_batch.png", load_series, plot_speedup_vs_batch), ("subjects.png", side_by_side, plot_subjects)):
        if has(rows):
            draw(rows, str(out / name), f"{len(rows)} rows of {rows_path}, {origin}")
            print(f"wrote {out / name} ({len(rows)} rows of {rows_path}, {origin})")
            drawn += 1
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


# BenchPlan's fields and the options of `specdec bench run` that set them: its refusals name the option as typed
_PLAN_OPTIONS = {"ks": "--k", "kinds": "--kinds", "prompts": "--prompts", "batches": "--batch", "mix_prompts": "--mix-prompts",
                 "lengths": "--lengths", "length_prompts": "--length-prompts", "new_tokens": "--new-tokens", "rounds": "--rounds",
                 "seed": "--seed"}


def _as_option(message: str) -> str:
    """A :class:`~specdec.bench.run_plan.BenchPlan` refusal ("ks[] must be ...") in the command's words ("--k must be ...")."""
    field, space, rest = message.partition(" ")
    option = _PLAN_OPTIONS.get(field.removesuffix("[]"))
    return f"{option} {rest}" if option and space else message


def run_command(args) -> int:
    """Build the plan, say it, and run it as a pytest session of :mod:`specdec.bench.suite` under
    pytest-benchmark (stored in ``--storage`` like ``make bench``'s runs)."""
    import tempfile
    import warnings

    from ..bench.run_plan import BenchPlan
    from ..bench.pairs import import_object, is_factory

    for module in ("pytest", "pytest_benchmark"):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"specdec bench run needs {module}: pip install 'specdec[test]' (make install does)")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m and specdec check: the working directory's modules import
    device(args.device)  # cuda without CUDA is refused here, in specdec check's words
    output_folder("--storage", args.storage)
    output_folder("--latest", args.latest)
    folder("--tokenizer", args.tokenizer)
    if args.kinds == [] and not args.batch and not args.lengths:
        raise UsageError("the plan measures nothing: give --kinds, --batch or --lengths")
    try:
        plan = BenchPlan(args.subject, twin=args.twin, ks=args.k, kinds=args.kinds, prompts=args.prompts,
                         batches=args.batch, mix_prompts=args.mix_prompts, lengths=args.lengths,
                         length_prompts=args.length_prompts, new_tokens=args.new_tokens, rounds=args.rounds,
                         seed=args.seed, device=args.device, name=args.name, tokenizer=args.tokenizer)
    except (ValueError, TypeError) as error:
        raise UsageError(_as_option(str(error))) from None
    try:
        subject = import_object(plan.subject)  # a bad SUBJECT is a usage error, before pytest starts
        if plan.twin:
            import_object(plan.twin, what="--twin")
        elif not callable(subject) and not (hasattr(subject, "speculative") and hasattr(subject, "autoregressive")):
            raise TypeError(f"{plan.subject} is {type(subject).__name__} {subject!r}, not a benchmark subject: name a factory with a "
                            "num_draft_tokens parameter, an object with speculative and autoregressive attributes, or a "
                            "Decoder (a callable) with --twin MODULE:ATTR")
        elif not (is_factory(subject) or (hasattr(subject, "speculative") and hasattr(subject, "autoregressive"))):
            raise ValueError(f"{plan.subject} is a Decoder without a twin: pass --twin MODULE:ATTR, or name a factory "
                             "with a num_draft_tokens parameter, or an object with speculative and autoregressive attributes")
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None
    print(f"specdec bench run {plan.subject}: {plan.describe()}", flush=True)
    import pytest

    from ..bench import suite

    with tempfile.TemporaryDirectory() as empty:
        ini = Path(empty) / "pytest.ini"
        ini.write_text("[pytest]\n")
        argv = [suite.__file__, "-c", str(ini), "--rootdir", os.getcwd(), "-p", "no:cacheprovider", "-p", "no:randomly",
                "-q", "-x", "--tb=no", "-rN", "-p", "no:warnings", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                "--benchmark-enable", "--benchmark-only", "--benchmark-storage", args.storage,
                "--benchmark-columns=median,rounds", "--specdec-bench-plan", plan.to_json(),
                "--specdec-bench-latest", args.latest]
        argv += [f"--benchmark-save={args.save}"] if args.save else ["--benchmark-autosave"]
        suite.ERRORS.clear()
        # the caller's PYTEST_ADDOPTS (--durations, -n, -p ...) would change this run's output and timing: not read here
        addopts = os.environ.pop("PYTEST_ADDOPTS", None)
        try:
            with warnings.catch_warnings():  # pytest-benchmark warns "not saving anything" after a run that raised
                warnings.simplefilter("ignore")
                code = pytest.main(argv)
        finally:
            if addopts is not None:
                os.environ["PYTEST_ADDOPTS"] = addopts
    if code == 2:  # pytest's "interrupted"
        return exit_codes.INTERRUPTED
    for line in suite.ERRORS:
        print(line, file=sys.stderr)
    return exit_codes.OK if code == 0 else exit_codes.ERROR  # a benchmark that raised: the subject misbehaved


def add_parser(sub) -> None:
    bench = sub.add_parser("bench", help="benchmark history: the ratio gate and plots (make bench stores the runs)")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    run = bench_sub.add_parser("run", help="benchmark any speculative decoder against its autoregressive twin (stored like make bench)")
    run.add_argument("subject", help="package.module:attr: a BenchSubject, a factory of num_draft_tokens, or a Decoder with --twin")
    run.add_argument("--twin", default=None, help="package.module:attr: the autoregressive twin of a Decoder subject")
    run.add_argument("--k", type=int, nargs="+", default=[4], help="draft lengths K (default 4)")
    run.add_argument("--kinds", nargs="*", default=None, help="task kinds at batch 1 (default: all six; none: --kinds with no value)")
    run.add_argument("--prompts", type=int, default=1, help="prompts per task kind (default 1)")
    run.add_argument("--batch", type=int, nargs="*", default=[], help="batch sizes of the load sweep, e.g. 1 4 16 64 (default: none)")
    run.add_argument("--mix-prompts", type=int, default=64, help="prompts of the load sweep's mix (default 64)")
    run.add_argument("--lengths", type=int, nargs="*", default=[], help="input-length buckets in tokens: 128 1024 4096 (default: none)")
    run.add_argument("--length-prompts", type=int, default=2, help="prompts per length bucket (default 2)")
    run.add_argument("--new-tokens", type=int, default=24, help="tokens generated per prompt, both sides (default 24)")
    run.add_argument("--rounds", type=int, default=3, help="paired rounds per benchmark (default 3)")
    run.add_argument("--seed", type=int, default=0, help="seed of the first call; call i gets seed + i (default 0)")
    run.add_argument("--device", default="cpu", help="device for clocks and peak memory (default cpu)")
    run.add_argument("--name", default=None, help="the subject's name in the rows (default: its own)")
    run.add_argument("--tokenizer", default=None, help="tokenizer folder for the prompts (default: SmolLM2-135M-Instruct's)")
    run.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder (default .benchmarks)")
    run.add_argument("--save", default=None, help="save the run under this name (default: autosave under the commit id)")
    run.add_argument("--latest", default=".benchmarks/latest", help="folder for rows.json and table.md (default .benchmarks/latest)")
    run.set_defaults(run=run_command, preload=("torch",))  # see _interrupts
    from . import load

    load.add_parser(bench_sub)
    gate = bench_sub.add_parser("gate", help="fail when a stored run's ratios regressed against a baseline run")
    gate.add_argument("baseline", nargs="?", help="baseline pytest-benchmark JSON (default: the second newest in --storage)")
    gate.add_argument("current", nargs="?", help="current pytest-benchmark JSON (default: the newest in --storage)")
    gate.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder (default .benchmarks)")
    gate.add_argument("--margin", type=float, default=0.2, help="tolerated relative change of a ratio (default 0.2)")
    gate.add_argument("--confidence", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    gate.add_argument("--no-exact", action="store_true", help="do not compare seeded metrics exactly (runs from different machines)")
    gate.add_argument("--verbose", action="store_true", help="print every comparison, not only failures and improvements")
    gate.set_defaults(run=gate_command)
    plot = bench_sub.add_parser("plot", help="PNGs: speedup vs K per task kind, vs batch size, subjects side by side, and the stored history")
    plot.add_argument("--rows", nargs="+", default=[".benchmarks/latest/rows.json"],
                      help="rows of the latest run, or of several runs to draw together, e.g. ours and vLLM's "
                           "(default .benchmarks/latest/rows.json)")
    plot.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder (default .benchmarks)")
    plot.add_argument("--out", default=".", help="folder for speedup_vs_k.png, speedup_vs_batch.png, subjects.png and history.png (default .)")
    plot.set_defaults(run=plot_command)
