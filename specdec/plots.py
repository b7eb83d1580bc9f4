"""Every PNG specdec draws (matplotlib, the ``plot`` extra): one plotting module.

* a benchmark run (``make bench``): speedup vs K per task kind, measured beside F23
  (:func:`plot_speedup_vs_k`); the stored history per commit (:func:`plot_history`);
* ``specdec bench run``: speedup vs batch size per K with both sides' throughput
  (:func:`plot_speedup_vs_batch`), subjects side by side on the same prompts (:func:`plot_subjects`);
* ``specdec compare``: the optimal transport plan and each scheme's acceptance (:func:`plot_schemes`).

Each PNG is drawn to a temporary file in the destination's folder and renamed into place
(``os.replace``), so a reader - or a run killed mid-draw - sees the previous plot or the new one,
whole; the PNG's ``Description`` says which run its data are from.  Rows come checked from
:func:`specdec.bench.latest.load_rows`; the stored runs' row fields are checked here
(:func:`history_series`), each problem naming the run's file.
"""

from __future__ import annotations

import math
import os
import secrets
from collections import defaultdict
from pathlib import Path

from .bench.files import Checker
from .bench.history import Run
from .bench.tables import split_configuration as _family

__all__ = ["history_series", "k_sweeps", "load_series", "plot_history", "plot_schemes", "plot_speedup_vs_batch",
           "plot_speedup_vs_k", "plot_subjects", "save_png", "side_by_side"]


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


def _finish(plt, fig, path, description: str | None, *, layout: bool = True) -> None:
    if layout:
        fig.tight_layout()
    try:
        save_png(fig, path, description)
    finally:
        plt.close(fig)


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
    _finish(plt, fig, path, description, layout=False)


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
    _finish(plt, fig, path, "stored runs: " + "; ".join(f"commit {r.commit}, {r.datetime}, {r.path.name}" for r in runs))


def _k(row: dict) -> int | None:
    label = row["configuration"].rsplit("-K", 1)[-1].split("-")[0]
    return int(label) if label.isdigit() else None


def load_series(rows: list[dict]) -> dict:
    """subject -> K -> [(batch, row)] sorted by batch, for rows of the load sweep (prompt set "mix")."""
    series: dict = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["kind"] == "mix" and _k(row) is not None:
            series[row.get("subject", "?")][_k(row)].append((row.get("batch", 1), row))
    return {s: {k: sorted(v, key=lambda item: item[0]) for k, v in by_k.items()} for s, by_k in series.items()
            if any(len(v) > 1 for v in by_k.values())}


def plot_speedup_vs_batch(rows: list[dict], path: str, description: str | None = None) -> None:
    series = load_series(rows)
    plt = _pyplot()
    fig, axes = plt.subplots(len(series), 2, figsize=(10, 3.4 * len(series)), squeeze=False)
    for (left, right), (subject, by_k) in zip(axes, sorted(series.items())):
        for k, points in sorted(by_k.items()):
            batches = [b for b, _ in points]
            med = [r["speedup"]["median"] for _, r in points]
            err = [[m - r["speedup"]["min"] for m, (_, r) in zip(med, points)],
                   [r["speedup"]["max"] - m for m, (_, r) in zip(med, points)]]
            line = left.errorbar(batches, med, yerr=err, marker="o", capsize=3, label=f"K={k}")
            right.plot(batches, [r["tokens_per_second"]["speculative"]["median"] for _, r in points], marker="o",
                       color=line[0].get_color(), label=f"K={k}")
        first = next(iter(by_k.values()))
        right.plot([b for b, _ in first], [r["tokens_per_second"]["autoregressive"]["median"] for _, r in first],
                   marker="s", color="black", linestyle="--", label="autoregressive")
        left.axhline(1.0, color="grey", linewidth=0.8)
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("batch size B (requests in flight)")
            ax.legend(fontsize=8)
        left.set_ylabel(f"{subject}: speedup")
        right.set_ylabel("tokens per second")
    _finish(plt, fig, path, description)


def side_by_side(rows: list[dict]) -> dict:
    """K -> kind -> subject -> row, for task kinds (batch 1) that two or more subjects ran at the same K."""
    table: dict = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        if row["kind"] != "mix" and not row["kind"].startswith("len-") and _k(row) is not None:
            table[_k(row)][row["kind"]][row.get("subject", "?")] = row
    return {k: {kind: subjects for kind, subjects in by_kind.items() if len(subjects) > 1}
            for k, by_kind in table.items() if any(len(s) > 1 for s in by_kind.values())}


def plot_subjects(rows: list[dict], path: str, description: str | None = None) -> None:
    """Per K run by two or more subjects: speedup per task kind (bars), and tokens per second of both sides."""
    table = side_by_side(rows)
    plt = _pyplot()
    fig, axes = plt.subplots(len(table), 2, figsize=(11, 3.6 * len(table)), squeeze=False)
    for (left, right), (k, by_kind) in zip(axes, sorted(table.items())):
        kinds = sorted(by_kind)
        subjects = sorted({s for v in by_kind.values() for s in v})
        width = 0.8 / len(subjects)
        for i, subject in enumerate(subjects):
            xs = [j + i * width for j in range(len(kinds))]
            rows_k = [by_kind[kind].get(subject) for kind in kinds]
            left.bar(xs, [r["speedup"]["median"] if r else 0 for r in rows_k], width, label=subject)
            right.bar(xs, [r["tokens_per_second"]["speculative"]["median"] if r else 0 for r in rows_k], width,
                      label=f"{subject} speculative")
            right.scatter(xs, [r["tokens_per_second"]["autoregressive"]["median"] if r else 0 for r in rows_k],
                          marker="_", s=200, color="black", zorder=3, label="autoregressive" if i == 0 else None)
        for ax in (left, right):
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(kinds))], kinds, fontsize=8, rotation=20)
            ax.legend(fontsize=7)
        left.axhline(1.0, color="grey", linewidth=0.8)
        left.set_ylabel(f"K={k}: speedup over its own twin")
        right.set_ylabel("tokens per second (batch 1)")
    _finish(plt, fig, path, description)


def plot_schemes(target, draft, rows: list[dict], path: str) -> None:
    """The optimal plan Pi* (F6) beside bars of acceptance per scheme with their optimum alpha*_k."""
    from .laws.transport import optimal_plan

    plt = _pyplot()

    plan = optimal_plan(target, draft).numpy()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    image = left.imshow(plan, cmap="viridis")
    left.set_title("optimal plan Pi* (F6)", fontsize=10)
    if plan.shape[0] <= 20:
        left.set_xticks(range(plan.shape[0]))
        left.set_yticks(range(plan.shape[0]))
    left.set_xlabel("draft token (~ draft)")
    left.set_ylabel("output token (~ target)")
    fig.colorbar(image, ax=left, fraction=0.046)
    per_position = [r for r in rows if "chain" not in r["scheme"]]
    labels = [f"{r['scheme']}\nk={r['size']}" for r in per_position]
    right.bar(range(len(per_position)), [r["value"] for r in per_position], color="tab:blue", label="scheme")
    right.scatter(
        [i for i, r in enumerate(per_position) if r["optimum"] is not None],
        [r["optimum"] for r in per_position if r["optimum"] is not None],
        color="tab:red", marker="_", s=400, label="optimum alpha*_k",
    )
    right.set_xticks(range(len(per_position)), labels, fontsize=7)
    right.set_ylim(0, 1.05)
    right.set_title("acceptance per position")
    right.legend(loc="lower right")
    _finish(plt, fig, path, "the optimal transport plan and the acceptance per scheme (specdec compare)")
