"""PNGs of ``specdec bench run`` rows (issue 22): speedup vs batch size per K, and subjects side by side.

* :func:`plot_speedup_vs_batch`: for every subject run under load (rows of the ``mix`` prompt set), the
  measured speedup (median, min-max bars) against the batch size, one line per K, and beside it the
  speculative side's throughput in tokens per second;
* :func:`plot_subjects`: two or more subjects on the same prompt sets at the same K: speedup per task
  kind (bars) and tokens per second of each side.

Both are written with :func:`specdec.bench.plots.save_png` (atomic, the run named in the PNG).
"""

from __future__ import annotations

from collections import defaultdict

from .plots import _pyplot, save_png


def _finish(plt, fig, path: str, description: str | None) -> None:
    fig.tight_layout()
    try:
        save_png(fig, path, description)
    finally:
        plt.close(fig)


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
