"""``specdec check``: the conformance engine on the embedded defaults (the main job), or on any
importable SUBJECT.

The embedded defaults: our token, block, multi-draft and tree verifiers and our decoding loop, and
transformers' ``_speculative_sampling`` (driving our loop) and assisted generation through the adapters,
token by token (tiny Llama pairs; :mod:`.defaults`).  It prints the plan and one
report per subject, writes one JSON object, and exits with the code of the worst verdict
(:mod:`specdec.cli.exit_codes`).

``specdec check package.module:attr --kind verifier|multidraft|decoder`` checks any importable
subject instead (the working directory is on the import path); a subject that cannot be imported
or does not satisfy its Protocol is a one-line error naming the Protocol (exit 2).  A running
server (``--server URL``) is a decoder too, ``--reference`` / ``--reference-server`` check a
decoder against another one (two samples), and ``--oracle-server`` checks every token a server emits
against another server's per-token laws, beside the A/B check: :mod:`specdec.cli.servers`.  A decoder's prompts
are token ids, text, a JSONL file, or by default the embedded workload, tokenised by the server or a tokenizer folder
during the argument checks: :mod:`specdec.cli.prompt_sources`.
"""

from __future__ import annotations

import os
import sys

from ..settings import DEFAULT_CALL_TIMEOUT
from . import prompt_sources, servers
from ._args import UsageError, device, seconds, unit_interval, writable
from .report_file import ReportFile, read_resume


PROTOCOLS = {  # --kind: the Protocol a SUBJECT satisfies (a scheme's shape: chain, multidraft, tree), or a decoder
    "verifier": ("TokenVerifier", ("draft_tokens", "draft_probs", "target_probs", "generator")),
    "multidraft": ("MultiDraftVerifier", ("draft_tokens", "draft_probs", "target_probs", "generator")),
    "tree": ("TreeVerifier", ("tree_tokens", "parents", "draft_probs", "target_probs", "generator")),
    "decoder": ("Decoder", ("prompts", "max_new_tokens", "seed")),
}


def resolve(name: str, spec: str):
    """The object ``package.module:attr`` (attr may be dotted) names; a UsageError says why not."""
    from ..bench.pairs import import_object

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: the working directory's modules are importable
    try:
        return import_object(spec, what=name)
    except ValueError as error:
        raise UsageError(str(error)) from None


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


def _subject_runs(args, console) -> list:
    """The reports to run for ``args.subject`` (or ``--server``): one at its level, or with ``--oracle-server`` the
    per-token and the A/B reports."""
    if args.server is not None:
        subject = servers.server_decoder(args, args.server, args.model)
    else:
        subject = conforming(args.subject, resolve("SUBJECT", args.subject), args.kind)
    planned = dict(tv=args.tv, time_budget=args.budget, seed=args.seed, console=console, name=args.subject or args.server,
                   call_timeout=args.call_timeout or None, family_alpha=args.family_alpha, **args.campaign)
    if args.oracle_server is not None:
        return servers.oracle_runs(args, subject, servers.reference_decoder(args, resolve, conforming), planned)
    return [lambda: _subject_report(args, subject, planned)]


def _subject_report(args, subject, planned: dict):
    """The report of the one subject ``args.subject`` names, at its level."""
    from ..conformance import check_decoder, check_multidraft, check_tree, check_verifier

    if servers.two_sample(args):
        reference = servers.reference_decoder(args, resolve, conforming)
        planned["name"] = f"{planned['name']} vs {args.reference or args.reference_server}"
        return servers.ab_report(args, subject, reference, planned)
    if args.kind == "verifier":
        return check_verifier(subject, device=args.device, **planned)
    if args.kind == "multidraft":
        return check_multidraft(subject, device=args.device, **planned)
    if args.kind == "tree":
        return check_tree(subject, device=args.device, **planned)
    target = resolve("--target", args.target)
    if callable(target) and not hasattr(target, "next_token_probs") and not hasattr(target, "forward"):
        try:
            target = target()  # a factory of the target
        except Exception as error:  # noqa: BLE001 - the user's factory: one line, not a traceback
            from ..conformance.calls import last_line

            raise UsageError(f"--target {args.target!r}: calling it to build the target raised {last_line(error)}") from None
    return check_decoder(subject, target, args.prompts, length=args.length, eos_token_id=args.eos,
                         max_new_tokens=args.max_new_tokens, n=args.n, **planned)


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


def _validate(args) -> None:
    """Every argument check, before any work (a bad argument: UsageError, exit 2)."""
    unit_interval("--tv", args.tv)
    unit_interval("--family-alpha", args.family_alpha)
    seconds("--budget", args.budget)
    seconds("--hf-budget", args.hf_budget)
    if args.call_timeout is not None and not (args.call_timeout >= 0 and args.call_timeout == args.call_timeout):
        raise UsageError(f"--call-timeout must be >= 0 seconds (0: no limit), got {args.call_timeout}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError(f"--chunk-size must be >= 1, got {args.chunk_size}")
    if not 0 <= args.seed <= 2**63 - 1:
        raise UsageError(f"--seed must be in [0, 2**63 - 1], got {args.seed}")
    writable("--json", args.json)
    args.resume_document = read_resume(args.resume)
    args.device = device(args.device)
    servers.validate(args)
    decoder_only = {"--target": args.target, **prompt_sources.given(args), "--eos": args.eos, "--max-new-tokens": args.max_new_tokens,
                    "--reference": args.reference, "--reference-server": args.reference_server, "--n": args.n}
    if args.subject is None and args.server is None:
        if args.kind is not None or any(v is not None for v in decoder_only.values()):
            raise UsageError("--kind, --target, --prompts (--prompt, --prompts-file, --tokenizer, --chat), --eos, --max-new-tokens, "
                             "--reference, --reference-server and --n need a SUBJECT (package.module:attr) or --server")
        return
    if args.only is not None:
        raise UsageError("--only picks among the embedded defaults; with a SUBJECT use --kind")
    args.kind = args.kind or "verifier"
    if args.kind != "decoder":
        given = [name for name, value in decoder_only.items() if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for --kind decoder")
        return
    if args.target is None and not servers.two_sample(args):
        raise UsageError("--kind decoder needs --target package.module:attr (a TargetLaw, a transformers model, or a function returning one), "
                         "or --reference / --reference-server (two samples)")
    if args.target is not None and servers.two_sample(args):
        raise UsageError("give --target (a law specdec computes) or --reference / --reference-server (two samples), not both")
    if args.length < 1:
        raise UsageError(f"--length must be >= 1, got {args.length}")
    if args.max_new_tokens is not None and args.max_new_tokens < args.length:
        raise UsageError(f"--max-new-tokens must be >= --length ({args.length}), got {args.max_new_tokens}")
    args.eos = _ids("--eos", args.eos)
    args.prompts, args.prompt_record = prompt_sources.resolve(args)  # last: it may load a tokenizer or ask the server


def _ids(name: str, text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ids = [int(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"{name} must be comma-separated token ids, got {text!r}") from None
    if any(i < 0 for i in ids):
        raise UsageError(f"{name} must be non-negative token ids, got {text!r}")
    return ids


class _Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so the run stops the same way."""


def _on_sigterm(signum, frame):  # pragma: no cover - exercised by the subprocess test
    raise _Terminated()


def check_command(args) -> int:
    import signal

    from ..conformance.console import Console
    from . import exit_codes

    _validate(args)
    console = Console.for_cli()
    args.report_file = ReportFile(args.json, args.seed)
    record = getattr(args, "prompt_record", None)
    if record is not None:
        args.report_file.prompts = record
        print(prompt_sources.summary(record), flush=True)
    args.campaign = dict(checkpoint=args.report_file.checkpoint if args.json else None, resume=args.resume_document,
                         chunk_size=args.chunk_size)
    if args.subject is None and args.server is None:
        from .defaults import default_subjects

        runs = [run for _, run in default_subjects(args, console)]
    else:
        runs = _subject_runs(args, console)
    rank = _process_group()
    interrupted = False
    reports = args.report_file.reports
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    try:
        for run in runs:
            report = run()
            reports.append(report)
            if rank == 0 and args.json:
                args.report_file.write("RUNNING", False)
            if rank == 0:
                print(report.format(), flush=True)
                print(flush=True)
            if report.verdict == "INTERRUPTED":
                interrupted = True
                break
    except KeyboardInterrupt:  # outside the engine's sampling (building a model, writing): stop here
        interrupted = True
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if rank:
        return exit_codes.FAIL if any(r.verdict == "FAIL" for r in reports) else exit_codes.OK
    overall = _overall([r.verdict for r in reports], interrupted)
    if args.json:
        args.report_file.write(overall, not interrupted)
    tally = [f"{sum(r.verdict == v for r in reports)} {v}" for v in ("PASS", "INCONCLUSIVE", "FAIL")]
    tally += [f"{sum(r.verdict == v for r in reports)} {v}" for v in ("ERROR", "INTERRUPTED") if any(r.verdict == v for r in reports)]
    print(f"{len(reports)} subject{'' if len(reports) == 1 else 's'}: {', '.join(tally)}" + (f"; JSON written to {args.json}" if args.json else ""))
    if interrupted:
        print(f"specdec check: interrupted; {len(reports)} report(s) kept" + (f", marked partial in {args.json}" if args.json else ""),
              file=sys.stderr)
        return exit_codes.INTERRUPTED
    return {"FAIL": exit_codes.FAIL, "ERROR": exit_codes.ERROR}.get(overall, exit_codes.OK)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _overall(verdicts: list[str], interrupted: bool) -> str:
    for verdict in ("FAIL", "ERROR"):
        if verdict in verdicts:
            return verdict
    if interrupted or "INTERRUPTED" in verdicts:
        return "INTERRUPTED"
    return "INCONCLUSIVE" if "INCONCLUSIVE" in verdicts else "PASS"


def add_parser(sub) -> None:
    check = sub.add_parser("check", help="conformance reports on the embedded defaults (the main job), or on any SUBJECT")
    check.add_argument("subject", nargs="?", metavar="SUBJECT",
                       help="package.module:attr of a verifier, multi-draft verifier or decoder to check instead of the defaults")
    check.add_argument("--kind", choices=list(PROTOCOLS), help="the SUBJECT's Protocol (default: verifier)")
    check.add_argument("--target", metavar="MODULE:ATTR", help="--kind decoder: the target law (TargetLaw, transformers model, or a function returning one)")
    check.add_argument("--prompts", help="--kind decoder, --server: prompts as token ids, e.g. '1,2,3;4,5' (text: --prompt, "
                                         "--prompts-file; none: the embedded workload)")
    check.add_argument("--length", type=int, default=2, help="--kind decoder: tokens tested after each prompt; cells grow as V^length (default 2)")
    check.add_argument("--tv", type=float, default=0.01, help="TV deviation each check must detect with power 0.99 (default 0.01; the embedded decoders at least 0.02, transformers' assisted generation 0.03 per token)")
    check.add_argument("--budget", type=float, help="seconds of sampling per subject, instead of planning n for --tv")
    check.add_argument("--hf-budget", type=float, help="seconds of sampling per transformers subject (default: n planned for the TV)")
    check.add_argument("--only", choices=["verifiers", "multidraft", "trees", "decoders"], help="run one level only")
    check.add_argument("--family-alpha", type=float, default=1e-6,
                       help="false-alarm rate of each subject's report, Holm across its checks (default 1e-06)")
    check.add_argument("--seed", type=int, default=0, help="campaign seed: chunk c of stream s draws from (seed, s, c) (default 0)")
    check.add_argument("--chunk-size", type=int, help="samples per call of the subject (default: from the stream and the device)")
    check.add_argument("--device", help="where drafts, subjects and counting run (default: cuda when available)")
    check.add_argument("--json", default="specdec-check.json",
                       help="where to write the JSON report, atomically; kept current while the run samples (default specdec-check.json)")
    check.add_argument("--resume", metavar="FILE", help="a JSON report of an earlier run with the same subjects, settings and seed: "
                                                        "continue each subject from its checkpoint (finished ones are re-judged, not re-run)")
    check.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT,
                       help=f"seconds one call of a subject may take before its report is ERROR; 0: no limit (default {DEFAULT_CALL_TIMEOUT:g})")
    check.add_argument("--eos", help="--kind decoder: EOS token id(s), comma-separated: absorbing, and what follows a row's first EOS is ignored")
    check.add_argument("--max-new-tokens", type=int,
                       help="--kind decoder: tokens asked of the decoder per row, >= --length (default: --length plus the decoder's "
                            "num_draft_tokens when it states one, else plus 4), so full blocks are verified at the tested positions")
    prompt_sources.add_arguments(check)
    servers.add_arguments(check)
    check.set_defaults(run=check_command, preload=("torch",))  # see _interrupts
