"""PNG plots (matplotlib, the ``plot`` extra): one run's speedup vs K per task kind, and the history per commit.

Each PNG is drawn to a temporary file in the destination's folder and renamed into place
(``os.replace``), so a reader - or a run killed mid-draw - sees the previous plot or the new one,
whole.  Rows come checked from :func:`specdec.bench.latest.load_rows`; the stored runs' row fields
are checked here (:func:`history_series`), each problem naming the run's file.
"""

from __future__ import annotations

import math
import os
import secrets
from collections import defaultdict
from pathlib import Path

from .files import Checker
from .history import Run
from .rows import split_configuration as _family


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, path, description: str | None = None) -> Path:
    """``fig`` as a PNG at ``path``: drawn to a temporary file in the same folder, then renamed into place;
    ``description`` (which run the data are from) goes to the PNG's ``Description`` text chunk."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    metadata = {"Description": description} if description else None
    try:
        fig.savefig(temporary, format="png", dpi=110, metadata=metadata)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def k_sweeps(rows: list[dict]) -> dict:
    """family -> kind -> [(K label, row)] for every configuration family run at more than one K on some kind."""
    groups: dict = defaultdict(lambda: defaultdict(list))
    for row in rows:
        family, k = _family(row["configuration"])
        groups[family][row["kind"]].append((k, row))
    return {f: by_kind for f, by_kind in groups.items() if any(len(v) > 1 for v in by_kind.values())}


def plot_speedup_vs_k(rows: list[dict], path: str, description: str | None = None) -> None:
    """A panel per task kind: measured speedup (median, min-max bars) and F23's prediction vs K for every
    configuration family with a K sweep; adaptive K at its mean drafted K (diamond).  ``description``: the
    run the rows are from, stored in the PNG (:func:`save_png`)."""
    plt = _pyplot()
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    swept = k_sweeps(rows)
    cols = min(3, max(1, len(kinds)))
    fig, axes = plt.subplots(math.ceil(len(kinds) / cols), cols, figsize=(4.2 * cols, 3.4 * math.ceil(len(kinds) / cols)),
                             squeeze=False, sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, kind in zip(axes.flat, kinds):
        for colour, (family, by_kind) in zip(colours, sorted(swept.items())):
            points = by_kind.get(kind, [])
            fixed = sorted((int(k[1:]), r) for k, r in points if k[1:].isdigit())
            if fixed:
                xs = [k for k, _ in fixed]
                med = [r["speedup"]["median"] for _, r in fixed]
                err = [[m - r["speedup"]["min"] for m, (_, r) in zip(med, fixed)], [r["speedup"]["max"] - m for m, (_, r) in zip(med, fixed)]]
                ax.errorbar(xs, med, yerr=err, color=colour, marker="o", capsize=3, label=f"{family} measured")
                if all(r["predicted"] is not None for _, r in fixed):
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
    try:
        save_png(fig, path, description)
    finally:
        plt.close(fig)


def history_series(runs: list[Run]) -> dict:
    """configuration -> {"speedup": {run index: geometric mean over kinds}, "efficiency": {...}} from the runs'
    end-to-end rows (benchmarks whose extra_info has "predicted"); empty when no run has one."""
    series: dict = defaultdict(lambda: {"speedup": {}, "efficiency": {}})
    for index, run in enumerate(runs):
        check = Checker(run.path)
        per_config: dict = defaultdict(lambda: {"speedup": [], "efficiency": []})
        for name, bench in run.benchmarks.items():
            info = bench["extra_info"]
            if "predicted" not in info:
                continue
            config, speedup, efficiency = _stored_row(check, name, info)
            per_config[config]["speedup"].append(speedup)
            if efficiency is not None:  # None: a subject without counters or costs
                per_config[config]["efficiency"].append(efficiency)
        for config, values in per_config.items():
            for metric, vals in values.items():
                if vals:
                    series[config][metric][index] = math.exp(sum(math.log(v) for v in vals) / len(vals))
    return dict(series)


def _stored_row(check: Checker, name: str, info: dict) -> tuple[str, float, float | None]:
    """(configuration, median speedup, efficiency) of one stored end-to-end row, each checked."""
    where = f"{name}: extra_info"
    config = check.text(f"{where}['configuration']", check.entry(where, info, "configuration"))
    speedup = check.mapping(f"{where}['speedup']", check.entry(where, info, "speedup"))
    median = check.number(f"{where}['speedup']['median']", check.entry(f"{where}['speedup']", speedup, "median"), positive=True)
    efficiency = check.number(f"{where}['efficiency']", check.entry(where, info, "efficiency"), positive=True,
                              optional=True)
    return config, median, efficiency


def plot_history(runs: list[Run], path: str, series: dict | None = None) -> None:
    """Speedup and efficiency per commit and configuration (geometric mean over task kinds); the PNG's
    ``Description`` lists the stored runs drawn (commit, date, file)."""
    series = history_series(runs) if series is None else series
    plt = _pyplot()
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
    try:
        save_png(fig, path, "stored runs: " + "; ".join(f"commit {r.commit}, {r.datetime}, {r.path.name}" for r in runs))
    finally:
        plt.close(fig)
