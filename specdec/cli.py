"""Command line: ``specdec check`` (the main job), ``specdec compare`` and ``specdec bench gate|plot`` (also ``python -m specdec``).

Thin: argparse, argument checks before any work (a bad argument is one line on
stderr and exit status 2), then calls into the library.  Heavy modules are imported
inside the commands, so ``specdec --help`` starts fast.

``specdec check`` runs the conformance engine on the embedded defaults: our token,
block and multi-draft verifiers and our decoding loop, and transformers'
``_speculative_sampling`` and assisted generation through the adapters (tiny Llama
pairs; transformers' subjects get a time budget, ``--hf-budget``).  It prints the plan
and one report per subject, writes one JSON object, and exits 1 when a check fails.

``specdec check package.module:attr --kind verifier|multidraft|decoder`` checks any importable
subject instead (the working directory is on the import path); a subject that cannot be imported
or does not satisfy its Protocol is a one-line error naming the Protocol (exit 2).

``specdec bench gate`` compares the per-round ratios of two stored benchmark runs (exit 1 on a
regression, :mod:`specdec.bench.gate`); ``specdec bench plot`` draws the latest run and the history.

``specdec compare`` prints, for one (target, draft) pair, the acceptance of every
verification scheme next to its proven optimum (:mod:`specdec.laws.schemes`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

DEFAULT_TARGET = "0.5,0.3,0.2"  # SPEC §3 example
DEFAULT_DRAFT = "0.2,0.3,0.5"
DECODER_TV = 0.02  # our loop samples a few thousand sequences per second on a CPU: TV 0.01 would take minutes


class UsageError(Exception):
    """A bad argument: reported in one line, exit status 2."""


# ------------------------------------------------------------------ argument checks (before any work)


def _unit_interval(name: str, value: float) -> float:
    if not (math.isfinite(value) and 0 < value < 1):
        raise UsageError(f"{name} must be in (0, 1), got {value}")
    return value


def _seconds(name: str, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{name} must be a positive number of seconds, got {value}")
    return value


def _writable(name: str, path: str | None) -> None:
    if path is None:
        return
    if not path:
        raise UsageError(f"{name} must be a file path, got an empty string")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{name} {path!r}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{name} {path!r} is not writable")


def _device(text: str | None):
    if text is None:
        return None
    import torch

    try:
        device = torch.device(text)
    except (RuntimeError, TypeError):
        raise UsageError(f"--device must name a torch device (cpu, cuda, cuda:1), got {text!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: CUDA is not available on this machine")
    return device


def _vector(name: str, text: str):
    import torch

    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--{name} must be comma-separated numbers, got {text!r}") from None
    t = torch.tensor(values, dtype=torch.float64)
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()) or float(t.sum()) <= 0:
        raise UsageError(f"--{name} must be finite, non-negative and not all zero, got {text!r}")
    return t / t.sum()


# ------------------------------------------------------------------ specdec compare


def _compare_inputs(args):
    if args.case is not None:
        if args.target is not None or args.draft is not None:
            raise UsageError("give --case or --target/--draft, not both")
        from .conformance.catalogue import pair, pair_names

        if args.case not in pair_names():
            raise UsageError(f"unknown --case {args.case!r}; known: {', '.join(pair_names())}")
        return pair(args.case)
    target = _vector("target", args.target or DEFAULT_TARGET)
    draft = _vector("draft", args.draft or DEFAULT_DRAFT)
    if target.shape != draft.shape:
        given = "--draft" if args.draft is not None else "the default --draft (SPEC §3's)"
        raise UsageError(f"--target has {target.shape[0]} entries but {given} has {draft.shape[0]}; give both, of one length")
    return target, draft


def format_schemes(rows: list[dict]) -> str:
    lines = [f"{'scheme':12s} {'k or K':>7s} {'accept':>8s} {'optimum':>8s} {'gap':>8s}"]
    for row in rows:
        optimum = "" if row["optimum"] is None else f"{row['optimum']:8.4f}"
        gap = "" if row["optimum"] is None else f"{row['optimum'] - row['value']:8.4f}"
        lines.append(f"{row['scheme']:12s} {row['size']:7d} {row['value']:8.4f} {optimum:>8s} {gap:>8s}")
    lines.append("accept: P(a draft is accepted) per position; for the chains, E[accepted tokens] per step.")
    lines.append("optimum: alpha*_k (F9-F10) per position; the joint-min bound for the chains.")
    return "\n".join(lines)


def _compare_command(args) -> int:
    if args.max_drafts < 1:
        raise UsageError(f"--max-drafts must be >= 1, got {args.max_drafts}")
    if args.draft_tokens < 0:
        raise UsageError(f"--draft-tokens must be >= 0, got {args.draft_tokens}")
    _writable("--plot", args.plot)
    target, draft = _compare_inputs(args)
    from .laws.schemes import MAX_CHAIN_ENUMERATION, scheme_table

    vocab = target.shape[0]
    if args.draft_tokens and vocab**args.draft_tokens > MAX_CHAIN_ENUMERATION:
        raise UsageError(f"--draft-tokens {args.draft_tokens} needs V^K = {vocab}^{args.draft_tokens} prefixes (at most {MAX_CHAIN_ENUMERATION:,})")
    rows = scheme_table(target, draft, max_drafts=args.max_drafts, num_draft_tokens=args.draft_tokens)
    print(format_schemes(rows))
    if args.plot:
        from .plotting import plot_schemes

        plot_schemes(target, draft, rows, args.plot)
        print(f"plot written to {args.plot}")
    return 0


# ------------------------------------------------------------------ specdec check


# ------------------------------------------------------------------ specdec check SUBJECT

PROTOCOLS = {
    "verifier": ("TokenVerifier", ("draft_tokens", "draft_probs", "target_probs", "generator")),
    "multidraft": ("MultiDraftVerifier", ("draft_tokens", "draft_probs", "target_probs", "generator")),
    "decoder": ("Decoder", ("prompts", "max_new_tokens", "seed")),
}


def resolve(name: str, spec: str):
    """The object ``package.module:attr`` (attr may be dotted) names; a UsageError says why not."""
    import importlib

    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"{name} must look like package.module:attribute, got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: the working directory's modules are importable
    try:
        obj = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's to read, in one line
        raise UsageError(f"{name} {spec!r}: cannot import {module_name!r}: {type(error).__name__}: {error}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{name} {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def conforming(spec: str, subject, kind: str):
    """``subject`` if it can be called as ``kind``'s Protocol, else a UsageError that names the Protocol."""
    import inspect

    protocol, params = PROTOCOLS[kind]
    prefix = f"{spec} is not a {protocol} (specdec.protocols.{protocol}, called as ({', '.join(params)}))"
    if not callable(subject):
        raise UsageError(f"{prefix}: it is a {type(subject).__name__}, not callable")
    try:
        inspect.signature(subject).bind(*params)
    except TypeError as error:
        raise UsageError(f"{prefix}: {error}") from None
    except ValueError:  # builtins without a signature: let the engine's contract checks speak
        pass
    return subject


def _prompts(text: str | None) -> list[list[int]]:
    if not text:
        raise UsageError("--kind decoder needs --prompts, token ids such as '1,2,3;4,5' (';' between prompts)")
    try:
        prompts = [[int(x) for x in part.split(",")] for part in text.split(";")]
    except ValueError:
        raise UsageError(f"--prompts must be ';'-separated lists of comma-separated token ids, got {text!r}") from None
    return prompts


def _subject_report(args, console):
    """The report of the one subject ``args.subject`` names, at its level."""
    from .conformance import check_decoder, check_multidraft, check_verifier

    subject = conforming(args.subject, resolve("SUBJECT", args.subject), args.kind)
    planned = dict(tv=args.tv, time_budget=args.budget, seed=args.seed, console=console, name=args.subject)
    if args.kind == "verifier":
        return check_verifier(subject, device=args.device, **planned)
    if args.kind == "multidraft":
        return check_multidraft(subject, device=args.device, **planned)
    target = resolve("--target", args.target)
    if callable(target) and not hasattr(target, "next_token_probs") and not hasattr(target, "forward"):
        target = target()  # a factory of the target
    return check_decoder(subject, target, args.prompts, length=args.length, **planned)


def _default_subjects(args):
    """(name, callable returning a Report) for the embedded defaults, in order."""
    from .conformance import check_decoder, check_multidraft, check_verifier
    from .conformance.console import Console

    console = Console.for_cli()
    common = dict(seed=args.seed, device=args.device, console=console)
    planned = dict(tv=args.tv) if args.budget is None else dict(tv=args.tv, time_budget=args.budget)
    hf = dict(tv=args.tv, time_budget=args.budget or args.hf_budget, chunk_size=1024)
    subjects = []
    if args.only in (None, "verifiers"):
        from .adapters.hf import hf_speculative_sampling
        from .verify import verify_block, verify_tokens

        subjects += [
            ("verify_tokens", lambda: check_verifier(verify_tokens, name="specdec verify_tokens (reference)", **planned, **common)),
            ("verify_block", lambda: check_verifier(verify_block, name="specdec verify_block", **planned, **common)),
            ("hf", lambda: check_verifier(hf_speculative_sampling, name="transformers _speculative_sampling", **hf, **common)),
        ]
    if args.only in (None, "multidraft"):
        from .verify import verify_kseq, verify_mss

        subjects += [
            ("kseq", lambda: check_multidraft(verify_kseq, children=("iid",), name="specdec verify_kseq (K-SEQ)", **planned, **common)),
            ("mss", lambda: check_multidraft(verify_mss, name="specdec verify_mss (SpecInfer MSS)", **planned, **common)),
        ]
    if args.only in (None, "decoders"):

        def decoders(which):
            from .adapters.hf import HFAssistedDecoder
            from .decoding import ModelDraft, SpeculativeDecoder
            from .decoding.models import TinyPairConfig, tiny_llama_pair

            target, draft = tiny_llama_pair(1, TinyPairConfig(vocab_size=8))
            shared = dict(prompts=[[1, 2, 3], [4, 5, 4, 5, 4]], length=2, eos_token_id=7, seed=args.seed, console=console)
            if which == "ours":
                ours = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, eos_token_id=7)
                budgeted = dict(tv=max(args.tv, DECODER_TV)) if args.budget is None else dict(tv=max(args.tv, DECODER_TV), time_budget=args.budget)
                return check_decoder(ours, target, name="specdec generate (tiny Llama pair, K=2)", **budgeted, **shared)
            theirs = HFAssistedDecoder(target, eos_token_id=7, assistant=draft, num_draft_tokens=2)
            return check_decoder(
                theirs, target, name="transformers assisted generation (tiny Llama pair, K=2)",
                tv=max(args.tv, DECODER_TV), time_budget=args.budget or args.hf_budget, **shared,
            )

        subjects += [("ours", lambda: decoders("ours")), ("hf-assisted", lambda: decoders("hf"))]
    return subjects


def _process_group() -> int:
    """Under torchrun (WORLD_SIZE > 1) join the process group: NCCL on GPUs, gloo on CPU.  Returns the rank.
    Every rank samples its share of each check's chunks; the engine sums the counts."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank()


def _check_command(args) -> int:
    _unit_interval("--tv", args.tv)
    _seconds("--budget", args.budget)
    _seconds("--hf-budget", args.hf_budget)
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    _writable("--json", args.json)
    args.device = _device(args.device)
    if args.subject is None:
        if args.kind is not None or args.target is not None or args.prompts is not None:
            raise UsageError("--kind, --target and --prompts need a SUBJECT (package.module:attr)")
        runs = [run for _, run in _default_subjects(args)]
    else:
        if args.only is not None:
            raise UsageError("--only picks among the embedded defaults; with a SUBJECT use --kind")
        args.kind = args.kind or "verifier"
        if args.kind == "decoder":
            if args.target is None:
                raise UsageError("--kind decoder needs --target package.module:attr (a TargetLaw, a transformers model, or a function returning one)")
            args.prompts = _prompts(args.prompts)
            if args.length < 1:
                raise UsageError(f"--length must be >= 1, got {args.length}")
        elif args.target is not None or args.prompts is not None:
            raise UsageError("--target and --prompts are for --kind decoder")
        from .conformance.console import Console

        console = Console.for_cli()
        runs = [lambda: _subject_report(args, console)]
    rank = _process_group()
    import json

    from .conformance.report import library_versions

    reports = []
    for run in runs:
        report = run()
        reports.append(report)
        if rank == 0:
            print(report.format(), flush=True)
            print(flush=True)
    if rank:
        return 1 if any(r.verdict == "FAIL" for r in reports) else 0
    verdicts = [r.verdict for r in reports]
    overall = "FAIL" if "FAIL" in verdicts else ("INCONCLUSIVE" if "INCONCLUSIVE" in verdicts else "PASS")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"verdict": overall, "versions": library_versions(), "subjects": [r.to_dict() for r in reports]}, handle, indent=2)
    counts = {v: verdicts.count(v) for v in ("PASS", "INCONCLUSIVE", "FAIL")}
    print(
        f"{len(reports)} subject{'' if len(reports) == 1 else 's'}: {counts['PASS']} PASS, {counts['INCONCLUSIVE']} INCONCLUSIVE, {counts['FAIL']} FAIL"
        + (f"; JSON written to {args.json}" if args.json else "")
    )
    return 1 if overall == "FAIL" else 0


# ------------------------------------------------------------------ parser


# ------------------------------------------------------------------ specdec bench gate / plot


def _runs_to_compare(args):
    from .bench.history import load_history, load_run

    if args.baseline and args.current:
        return load_run(args.baseline), load_run(args.current)
    if args.baseline or args.current:
        raise UsageError("give both BASELINE and CURRENT, or neither (then the two newest runs in --storage)")
    runs = load_history(args.storage)
    if len(runs) < 2:
        raise UsageError(f"{args.storage} holds {len(runs)} stored run(s); the gate needs two (make bench saves one per run)")
    return runs[-2], runs[-1]


def _gate_command(args) -> int:
    from .bench.gate import compare_runs, same_machine

    _unit_interval("--confidence", args.confidence)
    if not (math.isfinite(args.margin) and 0 <= args.margin < 1):
        raise UsageError(f"--margin must be in [0, 1), got {args.margin}")
    baseline, current = _runs_to_compare(args)
    print(f"baseline {baseline.path} (commit {baseline.label}); current {current.path} (commit {current.label}); "
          f"margin {args.margin:.0%}, {args.confidence:.0%} bootstrap interval on median(current)/median(baseline)")
    if not same_machine(baseline, current):
        print("warning: the runs come from different machines or settings; ratios travel better than times, exact metrics do not")
    findings = compare_runs(baseline, current, margin=args.margin, confidence=args.confidence, exact=not args.no_exact)
    bad = [f for f in findings if f.verdict in ("regression", "changed")]
    for finding in findings:
        if args.verbose or finding.verdict != "ok":
            print(finding.line())
    judged = sum(f.verdict != "missing" for f in findings)
    print(f"{judged} comparisons: {len(bad)} failing, {sum(f.verdict == 'improvement' for f in findings)} improved")
    return 1 if bad else 0


def _plot_command(args) -> int:
    import json
    from pathlib import Path

    from .bench.history import load_history
    from .bench.plots import plot_history, plot_speedup_vs_k

    out = Path(args.out)
    if not out.is_dir():
        raise UsageError(f"--out {out}: the folder does not exist")
    rows_path = Path(args.rows)
    if not rows_path.exists():
        raise UsageError(f"--rows {rows_path} does not exist: run `make bench` first")
    rows = json.loads(rows_path.read_text())
    plot_speedup_vs_k(rows, str(out / "speedup_vs_k.png"))
    print(f"wrote {out / 'speedup_vs_k.png'} ({len(rows)} rows)")
    runs = load_history(args.storage) if Path(args.storage).is_dir() else []
    if runs:
        plot_history(runs, str(out / "history.png"))
        print(f"wrote {out / 'history.png'} ({len(runs)} stored runs)")
    else:
        print(f"no stored runs under {args.storage}: no history plot")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec", description="speculative decoding: reference, conformance, benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="conformance reports on the embedded defaults (the main job), or on any SUBJECT")
    check.add_argument("subject", nargs="?", metavar="SUBJECT",
                       help="package.module:attr of a verifier, multi-draft verifier or decoder to check instead of the defaults")
    check.add_argument("--kind", choices=list(PROTOCOLS), help="the SUBJECT's Protocol (default: verifier)")
    check.add_argument("--target", metavar="MODULE:ATTR", help="--kind decoder: the target law (TargetLaw, transformers model, or a function returning one)")
    check.add_argument("--prompts", help="--kind decoder: prompts as token ids, e.g. '1,2,3;4,5'")
    check.add_argument("--length", type=int, default=2, help="--kind decoder: tokens tested after each prompt; cells grow as V^length (default 2)")
    check.add_argument("--tv", type=float, default=0.01, help="TV deviation each check must detect with power 0.99 (default 0.01)")
    check.add_argument("--budget", type=float, help="seconds of sampling per subject, instead of planning n for --tv")
    check.add_argument("--hf-budget", type=float, default=60.0, help="seconds of sampling per transformers subject (default 60)")
    check.add_argument("--only", choices=["verifiers", "multidraft", "decoders"], help="run one level only")
    check.add_argument("--seed", type=int, default=0, help="campaign seed: chunk c of stream s draws from (seed, s, c) (default 0)")
    check.add_argument("--device", help="where drafts, subjects and counting run (default: cuda when available)")
    check.add_argument("--json", default="specdec-check.json", help="where to write the JSON report (default specdec-check.json)")
    check.set_defaults(run=_check_command)
    compare = sub.add_parser("compare", help="acceptance of each verification scheme vs its proven optimum")
    compare.add_argument("--target", help=f"target probabilities, comma-separated (default: SPEC §3's {DEFAULT_TARGET})")
    compare.add_argument("--draft", help=f"draft probabilities, comma-separated (default: SPEC §3's {DEFAULT_DRAFT})")
    compare.add_argument("--case", help="a named pair of the catalogue instead of --target/--draft")
    compare.add_argument("--max-drafts", type=int, default=3, help="largest k for the multi-draft schemes (default 3)")
    compare.add_argument("--draft-tokens", type=int, default=2, help="K for the token vs block chain rows (default 2)")
    compare.add_argument("--plot", metavar="FILE.png", help="also draw the optimal plan and the acceptance bars")
    compare.set_defaults(run=_compare_command)
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
    gate.set_defaults(run=_gate_command)
    plot = bench_sub.add_parser("plot", help="PNGs: speedup vs K per task kind (latest run) and the stored history")
    plot.add_argument("--rows", default=".benchmarks/latest/rows.json", help="rows of the latest run (default .benchmarks/latest/rows.json)")
    plot.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder (default .benchmarks)")
    plot.add_argument("--out", default=".", help="folder for speedup_vs_k.png and history.png (default .)")
    plot.set_defaults(run=_plot_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (UsageError, ValueError, TypeError) as error:
        print(f"specdec {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
