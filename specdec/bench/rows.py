"""One benchmark row, from paired rounds: the measured speedup with F23's prediction and latency beside it.

Both benchmark pipelines end here: ``make bench`` (perf/, our loop on SmolLM2) and ``specdec bench
run`` (any :class:`~specdec.bench.pairs.BenchSubject`, :mod:`.paired`) each turn a round into one
:class:`Round` and call :func:`summarise`, which returns one :class:`Row`.

A round decodes the same prompts autoregressively (the twin, K = 0) and then speculatively, with the
same stop rule and seeds; its ratio is autoregressive seconds / speculative seconds, so machine load
that drifts between rounds hits both sides of a ratio alike.  Theory beside it:

* the acceptance rate (docs/reference.md §6: accepted / verified draft tokens, pooled), from the steps
  of a :class:`specdec.protocols.StepRecorder`; a decoder that only counts
  (:class:`specdec.protocols.SpeculationCounter`) gives the draft utilisation and the acceptance length
  (tokens per verify step) instead;
* F23 over the K each step drafted (:func:`specdec.laws.predicted_speedup`) with the measured draft cost
  rho and verify term v(K) (:class:`specdec.laws.speedup.StepCosts`), or, without costs, F23 with free
  drafts and a flat verify cost (``cost_model: "ideal"``); for a counting decoder, the acceptance
  length over the cost of a step at the mean K;
* F23 end to end (``predicted``): the measured ratio is of whole calls, the prompt's prefill included,
  so the autoregressive side's share of time to its first token (``prefill_share``), paid alike by both
  sides, is counted once (:func:`specdec.laws.end_to_end_speedup`); ``predicted_decode`` is F23 alone.

Efficiency = measured / predicted: below 1 is time the model does not count (the loop, warping,
verification, lookups); ``breakdown`` names it where measured.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import metrics
from ..laws.speedup import (StepCosts, end_to_end_speedup, implied_acceptance, optimal_draft_length, positional_acceptance,
                            predicted_speedup)
from ..stats.median_interval import median_interval
from ..workload.entropy import kind_entropy
from .clock import spread

MIB = 2**20
NO_COSTS = "ideal"  # F23 with rho = 0 and v(K) = 1: what speculation could give at the measured acceptance
COVERAGE = 0.9  # of a prediction's interval over the calibration's rounds

__all__ = ["MIB", "NO_COSTS", "Round", "Row", "prefill_share", "quantiles", "summarise"]


@dataclass
class Round:
    """One interleaved round: both sides' seconds and peak memory, and what the speculative side did per call."""

    baseline_seconds: float
    speculative_seconds: float
    baseline_peak_bytes: int | None = None
    speculative_peak_bytes: int | None = None
    steps: list[tuple[int, int]] = field(default_factory=list)  # (K drafted, accepted) per row-step, every call (StepRecorder)
    ttft: list[float] = field(default_factory=list)  # the speculative side's seconds to its first token, per call
    inter_token: list[float] = field(default_factory=list)  # the speculative side's seconds between later tokens, pooled
    baseline_ttft: list[float] = field(default_factory=list)  # the autoregressive side's, per call (empty: not measured)
    call_steps: list | None = None  # per call: its row-steps, or None where not recorded (None: the calls are not told apart)
    speculation: list = field(default_factory=list)  # per call: the counters' difference (drafts, draft_tokens, accepted_tokens), or None


@dataclass
class Row:
    """What a benchmark row holds (rows.json, pytest-benchmark's ``extra_info``); every table and plot reads these."""

    configuration: str
    kind: str
    speedup: dict  # median / min / max of the per-round ratios
    ratios: list[float]
    predicted: float | None  # F23 end to end (None: nothing to predict from)
    efficiency: float | None  # measured median / predicted
    acceptance: float | None  # docs/reference.md §6's acceptance rate (None: not measured)
    tokens_per_step: float | None  # mean tokens per step over every step (a counting decoder: its acceptance length)
    mean_draft_tokens: float
    optimal_k: int | None  # F24's K* from the measured alpha and costs (None: no costs)
    ttft_ms: float | None
    baseline_ttft_ms: float | None
    itl_ms: dict  # p50 / p90 / max
    delta_memory_mib: float | None
    draft_step_ratio: float | None
    verify_cost_ratio: float | None  # v(K) at the mean K
    peer_speedup: dict | None = None
    breakdown: dict | None = None  # per-phase ms per step of one extra untimed run (specdec.bench.breakdown)
    predicted_decode: float | None = None  # F23 alone: the decoding steps' speedup, the prefill not counted
    prefill_share: float | None = None  # autoregressive time to first token / its whole time (None: not measured)
    tokens_per_second: dict | None = None  # {"speculative", "autoregressive"}: spreads over rounds
    acceptance_length: float | None = None  # tokens per verify step (steps that drafted)
    draft_utilisation: float | None = None  # accepted / drafted
    acceptance_source: str | None = None  # "steps", "counters" or None
    cost_model: str = "measured"  # or "ideal"
    subject: str | None = None  # specdec bench run: the subject's name, its batch, prompts and new tokens
    batch: int | None = None
    prompts: int | None = None
    new_tokens: int | None = None
    speculation: dict | None = None  # the counters pooled over the last round's calls
    acceptance_spread: dict | None = None  # over calls (over prompts at batch 1)
    draft_utilisation_spread: dict | None = None
    acceptance_length_spread: dict | None = None
    predicted_interval: dict | None = None  # {"low", "high", "coverage", "n"}: the prediction over the calibration's rounds
    cost_spread: dict | None = None  # {"rho": ..., "verify": ...}: each a median with its order-statistic interval
    acceptance_by_position: list | None = None  # [{"position", "measured", "predicted"}]: F22's alpha^i beside the measured rate
    answer_entropy: dict | None = None  # the prompts' answer-entropy bucket (specdec.workload.entropy.kind_entropy)

    def as_dict(self) -> dict:
        return asdict(self)


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


def quantiles(values) -> dict | None:
    """min, quartiles, median and max of the known values (None when there are none)."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    arr = np.asarray(known, dtype=np.float64)
    q1, median, q3 = np.percentile(arr, [25, 50, 75])
    return {"min": float(arr.min()), "q1": float(q1), "median": float(median), "q3": float(q3), "max": float(arr.max()),
            "n": int(arr.size)}


def _call_metrics(spec: dict | None, steps) -> dict:
    """One call's acceptance (§6, from its steps), draft utilisation and acceptance length (either source)."""
    out = {"acceptance": None, "draft_utilisation": None, "acceptance_length": None}
    verified = [(k, a) for k, a in steps or () if k]  # steps that drafted (a lookup may find nothing)
    if verified:
        drafted = [k for k, _ in verified]
        accepted = [a for _, a in verified]
        out["acceptance"] = metrics.acceptance_rate(accepted, drafted)
        out["draft_utilisation"] = metrics.draft_utilisation(accepted, drafted)
        out["acceptance_length"] = metrics.mean_tokens_per_step([a + 1 for a in accepted])
    elif spec and spec.get("draft_tokens") and spec.get("drafts"):
        out["draft_utilisation"] = spec["accepted_tokens"] / spec["draft_tokens"]
        out["acceptance_length"] = (spec["accepted_tokens"] + spec["drafts"]) / spec["drafts"]
    return out


def _pooled(speculation) -> dict | None:
    known = [s for s in speculation if s]
    if not known:
        return None
    out = {key: sum(int(s.get(key, 0)) for s in known) for key in ("drafts", "draft_tokens", "accepted_tokens")}
    positions = sorted({int(k[len("accepted_at_"):]) for s in known for k in s if k.startswith("accepted_at_")})
    if positions:
        out["accepted_at"] = {i: sum(int(s.get(f"accepted_at_{i}", 0)) for s in known) for i in positions}
    return out


def _theory(steps, pooled, measured: dict, costs: StepCosts | None, mean_k_default: float) -> dict:
    """F23 (decode only), F24's K* and the costs, from the last round's steps or counters."""
    rho, verify = (costs.draft_step_ratio, costs.verify_cost_ratios) if costs is not None else (0.0, None)
    alpha, length = measured["acceptance"], measured["acceptance_length"]
    if steps:
        drafted = [k for k, _ in steps]
        mean_k = sum(drafted) / len(drafted)
    elif pooled and pooled["drafts"]:
        mean_k = pooled["draft_tokens"] / pooled["drafts"]
        drafted = [max(1, round(mean_k))]
    else:
        mean_k, drafted = mean_k_default, []
    out = {"mean_draft_tokens": float(mean_k), "decode": None, "optimal_k": None, "rho": rho if costs is not None else None,
           "verify": None if verify is None or not drafted else float(np.interp(mean_k, range(len(verify)), verify))}
    if not drafted or (verify is not None and max(drafted) >= len(verify)):
        return out
    if steps:  # F23 over the K each step drafted, at the measured acceptance
        out["decode"] = predicted_speedup(alpha or 0.0, drafted, rho, verify)
    elif length is not None:  # F23's numerator measured: the acceptance length over the cost of a step at the mean K
        out["decode"] = length / (drafted[0] * rho + (1.0 if verify is None else verify[drafted[0]]))
    if verify is not None:  # F24's K* needs measured costs: with ideal ones it is always the largest K
        f24_alpha = alpha if alpha is not None else (implied_acceptance(length, drafted[0]) if length else 0.0)
        out["optimal_k"], _ = optimal_draft_length(f24_alpha, rho, max_draft_tokens=len(verify) - 1, verify_cost_ratios=verify)
    return out


def _spread_of_prediction(steps, pooled, measured, costs: StepCosts | None, mean_k: float, share: float | None) -> tuple:
    """(predicted_interval, cost_spread): F23 end to end evaluated at each calibration round's costs, and those costs,
    each as a median with its distribution-free interval (:func:`specdec.stats.median_interval.median_interval`)."""
    if costs is None or len(costs.per_round) < 2:
        return None, None
    theories = [_theory(steps, pooled, measured, c, mean_k) for c in costs.per_round]
    decode = [t["decode"] for t in theories if t["decode"] is not None]
    spread = {"rho": median_interval([t["rho"] for t in theories]),
              "verify": None if theories[0]["verify"] is None else median_interval([t["verify"] for t in theories])}
    if not decode:
        return None, spread
    interval = median_interval(decode, COVERAGE)
    if share is not None:
        interval = {**interval, **{key: end_to_end_speedup(interval[key], share) for key in ("median", "low", "high")}}
    return interval, spread


def _by_position(steps, pooled, measured, mean_k: float) -> list | None:
    """The acceptance at each draft position (:func:`specdec.metrics.acceptance_by_position`) beside F22's alpha^i;
    from the steps (alpha: the acceptance rate), or from a subject's per-position counters (alpha implied by its
    acceptance length)."""
    if steps and any(k for k, _ in steps):
        measured_rates = metrics.acceptance_by_position([a for _, a in steps], [k for k, _ in steps])
        alpha = measured["acceptance"]
    elif pooled and pooled.get("drafts") and pooled.get("accepted_at"):
        counts = pooled["accepted_at"]
        measured_rates = [counts.get(i, 0) / pooled["drafts"] for i in range(1, max(counts) + 1)]
        length = measured["acceptance_length"]
        alpha = implied_acceptance(length, max(1, round(mean_k))) if length else None
    else:
        return None
    predicted = positional_acceptance(alpha, len(measured_rates)) if alpha is not None else [None] * len(measured_rates)
    return [{"position": i + 1, "measured": m, "predicted": p} for i, (m, p) in enumerate(zip(measured_rates, predicted))]


def _latency(rounds: list[Round]) -> dict:
    ttft = [t for r in rounds for t in r.ttft]
    baseline = [t for r in rounds for t in r.baseline_ttft]
    itl = np.asarray([g for r in rounds for g in r.inter_token], dtype=np.float64) * 1e3
    nan = float("nan")
    return {"ttft_ms": float(np.median(ttft)) * 1e3 if ttft else None,
            "baseline_ttft_ms": float(np.median(baseline)) * 1e3 if baseline else None,
            "itl_ms": {"p50": float(np.percentile(itl, 50)), "p90": float(np.percentile(itl, 90)), "max": float(itl.max())}
            if itl.size else {"p50": nan, "p90": nan, "max": nan}}


def summarise(configuration: str, kind: str, rounds: list[Round], costs: StepCosts | None, *, generated_tokens: int | None = None,
              subject: dict | None = None, num_draft_tokens: int | None = None, prompts: int = 1) -> Row:
    """The row of ``rounds`` (at least one) of one configuration on one task kind.

    ``costs``: the measured costs (None: F23 with ideal ones).  ``generated_tokens``: tokens per side and
    round (the row's tokens per second).  ``subject``: ``specdec bench run``'s fields (``subject``,
    ``batch``, ``prompts``, ``new_tokens``).  ``num_draft_tokens``: the K stated, for the mean K when the
    decoder neither records its steps nor counts its drafts.  ``prompts``: prompts of ``kind`` the rounds decoded (the
    row's answer-entropy bucket; ``subject``'s count wins)."""
    if not rounds:
        raise ValueError("summarise needs at least one round")
    ratios = [r.baseline_seconds / r.speculative_seconds for r in rounds]
    last = rounds[-1]  # seeded runs: every round drafts and accepts the same (greedy) or alike (sampled)
    call_steps = last.call_steps if last.call_steps is not None else ([last.steps] if last.steps else [])
    calls = max(len(call_steps), len(last.speculation))
    per_call = [_call_metrics(last.speculation[i] if i < len(last.speculation) else None,
                              call_steps[i] if i < len(call_steps) else None) for i in range(calls)]
    steps = list(last.steps)
    pooled = _pooled(last.speculation)
    measured = _call_metrics(pooled, steps or None)
    theory = _theory(steps, pooled, measured, costs, float(num_draft_tokens or 0))
    baseline_ttft = [t for r in rounds for t in r.baseline_ttft]
    share = prefill_share(baseline_ttft, [r.baseline_seconds for r in rounds]) if all(r.baseline_ttft for r in rounds) else None
    decode = theory["decode"]
    predicted = None if decode is None else (decode if share is None else end_to_end_speedup(decode, share))
    interval, cost_spread = _spread_of_prediction(steps, pooled, measured, costs, float(num_draft_tokens or 0), share)
    peaks = [(r.speculative_peak_bytes - r.baseline_peak_bytes) / MIB for r in rounds
             if r.speculative_peak_bytes is not None and r.baseline_peak_bytes is not None]
    tokens = metrics.mean_tokens_per_step([a + 1 for _, a in steps]) if steps else measured["acceptance_length"]
    return Row(
        configuration=configuration, kind=kind, speedup=spread(ratios), ratios=ratios, predicted=predicted,
        efficiency=None if predicted is None else statistics.median(ratios) / predicted, acceptance=measured["acceptance"],
        tokens_per_step=tokens, mean_draft_tokens=theory["mean_draft_tokens"], optimal_k=theory["optimal_k"], **_latency(rounds),
        delta_memory_mib=float(np.median(peaks)) if peaks else None, draft_step_ratio=theory["rho"],
        verify_cost_ratio=theory["verify"], predicted_decode=decode, prefill_share=share,
        tokens_per_second=None if generated_tokens is None else {
            "speculative": spread([generated_tokens / r.speculative_seconds for r in rounds]),
            "autoregressive": spread([generated_tokens / r.baseline_seconds for r in rounds])},
        acceptance_length=measured["acceptance_length"], draft_utilisation=measured["draft_utilisation"],
        acceptance_source="steps" if steps else "counters" if pooled else None,
        cost_model="measured" if costs is not None else NO_COSTS, speculation=pooled,
        acceptance_spread=quantiles([c["acceptance"] for c in per_call]),
        draft_utilisation_spread=quantiles([c["draft_utilisation"] for c in per_call]),
        acceptance_length_spread=quantiles([c["acceptance_length"] for c in per_call]),
        predicted_interval=interval, cost_spread=cost_spread,
        acceptance_by_position=_by_position(steps, pooled, measured, theory["mean_draft_tokens"]),
        answer_entropy=kind_entropy(kind, (subject or {}).get("prompts") or prompts) if kind else None,
        **(subject or {}),
    )
