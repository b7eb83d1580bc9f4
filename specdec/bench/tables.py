"""Every table of a benchmark run, from its rows (:class:`specdec.bench.rows.Row` as dicts): one writer.

* :func:`format_table` - a row per (configuration, task kind): speedup, prediction (``*``: F23 with
  ideal costs, rho = 0 and v(K) = 1, for a subject that does not time its own passes), prefill share,
  efficiency, the peer's speedup, acceptance, tokens per step, K*, latency, memory;
* :func:`format_peer_rates` - tokens per second of ours and the peer (a speedup is a ratio over its own
  baseline, so two ratios compare only beside these);
* :func:`choosing_k` / :func:`format_choosing_k` - per configuration family with a K sweep: the best
  fixed K measured, named only when it clears its noise (:mod:`.choose_k`), F24's K* and the adaptive K;
* ``specdec bench run``'s tables (:func:`subject_report`): the acceptance per prompt (the spread, over
  prompts at batch 1, of the acceptance rate, the draft utilisation and the acceptance length), under
  load (throughput of both sides, speedup, prefill share and the end-to-end prediction per batch size
  and K), the best K per batch (measured, beside F24's K* from the costs measured at that batch,
  v_B(K) = T_target(B rows, K + 1 tokens) / T_target(B rows, 1 token)), and input length.
"""

from __future__ import annotations

from .choose_k import decide_k, format_decision

__all__ = ["acceptance_table", "entropy_table", "position_table", "best_k_per_batch", "best_k_table", "choosing_k", "format_choosing_k", "format_peer_rates",
           "format_table", "length_table", "load_table", "split_configuration", "subject_report", "text_table"]


COLUMNS = ("configuration", "task kind", "speedup [min-max]", "predicted", "prefill", "efficiency", "peer", "acceptance",
           "k-bar", "K*", "TTFT ms", "ITL p90 ms", "dM MiB")


def _number(value, fmt: str) -> str:
    """``fmt`` of ``value``, or "-" when it is unknown (None or NaN)."""
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return fmt.format(value)


def _cells(row: dict) -> list[str]:
    s = row["speedup"]
    peer = row.get("peer_speedup")
    acceptance = row["acceptance"]
    memory = row["delta_memory_mib"]
    return [
        row["configuration"],
        row["kind"],
        f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]",
        _number(row["predicted"], "{:.2f}x" + ("*" if row.get("cost_model") == "ideal" else "")) + _interval(row.get("predicted_interval")),
        _number(row.get("prefill_share"), "{:.0%}"),
        _number(row["efficiency"], "{:.2f}"),
        "-" if not peer else f"{peer['median']:.2f}x",
        "-" if acceptance is None else f"{acceptance:.2f}",
        _number(row["tokens_per_step"], "{:.2f}"),
        _number(row["optimal_k"], "{}"),
        _number(row["ttft_ms"], "{:.0f}"),
        _number(row["itl_ms"]["p90"], "{:.0f}"),
        "-" if memory is None else f"{memory:+.1f}",
    ]


def _interval(interval: dict | None) -> str:
    return "" if not interval else f" [{interval['low']:.2f}-{interval['high']:.2f}]"


def format_table(rows: list[dict], *, markdown: bool = False) -> str:
    """One table: a row per (configuration, task kind), in the order given."""
    body = [_cells(r) for r in rows]
    return _markdown_table(COLUMNS, body) if markdown else text_table(COLUMNS, body)


def _markdown_table(head, body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in body])


def format_peer_rates(rows: list[dict], *, markdown: bool = False) -> str:
    """Tokens per second (medians) of ours and the peer, each side, for rows that have both; "" when none do.
    A speedup is a ratio over its own baseline, so two ratios compare only beside these."""
    head = ("configuration", "task kind", "ours speculative", "peer speculative", "ours autoregressive",
            "peer autoregressive", "speedup ours / peer")
    body = []
    for row in rows:
        ours, peer = row.get("tokens_per_second"), row.get("peer_tokens_per_second")
        if not ours or not peer:
            continue
        medians = [f"{of[side]['median']:.1f}" for side in ("speculative", "autoregressive") for of in (ours, peer)]
        body.append([row["configuration"], row["kind"], *medians,
                     f"{row['speedup']['median']:.2f}x / {row['peer_speedup']['median']:.2f}x"])
    if not body:
        return ""
    return _markdown_table(head, body) if markdown else text_table(head, body)


def text_table(head, body: list[list[str]]) -> str:
    """Left-aligned columns two spaces apart, a dashed rule under the header."""
    widths = [max(len(h), *(len(cells[i]) for cells in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(cell.ljust(w) for cell, w in zip(cells, widths))  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(cells) for cells in body])


def split_configuration(configuration: str) -> tuple[str, str]:
    """("lookup-n3 greedy", "K4") from "lookup-n3-K4-greedy"; ("lookup-n3 greedy static", "K4") from
    "lookup-n3-K4-greedy-static"."""
    parts = configuration.split("-")
    suffix = [parts.pop()] if len(parts) > 2 and parts[-1] == "static" else []
    k = next((p for p in parts if p.startswith("K")), "")
    rest = [p for p in parts if p != k]
    return " ".join(["-".join(rest[:-1]), rest[-1], *suffix]), k


def choosing_k(rows: list[dict]) -> list[dict]:
    """Per (configuration family, task kind) with a K sweep: the best fixed K measured, F24's K* (from
    the alpha and costs measured at K = 4, else the largest K run) and the adaptive K's result."""
    groups: dict = {}
    for row in rows:
        family, k = split_configuration(row["configuration"])
        groups.setdefault((family, row["kind"]), {})[k] = row
    out = []
    for (family, kind), by_k in groups.items():
        fixed = {int(k[1:]): r for k, r in by_k.items() if k[1:].isdigit()}
        if len(fixed) < 2:
            continue
        best_k = max(fixed, key=lambda k: fixed[k]["speedup"]["median"])
        theory = fixed.get(4) or fixed[max(fixed)]
        adaptive = by_k.get("Kadapt")
        out.append({
            "family": family, "kind": kind, "best_fixed_k": best_k, "best_fixed_speedup": fixed[best_k]["speedup"]["median"],
            "decision": _decision(fixed),
            "f24_k": theory["optimal_k"],
            "f24_k_speedup": fixed[theory["optimal_k"]]["speedup"]["median"] if theory["optimal_k"] in fixed else None,
            "adaptive_mean_k": None if adaptive is None else adaptive["mean_draft_tokens"],
            "adaptive_speedup": None if adaptive is None else adaptive["speedup"]["median"],
        })
    return out


def _decision(by_k: dict) -> str | None:
    """The noise-aware choice (:mod:`.choose_k`) over rows that kept their per-round ratios."""
    ratios = {k: r.get("ratios") for k, r in by_k.items()}
    if any(not v for v in ratios.values()):
        return None
    return format_decision(decide_k(ratios))


def format_choosing_k(entries: list[dict]) -> str:
    head = ("configuration", "task kind", "best fixed K (with its noise)", "its speedup", "F24 K*", "speedup at K*", "adaptive mean K",
            "adaptive speedup")
    body = [[e["family"], e["kind"], e.get("decision") or str(e["best_fixed_k"]), f"{e['best_fixed_speedup']:.2f}x", str(e["f24_k"]),
             "-" if e["f24_k_speedup"] is None else f"{e['f24_k_speedup']:.2f}x",
             "-" if e["adaptive_mean_k"] is None else f"{e['adaptive_mean_k']:.2f}",
             "-" if e["adaptive_speedup"] is None else f"{e['adaptive_speedup']:.2f}x"] for e in entries]
    return text_table(head, body)


def _fmt(value, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def _length(row: dict):
    """The acceptance length (tokens per verify step); rows stored before it had a field of its own kept it in tokens_per_step."""
    return row.get("acceptance_length", row.get("tokens_per_step"))


def _spread(q: dict | None) -> str:
    if not q:
        return "-"
    return f"{q['median']:.2f} [{q['q1']:.2f}-{q['q3']:.2f}] ({q['min']:.2f}-{q['max']:.2f}, n={q['n']})"


def acceptance_table(rows: list[dict]) -> str:
    head = ("configuration", "task kind", "acceptance median [IQR] (range)", "draft utilisation median [IQR] (range)",
            "acceptance length median [IQR] (range)")
    body = [[r["configuration"], r["kind"], _spread(r.get("acceptance_spread")), _spread(r.get("draft_utilisation_spread")),
             _spread(r.get("acceptance_length_spread"))]
            for r in rows if r.get("batch", 1) == 1 and r.get("acceptance_length_spread")]
    return text_table(head, body) if body else ""


def load_table(rows: list[dict]) -> str:
    head = ("configuration", "batch", "speedup [min-max]", "tok/s speculative", "tok/s autoregressive", "acceptance length",
            "prefill", "predicted", "K*")
    body = []
    for r in sorted((r for r in rows if r["kind"] == "mix"), key=lambda r: (r.get("subject", ""), r["batch"], r["mean_draft_tokens"])):
        s, tps = r["speedup"], r["tokens_per_second"]
        body.append([r["configuration"], str(r["batch"]), f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]",
                     f"{tps['speculative']['median']:.1f}", f"{tps['autoregressive']['median']:.1f}",
                     _fmt(_length(r), "{:.2f}"), _fmt(r.get("prefill_share"), "{:.0%}"), _fmt(r["predicted"], "{:.2f}x"),
                     _fmt(r["optimal_k"], "{}")])
    return text_table(head, body) if body else ""


def best_k_per_batch(rows: list[dict]) -> list[dict]:
    """Per (subject, batch) with at least two K under load: the measured best K and F24's K*."""
    groups: dict = {}
    for r in rows:
        if r["kind"] == "mix":
            k = int(r["configuration"].split("-K")[-1].split("-")[0])
            groups.setdefault((r.get("subject"), r["batch"]), {})[k] = r
    out = []
    for (subject, batch), by_k in sorted(groups.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        if len(by_k) < 2:
            continue
        best = max(by_k, key=lambda k: by_k[k]["speedup"]["median"])
        theory = by_k.get(4) or by_k[max(by_k)]
        out.append({"subject": subject, "batch": batch, "measured_best_k": best, "decision": _decision(by_k),
                    "measured_best_speedup": by_k[best]["speedup"]["median"],
                    "speedups": {k: by_k[k]["speedup"]["median"] for k in sorted(by_k)},
                    "predicted_k": theory["optimal_k"], "acceptance": theory["acceptance"],
                    "verify_cost_ratio": theory.get("verify_cost_ratio"), "draft_step_ratio": theory.get("draft_step_ratio")})
    return out


def _best(entry: dict) -> str:
    """The noise-aware choice where the rows kept their rounds; else the measured best K, or "0" (autoregressive) when
    no K tried beat 1x, with the least bad K beside it."""
    if entry.get("decision"):
        return entry["decision"]
    if entry["measured_best_speedup"] < 1.0:
        return f"0 (no K wins; least bad K{entry['measured_best_k']})"
    return str(entry["measured_best_k"])


def best_k_table(rows: list[dict]) -> str:
    entries = best_k_per_batch(rows)
    if not entries:
        return ""
    head = ("subject", "batch", "speedup per K", "measured best K", "F24 K* (v_B measured)")
    body = [[str(e["subject"]), str(e["batch"]), ", ".join(f"K{k} {s:.2f}x" for k, s in e["speedups"].items()),
             _best(e), _fmt(e["predicted_k"], "{}")] for e in entries]
    return text_table(head, body)


def length_table(rows: list[dict]) -> str:
    head = ("configuration", "prompt tokens", "speedup [min-max]", "predicted", "prefill", "acceptance", "draft utilisation",
            "acceptance length", "TTFT ms (spec / AR)")
    body = []
    for r in rows:
        if not r["kind"].startswith("len-"):
            continue
        s = r["speedup"]
        body.append([r["configuration"], r["kind"][4:], f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]",
                     _fmt(r["predicted"], "{:.2f}x"), _fmt(r.get("prefill_share"), "{:.0%}"), _fmt(r["acceptance"], "{:.2f}"),
                     _fmt(r.get("draft_utilisation"), "{:.2f}"), _fmt(_length(r), "{:.2f}"),
                     f"{_fmt(r['ttft_ms'], '{:.0f}')} / {_fmt(r['baseline_ttft_ms'], '{:.0f}')}"])
    return text_table(head, body) if body else ""


def position_table(rows: list[dict]) -> str:
    """Per row: the acceptance at each draft position, measured / F22's alpha^i (docs/reference.md §6)."""
    head = ("configuration", "task kind", "batch", "acceptance at position i: measured / F22 alpha^i")
    body = [[r["configuration"], r["kind"], str(r.get("batch") or 1),
             "  ".join(f"{p['position']}: {_fmt(p['measured'], '{:.2f}')}/{_fmt(p['predicted'], '{:.2f}')}"
                       for p in r["acceptance_by_position"])]
            for r in rows if r.get("acceptance_by_position")]
    return text_table(head, body) if body else ""


def entropy_table(rows: list[dict]) -> str:
    """Per configuration and answer-entropy bucket (low, mixed, high): the median over its rows of their median speedups,
    and the task kinds behind it (rows without a single bucket are left out)."""
    import statistics

    groups: dict = {}
    for r in rows:
        bucket = (r.get("answer_entropy") or {}).get("bucket")
        if bucket in ("low", "mixed", "high"):
            groups.setdefault((r["configuration"], bucket), []).append(r)
    order = {"low": 0, "mixed": 1, "high": 2}
    body = [[configuration, bucket, f"{statistics.median(r['speedup']['median'] for r in group):.2f}x", str(len(group)),
             ", ".join(sorted(r["kind"] for r in group))]
            for (configuration, bucket), group in sorted(groups.items(), key=lambda item: (item[0][0], order[item[0][1]]))]
    return text_table(("configuration", "answer entropy", "speedup (median of rows)", "rows", "task kinds"), body) if body else ""


def subject_report(rows: list[dict]) -> str:
    """Every table that has rows, each under a one-line title."""
    parts = [format_table(rows),
             "predicted: F23 from the subject's measured costs, or with ideal costs (rho = 0, v = 1) where marked *, end to end: "
             "prefill, the twin's one-token calls over its whole calls, counted on both sides (docs/reference.md §6); "
             "TTFT: a call for one token; ITL p90: over calls of (T(L) - T(1)) / (L - 1)"]
    for title, table in (("acceptance per prompt (batch 1)", acceptance_table(rows)),
                         ("under load: one mix of prompts, B prompts per call", load_table(rows)),
                         ("best K per batch: measured, and F24's K* with the verify cost measured at that batch", best_k_table(rows)),
                         ("input length", length_table(rows)),
                         ("acceptance by draft position (measured / F22's alpha^i)", position_table(rows)),
                         ("speedup by the answers' entropy (specdec.workload.entropy)", entropy_table(rows))):
        if table:
            parts += ["", title, table]
    return "\n".join(parts)
