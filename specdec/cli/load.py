"""``specdec bench load``: open-loop load at stated request rates, speculation on and off (issue 33,
:mod:`specdec.bench.open_loop`).

The subject is a factory of ``num_draft_tokens`` (as for ``specdec bench run``): ``factory(K)`` and ``factory(0)``.
A side that streams (a server subject: vLLM's, llama-server's) is used as it is; our loop
(:class:`specdec.decoding.SpeculativeDecoder`) is served by :class:`specdec.bench.loop_server.LoopServer`.  The
rows go to ``--storage`` in pytest-benchmark's format (``specdec bench gate --storage`` compares two runs) and the
table to the terminal.

Every argument is checked before any work (:func:`_validate`: exit 2, one line naming the option); the tokenizer is
loaded before the subject is built.  A side that broke its streaming Protocol (a server that ignored ``"stream":
true``) or whose every measured request failed (an unreachable server, HTTP 500) is an ERROR (exit 3) showing the
first error, and nothing is stored; requests that failed beside others that completed are shown, and the run stored.
"""

from __future__ import annotations

import os
import sys

from . import exit_codes
from ._args import UsageError, checked, each, folder, output_folder, seconds

__all__ = ["add_parser", "load_command"]


def _streaming(decoder, max_batch: int):
    from ..bench.loop_server import LoopServer
    from ..bench.open_loop import StreamingDecoder

    if isinstance(decoder, StreamingDecoder):
        return decoder
    if hasattr(decoder, "target") and hasattr(decoder, "num_draft_tokens"):
        return LoopServer(decoder, max_batch=max_batch)
    raise UsageError(f"{type(decoder).__name__} does not stream (stream(prompt, max_new_tokens, seed)) and is not our loop: "
                     "an open-loop benchmark needs each token's arrival")


def _pct(summary: dict, metric: str, scale: float = 1e3) -> str:
    values = summary.get(metric)
    return "-" if not values else "/".join(f"{values[p] * scale:.0f}" for p in ("p50", "p90", "p99"))


def table(rows: list[dict]) -> str:
    """Per rate and side: completed requests, goodput, TTFT, TPOT, ITL and E2E percentiles (ms, p50/p90/p99)."""
    from ..bench.tables import text_table

    head = ("rate /s", "side", "completed", "goodput /s", "TTFT ms", "TPOT ms", "ITL ms", "E2E ms", "tokens /s")
    body = []
    for row in rows:
        for side in ("autoregressive", "speculative"):
            s = row[side]
            body.append([f"{row['rate']:g}", side, f"{s['completed']}/{s['requests']}", f"{s['goodput']:.2f}", _pct(s, "ttft"),
                         _pct(s, "tpot"), _pct(s, "itl"), _pct(s, "e2e"), f"{s['token_throughput']:.1f}"])
    return text_table(head, body)


def _validate(args) -> None:
    """Every argument, checked before any work (the subject is neither imported nor built, no tokenizer loaded): a bad
    one is a UsageError naming the option as it was typed."""
    from .._validation import as_float, as_int
    from .._validation.scalars import INT64_MAX
    from ..bench.arrivals import check_window
    from ..workload.prompts import KINDS, PROMPTS

    args.k = checked("--k", as_int, args.k, minimum=1)
    args.rate = each("--rate", as_float, args.rate, minimum=0.0, low_open=True)
    args.duration = checked("--duration", as_float, args.duration, minimum=0.0, low_open=True)
    args.warmup = checked("--warmup", as_float, args.warmup, minimum=0.0)
    for rate in args.rate:  # a window's expected arrivals, before any is drawn (--rate 1e12 would exhaust the memory)
        try:
            check_window(rate, args.warmup + args.duration, names=("--rate", "--warmup + --duration"))
        except ValueError as error:
            raise UsageError(str(error)) from None
    args.burstiness = checked("--burstiness", as_float, args.burstiness, minimum=0.0, low_open=True)
    if args.process != "gamma" and args.burstiness != 1.0:
        raise UsageError(f"--burstiness {args.burstiness:g} is the gamma process's shape: add --process gamma "
                         "(a Poisson process has burstiness 1)")
    args.rounds = checked("--rounds", as_int, args.rounds, minimum=1)
    args.prompts = checked("--prompts", as_int, args.prompts, minimum=1, maximum=sum(len(PROMPTS[k]) for k in KINDS))
    args.new_tokens = checked("--new-tokens", as_int, args.new_tokens, minimum=1)
    args.max_batch = checked("--max-batch", as_int, args.max_batch, minimum=1)
    args.seed = checked("--seed", as_int, args.seed, minimum=0, maximum=INT64_MAX - (args.rounds - 1))  # round r: seed + r
    seconds("--objective-ttft", args.objective_ttft)
    seconds("--objective-tpot", args.objective_tpot)
    folder("--tokenizer", args.tokenizer)
    output_folder("--storage", args.storage)


def _prompts(args) -> list[list[int]]:
    """The task mix's prompts, from ``--tokenizer`` (before the subject is built: a folder that does not load is a bad
    argument, not a failure after a server's start)."""
    from transformers import AutoTokenizer

    from ..bench.run_plan import mix_prompts
    from ..decoding.models import smollm2_dir

    where = str(args.tokenizer or smollm2_dir())
    try:
        tokenizer = AutoTokenizer.from_pretrained(where)
    except (OSError, ValueError, TypeError) as error:
        raise UsageError(" ".join(f"--tokenizer {where}: transformers cannot load a tokenizer there: "
                                  f"{type(error).__name__}: {error}".split())[:400]) from None
    return mix_prompts(tokenizer, args.prompts)


def failures(row: dict, subject: str) -> tuple[list[str], list[str]]:
    """(errors, warnings) of one rate's row.  An error: a side broke its Protocol (a stream without a token: a server
    that ignored "stream"), or every measured request of a side failed - the run measured nothing and is not stored.
    A warning: some requests of a side failed (the first error shown)."""
    errors, warnings = [], []
    for side in ("autoregressive", "speculative"):
        s, where = row[side], f"the {side} side of {subject} at rate {row['rate']:g}/s"
        if s["protocol_breaks"]:
            errors.append(f"ERROR: {where} broke its streaming Protocol in {s['protocol_breaks']} request(s) (warm-up "
                          f"included): {s['first_protocol_break']}")
        elif s["requests"] and not s["completed"]:
            errors.append(f"ERROR: every request of {where} failed ({s['failed']}/{s['requests']}); the first: {s['first_error']}")
        elif s["failed"]:
            warnings.append(f"warning: {s['failed']}/{s['requests']} requests of the {side} side failed at rate {row['rate']:g}/s "
                            f"(left out of its latencies and goodput); the first: {s['first_error']}")
    return errors, warnings


def load_command(args) -> int:
    from ..bench.open_loop import Objective, open_loop_row, wait_until_ready
    from ..bench.pairs import import_object, resolve_subject
    from ..bench.stored_run import write_run

    _validate(args)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        objective = Objective(args.objective_ttft, args.objective_tpot)
        factory = import_object(args.subject)
        prompts = _prompts(args)
        pair = resolve_subject(factory, num_draft_tokens=args.k, name=args.name)
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None
    sides = {"speculative": _streaming(pair.speculative, args.max_batch), "autoregressive": _streaming(pair.autoregressive, args.max_batch)}
    per_run = args.warmup + args.duration
    print(f"specdec bench load {args.subject} K={args.k}: rates {args.rate}/s, {args.process} arrivals"
          + (f" (burstiness {args.burstiness:g})" if args.process == "gamma" else "")
          + f", {args.rounds} round(s) of {args.warmup:g} s warm-up + {args.duration:g} s measured per side, {args.prompts} prompts, "
            f"{args.new_tokens} new tokens; goodput objective TTFT <= {objective.ttft:g} s, TPOT <= {objective.tpot:g} s; "
            f"about {len(args.rate) * args.rounds * 2 * per_run / 60:.0f} minutes plus the answers' drain", flush=True)
    rows, entries, errors, warnings = [], [], [], []
    try:
        wait_until_ready(*sides.values())
        for rate in args.rate:
            row = open_loop_row(sides["speculative"], sides["autoregressive"], prompts, rate=rate, rounds=args.rounds,
                                duration=args.duration, warmup=args.warmup, max_new_tokens=args.new_tokens, process=args.process,
                                burstiness=args.burstiness, objective=objective, seed=args.seed)
            row.update(subject=pair.name, num_draft_tokens=args.k)
            rows.append(row)
            errors, found = failures(row, pair.name)
            warnings += found
            if errors:
                break  # the subject is broken or unreachable: no later rate would measure it
            entries.append({"fullname": f"open-loop::{pair.name}::K{args.k}::rate={rate:g}",
                            "median": (row["speculative"]["e2e"] or {}).get("p50"), "extra_info": row})
    finally:
        for decoder in {id(d): d for d in (*sides.values(), pair.speculative, pair.autoregressive)}.values():
            close = getattr(decoder, "close", None)
            if callable(close):
                close()
    return _report(args, rows, entries, errors, warnings, write_run)


def _report(args, rows, entries, errors, warnings, write_run) -> int:
    """The table, the failures, and the stored run - none when a side measured nothing (ERROR)."""
    print(table(rows))
    for line in warnings:
        print(line)
    for row in rows:
        ratios = ", ".join(f"{m} {sorted(v['values'])[len(v['values']) // 2]:.2f}" for m, v in row["ratios"].items())
        print(f"rate {row['rate']:g}/s, speculative / autoregressive (median over rounds): {ratios or '-'}")
    if errors:
        for line in errors:
            print(line, file=sys.stderr)
        print(f"nothing stored under {args.storage}: a run with a side that measured nothing is not one the gate may compare",
              file=sys.stderr)
        return exit_codes.ERROR
    path = write_run(args.storage, entries)
    print(f"stored {path}; compare two runs: specdec bench gate --storage {args.storage}")
    return exit_codes.OK


def add_parser(bench_sub) -> None:
    load = bench_sub.add_parser("load", help="open-loop load at request rates, speculation on and off (TTFT, TPOT, ITL, E2E, goodput)")
    load.add_argument("subject", help="package.module:attr: a factory of num_draft_tokens (a server subject, or our loop)")
    load.add_argument("--k", type=int, default=4, help="draft length K of the speculative side (default 4)")
    load.add_argument("--rate", type=float, nargs="+", default=[0.5, 1.0, 2.0], help="request rates per second (default 0.5 1 2)")
    load.add_argument("--process", choices=("poisson", "gamma"), default="poisson", help="arrival process (default poisson)")
    load.add_argument("--burstiness", type=float, default=1.0, help="the gamma process's shape (default 1)")
    load.add_argument("--duration", type=float, default=60.0, help="measured seconds per side and round (default 60)")
    load.add_argument("--warmup", type=float, default=10.0, help="warm-up seconds before each measured window (default 10)")
    load.add_argument("--rounds", type=int, default=2, help="rounds, each off then on (default 2)")
    load.add_argument("--prompts", type=int, default=12, help="prompts of the task mix, sent round robin (default 12)")
    load.add_argument("--new-tokens", type=int, default=32, help="tokens per answer (default 32)")
    load.add_argument("--objective-ttft", type=float, default=1.0, help="goodput's TTFT bound, seconds (default 1)")
    load.add_argument("--objective-tpot", type=float, default=0.1, help="goodput's TPOT bound, seconds (default 0.1)")
    load.add_argument("--max-batch", type=int, default=1, help="our loop only: requests decoded together at most (default 1)")
    load.add_argument("--seed", type=int, default=0, help="seed of the arrivals and requests (default 0)")
    load.add_argument("--tokenizer", default=None, help="tokenizer folder for the prompts (default: SmolLM2-135M-Instruct's)")
    load.add_argument("--name", default=None, help="the subject's name in the rows (default: its own)")
    load.add_argument("--storage", default=".benchmarks/open-loop", help="where the run is stored (default .benchmarks/open-loop)")
    load.set_defaults(run=load_command, preload=("torch",))  # see _interrupts
