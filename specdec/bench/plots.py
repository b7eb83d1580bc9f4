"""PNG plots (matplotlib, the ``plot`` extra): one run's speedup vs K per task kind, and the history per commit."""

from __future__ import annotations

import math
from collections import defaultdict

from .history import Run
from .rows import split_configuration as _family


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_speedup_vs_k(rows: list[dict], path: str) -> None:
    """A panel per task kind: measured speedup (median, min-max bars) and F23's prediction vs K for every
    configuration family with a K sweep; adaptive K at its mean drafted K (diamond)."""
    plt = _pyplot()
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    groups: dict = defaultdict(lambda: defaultdict(list))
    for row in rows:
        family, k = _family(row["configuration"])
        groups[family][row["kind"]].append((k, row))
    swept = {f: by_kind for f, by_kind in groups.items() if any(len(v) > 1 for v in by_kind.values())}
    cols = min(3, max(1, len(kinds)))
    fig, axes = plt.subplots(math.ceil(len(kinds) / cols), cols, figsize=(4.2 * cols, 3.4 * math.ceil(len(kinds) / cols)),
                             squeeze=False, sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, kind in zip(axes.flat, kinds):
        for colour, (family, by_kind) in zip(colours, sorted(swept.items())):
            points = by_kind.get(kind, [])
            fixed = sorted((int(k[1:]), r) for k, r in points if k != "Kadapt")
            if fixed:
                xs = [k for k, _ in fixed]
                med = [r["speedup"]["median"] for _, r in fixed]
                err = [[m - r["speedup"]["min"] for m, (_, r) in zip(med, fixed)], [r["speedup"]["max"] - m for m, (_, r) in zip(med, fixed)]]
                ax.errorbar(xs, med, yerr=err, color=colour, marker="o", capsize=3, label=f"{family} measured")
                ax.plot(xs, [r["predicted"] for _, r in fixed], color=colour, linestyle="--", label=f"{family} F23")
            for k, r in points:
                if k == "Kadapt":
                    ax.plot([r["mean_draft_tokens"]], [r["speedup"]["median"]], color=colour, marker="D", markersize=8,
                            linestyle="none", label=f"{family} adaptive")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_title(kind, fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        ax.set_xlabel("K (draft tokens per step)")
    for ax in axes.flat[len(kinds):]:
        ax.axis("off")
    axes[0][0].set_ylabel("speedup over autoregressive")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(handles)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_history(runs: list[Run], path: str) -> None:
    """Speedup and efficiency per commit and configuration (geometric mean over task kinds)."""
    plt = _pyplot()
    series: dict = defaultdict(lambda: {"speedup": {}, "efficiency": {}})
    for index, run in enumerate(runs):
        per_config: dict = defaultdict(lambda: {"speedup": [], "efficiency": []})
        for bench in run.benchmarks.values():
            info = bench["extra_info"]
            if "predicted" not in info:
                continue
            per_config[info["configuration"]]["speedup"].append(info["speedup"]["median"])
            per_config[info["configuration"]]["efficiency"].append(info["efficiency"])
        for config, values in per_config.items():
            for metric, vals in values.items():
                series[config][metric][index] = math.exp(sum(math.log(v) for v in vals) / len(vals))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for config, metrics in sorted(series.items()):
        for ax, metric in ((top, "speedup"), (bottom, "efficiency")):
            points = sorted(metrics[metric].items())
            ax.plot([i for i, _ in points], [v for _, v in points], marker="o", label=config)
    top.set_ylabel("speedup (geo. mean over kinds)")
    bottom.set_ylabel("efficiency = measured / F23")
    top.axhline(1.0, color="grey", linewidth=0.8)
    bottom.axhline(1.0, color="grey", linewidth=0.8)
    bottom.set_xticks(range(len(runs)), [f"{r.label}\n{r.datetime[:10]}" for r in runs], fontsize=7)
    bottom.set_xlabel("stored run (commit, date)")
    top.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
