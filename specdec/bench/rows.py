"""One benchmark row: measured speedup from paired rounds, with F23's prediction and latency beside it.

A round decodes the same prompts autoregressively (K = 0, the same loop) and then
speculatively, with the same stop rule; its ratio is autoregressive seconds / speculative
seconds, so machine load that drifts between rounds hits both sides of a ratio alike.
Theory beside it: the measured pooled acceptance alpha (docs/reference.md §6), the measured draft cost
rho and verify term v(K) (:mod:`.costs`), and F23 over the K each step really drafted
(:func:`specdec.laws.predicted_speedup`).  The measured ratio is of whole calls, the prompt's prefill
included, so the prediction beside it is F23 end to end (:func:`specdec.laws.end_to_end_speedup`):
the autoregressive side's share of time to its first token, paid alike by both sides, counted once
(docs/reference.md §6).  Efficiency = measured / predicted: below 1 is time the model does not count
(the loop, warping, verification, lookups); ``breakdown`` names it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .. import metrics
from ..laws.speedup import end_to_end_speedup, optimal_draft_length, predicted_speedup
from .clock import spread
from .costs import StepCosts

MIB = 2**20


@dataclass
class Round:
    """One interleaved round: both sides' seconds and peak memory, the speculative side's steps and clocks."""

    baseline_seconds: float
    speculative_seconds: float
    baseline_peak_bytes: int | None = None
    speculative_peak_bytes: int | None = None
    steps: list[tuple[int, int]] = field(default_factory=list)  # (K drafted, accepted) per row-step
    ttft: list[float] = field(default_factory=list)  # seconds, one per prompt
    inter_token: list[float] = field(default_factory=list)  # seconds, pooled over prompts


@dataclass
class Row:
    configuration: str
    kind: str
    speedup: dict  # median / min / max of the per-round ratios
    ratios: list[float]
    predicted: float
    efficiency: float
    acceptance: float | None
    tokens_per_step: float
    mean_draft_tokens: float
    optimal_k: int  # F24's K* from the measured alpha and costs
    ttft_ms: float
    baseline_ttft_ms: float | None
    itl_ms: dict  # p50 / p90 / max
    delta_memory_mib: float | None
    draft_step_ratio: float
    verify_cost_ratio: float  # v(K) at the configured (or mean) K
    peer_speedup: dict | None = None
    breakdown: dict | None = None  # per-phase ms per step of one extra untimed run (specdec.bench.breakdown)
    predicted_decode: float | None = None  # F23 alone: the decoding steps' speedup, the prefill not counted
    prefill_share: float | None = None  # autoregressive time to first token / its whole time (None: not measured)
    tokens_per_second: dict | None = None  # {"speculative", "autoregressive"}: spreads over rounds (None: tokens not given)

    def as_dict(self) -> dict:
        return asdict(self)


def summarise(configuration: str, kind: str, rounds: list[Round], costs: StepCosts, *, baseline_ttft=None,
              generated_tokens: int | None = None) -> Row:
    """The row for ``rounds`` of one configuration on one task kind (at least one round); ``generated_tokens``
    (per side and round) gives the row its tokens per second."""
    if not rounds:
        raise ValueError("summarise needs at least one round")
    ratios = [r.baseline_seconds / r.speculative_seconds for r in rounds]
    last = rounds[-1]  # seeded runs: every round drafts and accepts the same (greedy) or alike (sampled)
    drafted = np.array([k for k, _ in last.steps])
    accepted = np.array([a for _, a in last.steps])
    try:
        alpha = metrics.acceptance_rate(accepted, drafted)
    except ValueError:  # nothing was verified: every step was autoregressive
        alpha = None
    max_k = len(costs.target_seconds) - 1
    decode = predicted_speedup(alpha or 0.0, drafted.tolist(), costs.draft_step_ratio, costs.verify_cost_ratios)
    share = prefill_share(baseline_ttft, [r.baseline_seconds for r in rounds])
    predicted = decode if share is None else end_to_end_speedup(decode, share)
    optimal_k, _ = optimal_draft_length(alpha or 0.0, costs.draft_step_ratio, max_draft_tokens=max_k,
                                        verify_cost_ratios=costs.verify_cost_ratios)
    median = spread(ratios)
    itl = np.concatenate([np.asarray(r.inter_token) for r in rounds]) * 1e3
    peaks = [(r.speculative_peak_bytes - r.baseline_peak_bytes) / MIB for r in rounds
             if r.speculative_peak_bytes is not None and r.baseline_peak_bytes is not None]
    mean_k = float(drafted.mean())
    return Row(
        configuration=configuration,
        kind=kind,
        speedup=median,
        ratios=ratios,
        predicted=predicted,
        efficiency=median["median"] / predicted,
        acceptance=alpha,
        tokens_per_step=metrics.mean_tokens_per_step(accepted + 1),
        mean_draft_tokens=mean_k,
        optimal_k=optimal_k,
        ttft_ms=float(np.median([t for r in rounds for t in r.ttft])) * 1e3,
        baseline_ttft_ms=None if baseline_ttft is None else float(np.median(baseline_ttft)) * 1e3,
        itl_ms={"p50": float(np.percentile(itl, 50)), "p90": float(np.percentile(itl, 90)), "max": float(itl.max())}
        if itl.size else {"p50": float("nan"), "p90": float("nan"), "max": float("nan")},
        delta_memory_mib=float(np.median(peaks)) if peaks else None,
        draft_step_ratio=costs.draft_step_ratio,
        verify_cost_ratio=float(np.interp(mean_k, range(max_k + 1), costs.verify_cost_ratios)),
        predicted_decode=decode,
        prefill_share=share,
        tokens_per_second=None if generated_tokens is None else {
            "speculative": spread([generated_tokens / r.speculative_seconds for r in rounds]),
            "autoregressive": spread([generated_tokens / r.baseline_seconds for r in rounds])},
    )


def prefill_share(ttft_seconds, call_seconds) -> float | None:
    """The autoregressive side's pooled time to first token over its pooled time (both over the same calls,
    every round): F23 end to end's f; None when the times to first token were not measured.  At most 1: one-token
    calls timed apart from the whole ones (a black box's) can outlast a short whole call by the clock's noise."""
    if ttft_seconds is None or not len(ttft_seconds):
        return None
    total = float(sum(call_seconds))
    if total <= 0:
        raise ValueError(f"call_seconds must sum to a positive time, got {total}")
    return min(float(sum(ttft_seconds)) / total, 1.0)


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
        _number(row["predicted"], "{:.2f}x" + ("*" if row.get("cost_model") == "ideal" else "")),
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


def format_table(rows: list[dict], *, markdown: bool = False) -> str:
    """One table: a row per (configuration, task kind), in the order given."""
    body = [_cells(r) for r in rows]
    return _markdown_table(COLUMNS, body) if markdown else _text_table(COLUMNS, body)


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
    return _markdown_table(head, body) if markdown else _text_table(head, body)


def _text_table(head, body: list[list[str]]) -> str:
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
            "f24_k": theory["optimal_k"],
            "f24_k_speedup": fixed[theory["optimal_k"]]["speedup"]["median"] if theory["optimal_k"] in fixed else None,
            "adaptive_mean_k": None if adaptive is None else adaptive["mean_draft_tokens"],
            "adaptive_speedup": None if adaptive is None else adaptive["speedup"]["median"],
        })
    return out


def format_choosing_k(entries: list[dict]) -> str:
    head = ("configuration", "task kind", "best fixed K", "its speedup", "F24 K*", "speedup at K*", "adaptive mean K", "adaptive speedup")
    body = [[e["family"], e["kind"], str(e["best_fixed_k"]), f"{e['best_fixed_speedup']:.2f}x", str(e["f24_k"]),
             "-" if e["f24_k_speedup"] is None else f"{e['f24_k_speedup']:.2f}x",
             "-" if e["adaptive_mean_k"] is None else f"{e['adaptive_mean_k']:.2f}",
             "-" if e["adaptive_speedup"] is None else f"{e['adaptive_speedup']:.2f}x"] for e in entries]
    return _text_table(head, body)
