"""``specdec check``: the conformance engine on the embedded defaults (the main job), or on any
importable SUBJECT.

The embedded defaults: our token, block and multi-draft verifiers and our decoding loop, and
transformers' ``_speculative_sampling`` and assisted generation through the adapters (tiny Llama
pairs; transformers' subjects get a time budget, ``--hf-budget``).  It prints the plan and one
report per subject, writes one JSON object, and exits with the code of the worst verdict
(:mod:`specdec.cli.exit_codes`).

``specdec check package.module:attr --kind verifier|multidraft|decoder`` checks any importable
subject instead (the working directory is on the import path); a subject that cannot be imported
or does not satisfy its Protocol is a one-line error naming the Protocol (exit 2).
"""

from __future__ import annotations

import os
import sys

from ._args import UsageError, device, seconds, unit_interval, writable

DECODER_TV = 0.02  # our loop samples a few thousand sequences per second on a CPU: TV 0.01 would take minutes


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
    from ..conformance import check_decoder, check_multidraft, check_verifier

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
    from ..conformance import check_decoder, check_multidraft, check_verifier
    from ..conformance.console import Console

    console = Console.for_cli()
    common = dict(seed=args.seed, device=args.device, console=console)
    planned = dict(tv=args.tv) if args.budget is None else dict(tv=args.tv, time_budget=args.budget)
    hf = dict(tv=args.tv, time_budget=args.budget or args.hf_budget, chunk_size=1024)
    subjects = []
    if args.only in (None, "verifiers"):
        from ..adapters.hf import hf_speculative_sampling
        from ..verify import verify_block, verify_tokens

        subjects += [
            ("verify_tokens", lambda: check_verifier(verify_tokens, name="specdec verify_tokens (reference)", **planned, **common)),
            ("verify_block", lambda: check_verifier(verify_block, name="specdec verify_block", **planned, **common)),
            ("hf", lambda: check_verifier(hf_speculative_sampling, name="transformers _speculative_sampling", **hf, **common)),
        ]
    if args.only in (None, "multidraft"):
        from ..verify import verify_kseq, verify_mss

        subjects += [
            ("kseq", lambda: check_multidraft(verify_kseq, children=("iid",), name="specdec verify_kseq (K-SEQ)", **planned, **common)),
            ("mss", lambda: check_multidraft(verify_mss, name="specdec verify_mss (SpecInfer MSS)", **planned, **common)),
        ]
    if args.only in (None, "decoders"):

        def decoders(which):
            from ..adapters.hf import HFAssistedDecoder
            from ..decoding import ModelDraft, SpeculativeDecoder
            from ..decoding.models import TinyPairConfig, tiny_llama_pair

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


def check_command(args) -> int:
    unit_interval("--tv", args.tv)
    seconds("--budget", args.budget)
    seconds("--hf-budget", args.hf_budget)
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    writable("--json", args.json)
    args.device = device(args.device)
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
        from ..conformance.console import Console

        console = Console.for_cli()
        runs = [lambda: _subject_report(args, console)]
    rank = _process_group()
    import json

    from ..conformance.report import library_versions

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


def add_parser(sub) -> None:
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
    check.set_defaults(run=check_command)
