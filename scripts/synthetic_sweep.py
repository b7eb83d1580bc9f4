"""F23 across the whole acceptance range (issue 33, item 4): our loop on SmolLM2 with a synthetic acceptance
(:mod:`specdec.bench.synthetic`, timing only), alpha from 0 to 1 at fixed costs, at batch 1 and one larger batch::

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.synthetic_sweep [--rates 0 0.2 ...] [--ks 2 4 8] [--batches 1 8] [--rounds 3]

Writes the rows to ``docs/data/synthetic-rows.json``, the plot to ``docs/img/synthetic_sweep.png`` and prints the table
(markdown with ``--markdown``).  Every point is paired rounds of our loop at K = 0 and at K with the synthetic verifier,
the draft K copies of the last token (rho ~ 0); the prediction is F23 end to end from the costs calibrated at that batch
(9 interleaved rounds; its interval over them) and the acceptance the steps really had.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATES = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0]


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=RATES)
    parser.add_argument("--ks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: every CPU this process may use)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "data" / "synthetic-rows.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "synthetic_sweep.png")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--redraw", action="store_true", help="draw the plot and print the table from --out, without measuring")
    return parser.parse_args(argv)


def point(row: dict) -> tuple[str, int]:
    """(alpha as set, K) of a sweep row, from its configuration name ``synthetic-a<alpha>-K<K>``."""
    alpha, k = row["configuration"].removeprefix("synthetic-a").split("-K")
    return alpha, int(k)


def table(rows: list[dict], markdown: bool) -> str:
    from specdec.bench.tables import text_table
    from specdec.laws import end_to_end_speedup

    head = ("batch", "K", "alpha set", "acceptance measured", "speedup [min-max]", "F23 end to end [interval]", "efficiency",
            "slowest-row factor (P6)", "efficiency vs F23 x P6", "prefill")
    body = []
    for r in rows:
        factor = slowest_row_factor(r)
        decode = end_to_end_speedup(r["predicted_decode"] * factor, r["prefill_share"])
        alpha, k = point(r)
        body.append([str(r["batch"]), str(k), alpha,
                     f"{r['acceptance']:.3f}", f"{r['speedup']['median']:.2f}x [{r['speedup']['min']:.2f}-{r['speedup']['max']:.2f}]",
                     f"{r['predicted']:.2f}x" + (f" [{r['predicted_interval']['low']:.2f}-{r['predicted_interval']['high']:.2f}]"
                                                 if r.get("predicted_interval") else ""),
                     f"{r['efficiency']:.2f}", f"{factor:.2f}", f"{r['speedup']['median'] / decode:.2f}", f"{r['prefill_share']:.0%}"])
    if not markdown:
        return text_table(head, body)
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(b) + " |" for b in body])


def slowest_row_factor(row: dict) -> float:
    """P6 at the row's measured acceptance, K, new tokens and batch: the share of F23's per-row decoding speedup that a
    static batch keeps when it runs until its slowest row has its tokens (1 at batch 1)."""
    from specdec.laws.static_batch import static_batch_factor

    return static_batch_factor(row["acceptance"], point(row)[1], row["new_tokens"], row["batch"])


def plot(rows: list[dict], path: Path, description: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from specdec.plots import save_png

    batches = sorted({r["batch"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(5 * len(batches), 3.8), squeeze=False, sharey=True)
    for ax, batch in zip(axes[0], batches):
        for colour, k in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], sorted({point(r)[1] for r in rows})):
            points = sorted(((r["acceptance"], r) for r in rows if r["batch"] == batch and point(r)[1] == k),
                            key=lambda point: point[0])
            xs = [a for a, _ in points]
            ax.errorbar(xs, [r["speedup"]["median"] for _, r in points],
                        yerr=[[r["speedup"]["median"] - r["speedup"]["min"] for _, r in points],
                              [r["speedup"]["max"] - r["speedup"]["median"] for _, r in points]],
                        color=colour, marker="o", capsize=3, linestyle="none", label=f"K={k} measured")
            ax.plot(xs, [r["predicted"] for _, r in points], color=colour, linestyle="--", label=f"K={k} F23 end to end")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_title(f"batch {batch}", fontsize=10)
        ax.set_xlabel("acceptance (measured, set by the synthetic verifier)")
    axes[0][0].set_ylabel("speedup over autoregressive")
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    save_png(fig, path, description)
    plt.close(fig)


def main(argv=None) -> int:
    args = arguments(argv)
    if args.redraw:
        stored = json.loads(args.out.read_text())
        plot(stored["rows"], args.plot, f"scripts.synthetic_sweep at {stored['run']['commit']} on {stored['run']['date']}")
        print(table(stored["rows"], args.markdown))
        return 0
    import torch

    from fixtures.models import smollm2
    from specdec.bench.clock import pin_threads
    from specdec.bench.environment import git_commit
    from specdec.bench.run_plan import mix_prompts
    from specdec.bench.synthetic import sweep
    from specdec.workload.prompts import prompt_ids

    threads = pin_threads(args.threads)
    model, tokenizer = smollm2()
    prompts = {b: (prompt_ids(tokenizer, "summarisation", 1) if b == 1 else mix_prompts(tokenizer, b)) for b in args.batches}
    points = len(args.batches) * len(args.ks) * len(args.rates)
    minutes = sum(2 * args.rounds * args.new_tokens * 0.08 * max(1.0, b / 4) for b in args.batches) * len(args.ks) * len(args.rates) / 60
    print(f"synthetic sweep: {points} points (batches {args.batches} x K {args.ks} x alpha {args.rates}), {args.rounds} paired rounds "
          f"of {args.new_tokens} new tokens each, costs calibrated per batch; about {minutes:.0f} minutes on 2 cores", flush=True)
    started = time.perf_counter()
    with torch.no_grad():
        rows = [r.as_dict() for r in sweep(model, prompts, rates=args.rates, ks=args.ks, new_tokens=args.new_tokens, rounds=args.rounds)]
    stamp = {"commit": git_commit(str(ROOT)), "date": time.strftime("%Y-%m-%d"), "threads": threads, "torch": torch.__version__,
             "seconds": round(time.perf_counter() - started), "plan": {k: v for k, v in vars(args).items() if k not in ("out", "plot")}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"run": stamp, "rows": rows}, indent=1, default=str))
    plot(rows, args.plot, f"scripts.synthetic_sweep at {stamp['commit']} on {stamp['date']}")
    print(table(rows, args.markdown))
    print(f"rows: {args.out}; plot: {args.plot}; {stamp['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
