"""The tables of a ``specdec bench run``: the rows, acceptance per prompt, load, input length, best K per batch.

* rows: :func:`specdec.bench.rows.format_table` (a predicted speedup marked ``*`` is F23 with ideal
  costs, rho = 0 and v(K) = 1, for a subject that does not time its own passes);
* acceptance per prompt: the spread (min, quartiles, max over prompts, batch 1) of the acceptance
  rate (docs/reference.md §6; subjects that record their steps), the draft utilisation (accepted /
  drafted) and the acceptance length (tokens per verify step), per task kind;
* under load: throughput in tokens per second of both sides, the speedup, the prefill share f and
  the end-to-end prediction, per batch size and K;
* best K per batch: the K with the highest measured speedup beside F24's K* from the costs
  measured at that batch (v_B(K) = T_target(B rows, K + 1 tokens) / T_target(B rows, 1 token)),
  taken from the K = 4 row's acceptance (the largest K run when there is none);
* input length: speedup, prediction, prefill share and acceptance per prompt length.
"""

from __future__ import annotations

from .rows import _text_table, format_table


def _fmt(value, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


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
    return _text_table(head, body) if body else ""


def load_table(rows: list[dict]) -> str:
    head = ("configuration", "batch", "speedup [min-max]", "tok/s speculative", "tok/s autoregressive", "acceptance length",
            "prefill", "predicted", "K*")
    body = []
    for r in sorted((r for r in rows if r["kind"] == "mix"), key=lambda r: (r.get("subject", ""), r["batch"], r["mean_draft_tokens"])):
        s, tps = r["speedup"], r["tokens_per_second"]
        body.append([r["configuration"], str(r["batch"]), f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]",
                     f"{tps['speculative']['median']:.1f}", f"{tps['autoregressive']['median']:.1f}",
                     _fmt(r["tokens_per_step"], "{:.2f}"), _fmt(r.get("prefill_share"), "{:.0%}"), _fmt(r["predicted"], "{:.2f}x"),
                     _fmt(r["optimal_k"], "{}")])
    return _text_table(head, body) if body else ""


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
        out.append({"subject": subject, "batch": batch, "measured_best_k": best,
                    "measured_best_speedup": by_k[best]["speedup"]["median"],
                    "speedups": {k: by_k[k]["speedup"]["median"] for k in sorted(by_k)},
                    "predicted_k": theory["optimal_k"], "acceptance": theory["acceptance"],
                    "verify_cost_ratio": theory.get("verify_cost_ratio"), "draft_step_ratio": theory.get("draft_step_ratio")})
    return out


def _best(entry: dict) -> str:
    """The measured best K, or "0" (autoregressive) when no K tried beat 1x, with the least bad K beside it."""
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
    return _text_table(head, body)


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
                     _fmt(r.get("draft_utilisation"), "{:.2f}"), _fmt(r["tokens_per_step"], "{:.2f}"),
                     f"{_fmt(r['ttft_ms'], '{:.0f}')} / {_fmt(r['baseline_ttft_ms'], '{:.0f}')}"])
    return _text_table(head, body) if body else ""


def subject_report(rows: list[dict]) -> str:
    """Every table that has rows, each under a one-line title."""
    parts = [format_table(rows),
             "predicted: F23 from the subject's measured costs, or with ideal costs (rho = 0, v = 1) where marked *, end to end: "
             "prefill, the twin's one-token calls over its whole calls, counted on both sides (docs/reference.md §6); "
             "TTFT: a call for one token; ITL p90: over calls of (T(L) - T(1)) / (L - 1)"]
    for title, table in (("acceptance per prompt (batch 1)", acceptance_table(rows)),
                         ("under load: one mix of prompts, B prompts per call", load_table(rows)),
                         ("best K per batch: measured, and F24's K* with the verify cost measured at that batch", best_k_table(rows)),
                         ("input length", length_table(rows))):
        if table:
            parts += ["", title, table]
    return "\n".join(parts)
