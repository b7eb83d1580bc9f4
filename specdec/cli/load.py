"""``specdec bench load``: open-loop load at stated request rates, speculation on and off (issue 33,
:mod:`specdec.bench.open_loop`).

The subject is a factory of ``num_draft_tokens`` (as for ``specdec bench run``): ``factory(K)`` and ``factory(0)``.
A side that streams (a server subject: vLLM's, llama-server's) is used as it is; our loop
(:class:`specdec.decoding.SpeculativeDecoder`) is served by :class:`specdec.bench.loop_server.LoopServer`.  The
rows go to ``--storage`` in pytest-benchmark's format (``specdec bench gate --storage`` compares two runs) and the
table to the terminal.
"""

from __future__ import annotations

import os
import sys

from . import exit_codes
from ._args import UsageError

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


def load_command(args) -> int:
    from ..bench.open_loop import Objective, open_loop_row, wait_until_ready
    from ..bench.pairs import import_object, resolve_subject
    from ..bench.run_plan import mix_prompts
    from ..bench.stored_run import write_run

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    if any(r <= 0 for r in args.rate):
        raise UsageError(f"--rate must be positive request rates, got {args.rate}")
    try:
        objective = Objective(args.objective_ttft, args.objective_tpot)
        pair = resolve_subject(import_object(args.subject), num_draft_tokens=args.k, name=args.name)
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None
    sides = {"speculative": _streaming(pair.speculative, args.max_batch), "autoregressive": _streaming(pair.autoregressive, args.max_batch)}
    from transformers import AutoTokenizer

    from ..decoding.models import smollm2_dir

    prompts = mix_prompts(AutoTokenizer.from_pretrained(str(args.tokenizer or smollm2_dir())), args.prompts)
    per_run = args.warmup + args.duration
    print(f"specdec bench load {args.subject} K={args.k}: rates {args.rate}/s, {args.process} arrivals"
          + (f" (burstiness {args.burstiness:g})" if args.process == "gamma" else "")
          + f", {args.rounds} round(s) of {args.warmup:g} s warm-up + {args.duration:g} s measured per side, {args.prompts} prompts, "
            f"{args.new_tokens} new tokens; goodput objective TTFT <= {objective.ttft:g} s, TPOT <= {objective.tpot:g} s; "
            f"about {len(args.rate) * args.rounds * 2 * per_run / 60:.0f} minutes plus the answers' drain", flush=True)
    rows, entries = [], []
    try:
        wait_until_ready(*sides.values())
        for rate in args.rate:
            row = open_loop_row(sides["speculative"], sides["autoregressive"], prompts, rate=rate, rounds=args.rounds,
                                duration=args.duration, warmup=args.warmup, max_new_tokens=args.new_tokens, process=args.process,
                                burstiness=args.burstiness, objective=objective, seed=args.seed)
            row.update(subject=pair.name, num_draft_tokens=args.k)
            rows.append(row)
            entries.append({"fullname": f"open-loop::{pair.name}::K{args.k}::rate={rate:g}",
                            "median": (row["speculative"]["e2e"] or {}).get("p50"), "extra_info": row})
    finally:
        for decoder in {id(d): d for d in (*sides.values(), pair.speculative, pair.autoregressive)}.values():
            close = getattr(decoder, "close", None)
            if callable(close):
                close()
    print(table(rows))
    for row in rows:
        ratios = ", ".join(f"{m} {sorted(v['values'])[len(v['values']) // 2]:.2f}" for m, v in row["ratios"].items())
        print(f"rate {row['rate']:g}/s, speculative / autoregressive (median over rounds): {ratios or '-'}")
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
    load.set_defaults(run=load_command)
