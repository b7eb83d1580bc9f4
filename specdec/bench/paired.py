"""Paired rounds of a :class:`~specdec.bench.subject.BenchSubject` on one prompt set (issue 22).

A round decodes the prompts with the autoregressive twin and then with the speculative decoder,
``batch`` prompts per call (``batch`` requests in flight: a ragged batch for our loop, B requests
for a server), the same seeds per call on both sides; its ratio is autoregressive seconds /
speculative seconds.  pytest-benchmark times the speculative pass (:meth:`PairedRounds.speculative`)
with the twin's pass as its untimed ``setup`` (:meth:`PairedRounds.baseline`), as perf/ does for our
loop, so the stored run holds the same rows and ratios and ``specdec bench gate`` / ``plot`` read it.

A black box streams nothing, so latency is measured from whole calls, on both sides alike:
TTFT is the seconds of a call for one new token (prefill and the first step); ITL is
(T(L) - T(1)) / (L - 1) per call, the mean gap between later tokens.  Peak memory is the
region's peak on ``device`` in this process, or None for a decoder that says ``runs_in_process = False``
(a server: its memory is not this process's).

Acceptance, per call and pooled: docs/reference.md §6's acceptance rate needs every step's K and
accepted count, which a :class:`specdec.protocols.StepRecorder` gives (our loop); a decoder that only
counts (:class:`specdec.protocols.SpeculationCounter`: drafts, draft tokens, accepted tokens, as
vLLM and llama.cpp do) gives the draft utilisation (accepted / drafted) and the acceptance length
(tokens per verify step), not the acceptance rate.  F23's prediction then takes the measured
acceptance length as its numerator; F24's K* takes the acceptance that length implies under F23's
i.i.d. model (:func:`implied_acceptance`).  The row's ``predicted`` is F23 end to end: the twin's
one-token calls over its whole calls are the share both sides pay alike (the prefill and the call's
setup; docs/reference.md §6), and ``predicted_decode`` is F23 alone.  With ``batch = 1`` every
prompt is a call, so the row's spreads are over prompts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import metrics
from .._validation import as_int, as_seed
from ..laws.speedup import end_to_end_speedup, optimal_draft_length, predicted_speedup
from .clock import spread, timed
from .memory import PeakMemory
from .rows import MIB, prefill_share

NO_COSTS = "ideal"  # F23 with rho = 0 and v(K) = 1: what speculation could give at the measured acceptance


@dataclass
class Pass:
    """One side's pass over the prompts: seconds, tokens per prompt, peak bytes, the counters per call."""

    seconds: float
    tokens: list[list[int]]
    peak_bytes: int | None
    call_seconds: list[float]
    speculation: list[dict | None] = field(default_factory=list)  # per call: the counters' difference
    steps: list[list[tuple[int, int]] | None] = field(default_factory=list)  # per call: (K, accepted) per row-step


class _Unknown:
    """The peak memory of work done elsewhere: unknown (None), never this process's."""

    bytes = None

    def __enter__(self) -> "_Unknown":
        return self

    def __exit__(self, *exc) -> None:
        return None


def _steps(decoder) -> list[tuple[int, int]] | None:
    """(K, accepted) of every row-step of the decoder's last call, when it records them (a StepRecorder)."""
    from ..protocols import StepRecorder

    if not isinstance(decoder, StepRecorder):
        return None
    return [(int(k), int(a)) for _, k, a in decoder.last_steps()]  # K = 0 steps too: F23 counts their cost


def _counts(decoder):
    from ..conformance.decoder_output import speculation_of

    return speculation_of(decoder)


def _delta(before, after):
    from ..conformance.decoder_output import speculation_delta

    return speculation_delta(before, after)


@dataclass
class PairedRounds:
    """Measure ``subject`` on ``prompts``: call :meth:`baseline` then :meth:`speculative` once per round
    (pytest-benchmark's setup / target), then :meth:`row`."""

    subject: object
    prompts: list[list[int]]
    new_tokens: int
    batch: int = 1
    seed: int = 0
    device: torch.device = torch.device("cpu")
    latency: bool = True  # time the one-token calls (TTFT) each round, untimed by pytest-benchmark
    rounds: list[dict] = field(default_factory=list)
    _pending: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.new_tokens = as_int("new_tokens", self.new_tokens, minimum=2)
        self.batch = as_int("batch", self.batch, minimum=1)
        self.seed = as_seed(self.seed)
        if not self.prompts:
            raise ValueError("prompts must be a non-empty list of token-id lists")
        self.device = torch.device(self.device)

    @property
    def calls(self) -> list[tuple[int, list[list[int]]]]:
        """(seed, prompts) of every call: ``batch`` prompts each, the seed of the call's index."""
        return [(self.seed + i, self.prompts[start:start + self.batch])
                for i, start in enumerate(range(0, len(self.prompts), self.batch))]

    def run_pass(self, decoder, max_new_tokens: int | None = None) -> Pass:
        """One pass of ``decoder`` over every call; ``max_new_tokens`` defaults to the plan's."""
        length = self.new_tokens if max_new_tokens is None else max_new_tokens
        tokens, call_seconds, speculation, steps = [], [], [], []
        remote = getattr(decoder, "runs_in_process", True) is False  # a server: its memory is not this process's
        with (_Unknown() if remote else PeakMemory(self.device)) as memory:
            for seed, prompts in self.calls:
                before = _counts(decoder)
                seconds, out = timed(lambda: decoder(prompts, length, seed), self.device)
                speculation.append(_delta(before, _counts(decoder)))
                steps.append(_steps(decoder))
                if not isinstance(out, (list, tuple)) or len(out) != len(prompts):
                    raise TypeError(f"the decoder returned {type(out).__name__} of length "
                                    f"{len(out) if hasattr(out, '__len__') else '?'} for {len(prompts)} prompts")
                tokens.extend([int(t) for t in row] for row in out)
                call_seconds.append(seconds)
        return Pass(sum(call_seconds), tokens, memory.bytes, call_seconds, speculation, steps)

    def baseline(self) -> None:
        """The round's untimed part: the twin's pass, and the one-token calls of both sides."""
        self._pending = {"baseline": self.run_pass(self.subject.autoregressive)}
        if self.latency:
            self._pending["baseline_first"] = self.run_pass(self.subject.autoregressive, 1)
            self._pending["speculative_first"] = self.run_pass(self.subject.speculative, 1)

    def speculative(self) -> None:
        """The round's timed part: the speculative decoder's pass."""
        if "baseline" not in self._pending:
            raise RuntimeError("call baseline() before speculative() in every round")
        self._pending["speculative"] = self.run_pass(self.subject.speculative)
        self.rounds.append(self._pending)
        self._pending = {}

    def run(self, rounds: int) -> None:
        """``rounds`` rounds without pytest-benchmark."""
        for _ in range(as_int("rounds", rounds, minimum=1)):
            self.baseline()
            self.speculative()

    def check_lengths(self) -> None:
        """Both sides produced exactly ``new_tokens`` per prompt in the last round (the same stop rule)."""
        last = self.rounds[-1]
        for side in ("baseline", "speculative"):
            lengths = sorted({len(t) for t in last[side].tokens})
            if lengths != [self.new_tokens]:
                raise AssertionError(f"the {side} side generated {lengths} tokens per prompt, not {self.new_tokens}: "
                                     "the pair must generate exactly new_tokens (ignore EOS) for its speedup to mean anything")

    def row(self, configuration: str, kind: str, *, costs=None) -> dict:
        """The row of the rounds so far (see :mod:`specdec.bench.rows` for the shared fields)."""
        if not self.rounds:
            raise ValueError("row needs at least one round")
        return subject_row(self, configuration, kind, costs=costs)


def _call_metrics(spec: dict | None, steps: list[tuple[int, int]] | None) -> dict:
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


def _pooled(speculation: list[dict | None]) -> dict | None:
    known = [s for s in speculation if s]
    if not known:
        return None
    return {key: sum(int(s.get(key, 0)) for s in known) for key in ("drafts", "draft_tokens", "accepted_tokens")}


def implied_acceptance(acceptance_length: float, k: int) -> float:
    """The alpha whose F23 expectation (1 - alpha^(K+1)) / (1 - alpha) equals ``acceptance_length`` at draft
    length ``k`` (bisection): what a subject that only counts tokens implies under F23's i.i.d. model."""
    target = min(max(float(acceptance_length), 1.0), k + 1.0)
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if sum(mid ** i for i in range(k + 1)) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def quantiles(values) -> dict | None:
    """min, quartiles, median and max of the known values (None when there are none)."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    arr = np.asarray(known, dtype=np.float64)
    q1, median, q3 = np.percentile(arr, [25, 50, 75])
    return {"min": float(arr.min()), "q1": float(q1), "median": float(median), "q3": float(q3), "max": float(arr.max()),
            "n": int(arr.size)}


def subject_row(paired: PairedRounds, configuration: str, kind: str, *, costs=None) -> dict:
    """A row with :class:`specdec.bench.rows.Row`'s fields plus the subject's: ``subject``, ``batch``,
    ``tokens_per_second`` of both sides, ``cost_model`` ("measured" or "ideal") and the spread of
    acceptance and acceptance length over calls (over prompts when ``batch`` is 1)."""
    rounds = paired.rounds
    ratios = [r["baseline"].seconds / r["speculative"].seconds for r in rounds]
    last = rounds[-1]["speculative"]
    per_call = [_call_metrics(spec, steps) for spec, steps in zip(last.speculation, last.steps)]
    all_steps = [step for steps in last.steps if steps for step in steps]
    pooled = _pooled(last.speculation)
    pooled_call = _call_metrics(pooled, all_steps or None)
    alpha, tokens_per_step = pooled_call["acceptance"], pooled_call["acceptance_length"]
    if all_steps:
        drafted = [k for k, _ in all_steps]
        mean_k = sum(drafted) / len(drafted)
    elif pooled and pooled["drafts"]:
        mean_k = pooled["draft_tokens"] / pooled["drafts"]
        drafted = [max(1, round(mean_k))]
    else:
        mean_k, drafted = float(paired.subject.num_draft_tokens or 0), []
    rho, verify = (costs.draft_step_ratio, costs.verify_cost_ratios) if costs is not None else (0.0, None)
    first = [r.get("baseline_first") for r in rounds]
    share = (None if any(f is None for f in first) else
             prefill_share([s for f in first for s in f.call_seconds], [r["baseline"].seconds for r in rounds]))
    predicted = decode = efficiency = optimal_k = None
    if tokens_per_step is not None and drafted and (verify is None or max(drafted) < len(verify)):
        if alpha is not None:  # F23 over the K each step drafted, at the measured acceptance
            decode = predicted_speedup(alpha, drafted, rho, verify)
        else:  # F23's numerator measured: the acceptance length over the cost of a step at the mean K
            k = drafted[0]
            decode = tokens_per_step / (k * rho + (1.0 if verify is None else verify[k]))
        predicted = decode if share is None else end_to_end_speedup(decode, share)
        efficiency = statistics.median(ratios) / predicted
        if verify is not None:  # F24's K* needs measured costs: with ideal ones it is always the largest K
            f24_alpha = alpha if alpha is not None else implied_acceptance(tokens_per_step, drafted[0])
            optimal_k, _ = optimal_draft_length(f24_alpha, rho, max_draft_tokens=len(verify) - 1, verify_cost_ratios=verify)
    generated = len(paired.prompts) * paired.new_tokens

    def latency(side: str):
        first = [r.get(f"{side}_first") for r in rounds]
        if any(f is None for f in first):
            return None, None
        ttft = [s for f in first for s in f.call_seconds]
        itl = [(full - one) / (paired.new_tokens - 1)
               for r, f in zip(rounds, first) for full, one in zip(r[side].call_seconds, f.call_seconds)]
        return float(np.median(ttft)) * 1e3, itl

    ttft_ms, itl = latency("speculative")
    baseline_ttft_ms, _ = latency("baseline")
    itl_ms = ({"p50": float(np.percentile(itl, 50)) * 1e3, "p90": float(np.percentile(itl, 90)) * 1e3,
               "max": float(max(itl)) * 1e3} if itl else {"p50": float("nan"), "p90": float("nan"), "max": float("nan")})
    peaks = [(r["speculative"].peak_bytes - r["baseline"].peak_bytes) / MIB for r in rounds
             if r["speculative"].peak_bytes is not None and r["baseline"].peak_bytes is not None]
    return {
        "configuration": configuration,
        "kind": kind,
        "speedup": spread(ratios),
        "ratios": ratios,
        "predicted": predicted,
        "predicted_decode": decode,
        "prefill_share": share,
        "efficiency": efficiency,
        "acceptance": alpha,
        "tokens_per_step": tokens_per_step,
        "mean_draft_tokens": float(mean_k),
        "optimal_k": optimal_k,
        "ttft_ms": ttft_ms,
        "baseline_ttft_ms": baseline_ttft_ms,
        "itl_ms": itl_ms,
        "delta_memory_mib": float(np.median(peaks)) if peaks else None,
        "draft_step_ratio": rho if costs is not None else None,
        "verify_cost_ratio": None if verify is None or not drafted else float(np.interp(mean_k, range(len(verify)), verify)),
        "peer_speedup": None,
        "subject": paired.subject.name,
        "batch": paired.batch,
        "prompts": len(paired.prompts),
        "new_tokens": paired.new_tokens,
        "tokens_per_second": {
            "speculative": spread([generated / r["speculative"].seconds for r in rounds]),
            "autoregressive": spread([generated / r["baseline"].seconds for r in rounds]),
        },
        "cost_model": "measured" if costs is not None else NO_COSTS,
        "speculation": pooled,
        "draft_utilisation": pooled_call["draft_utilisation"],
        "acceptance_source": "steps" if all_steps else "counters" if pooled else None,
        "acceptance_spread": quantiles([c["acceptance"] for c in per_call]),
        "draft_utilisation_spread": quantiles([c["draft_utilisation"] for c in per_call]),
        "acceptance_length_spread": quantiles([c["acceptance_length"] for c in per_call]),
    }
