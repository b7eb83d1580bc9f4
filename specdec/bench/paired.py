"""Paired rounds of a :class:`~specdec.bench.pairs.BenchSubject` on one prompt set (issue 22).

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
i.i.d. model (:func:`specdec.laws.speedup.implied_acceptance`).  The row's ``predicted`` is F23 end to
end: the twin's one-token calls over its whole calls are the share both sides pay alike (the prefill and
the call's setup; docs/reference.md §6), and ``predicted_decode`` is F23 alone.  With ``batch = 1`` every
prompt is a call, so the row's spreads are over prompts.  Each round becomes one
:class:`specdec.bench.rows.Round` and the row comes from :func:`specdec.bench.rows.summarise`, as
``make bench``'s rows do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .._validation import as_int, as_seed
from ..conformance.decoder_output import speculation_delta, speculation_of
from ..protocols import StepRecorder
from .clock import timed
from .memory import PeakMemory
from .rows import NO_COSTS, Round, summarise  # noqa: F401 - NO_COSTS re-exported

__all__ = ["Pass", "PairedRounds"]


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
    if not isinstance(decoder, StepRecorder):
        return None
    return [(int(k), int(a)) for _, k, a in decoder.last_steps()]  # K = 0 steps too: F23 counts their cost


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
                before = speculation_of(decoder)
                seconds, out = timed(lambda: decoder(prompts, length, seed), self.device)
                speculation.append(speculation_delta(before, speculation_of(decoder)))
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

    def round(self, index: int) -> Round:
        """Round ``index`` as :func:`specdec.bench.rows.summarise` reads it: whole seconds, peaks, the speculative
        side's steps and counters per call, and latency from whole calls (TTFT: a one-token call; ITL:
        (T(L) - T(1)) / (L - 1) per call), on both sides alike."""
        measured = self.rounds[index]
        spec, base = measured["speculative"], measured["baseline"]
        first, base_first = measured.get("speculative_first"), measured.get("baseline_first")
        return Round(base.seconds, spec.seconds, base.peak_bytes, spec.peak_bytes,
                     steps=[s for call in spec.steps if call for s in call],
                     ttft=[] if first is None else list(first.call_seconds),
                     inter_token=[] if first is None else [(full - one) / (self.new_tokens - 1)
                                                           for full, one in zip(spec.call_seconds, first.call_seconds)],
                     baseline_ttft=[] if base_first is None else list(base_first.call_seconds),
                     call_steps=list(spec.steps), speculation=list(spec.speculation))

    def row(self, configuration: str, kind: str, *, costs=None) -> dict:
        """The row of the rounds so far (:class:`specdec.bench.rows.Row` as a dict, with the subject's fields)."""
        if not self.rounds:
            raise ValueError("row needs at least one round")
        subject = {"subject": self.subject.name, "batch": self.batch, "prompts": len(self.prompts), "new_tokens": self.new_tokens}
        return summarise(configuration, kind, [self.round(i) for i in range(len(self.rounds))], costs,
                         generated_tokens=len(self.prompts) * self.new_tokens, subject=subject,
                         num_draft_tokens=self.subject.num_draft_tokens).as_dict()
