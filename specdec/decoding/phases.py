"""Where a decoding step's time goes: an optional per-phase wall clock for :func:`specdec.decoding.generate`.

A step (docs/reference.md §1) is five timed phases and the rest:

* ``"draft"`` - the draft source's ``propose`` (step 1);
* ``"prefill"`` - the first step's target pass, which carries the prompts with the first drafts;
* ``"target"`` - every later step's target pass over [last token, drafts] (step 2);
* ``"warp"`` - target logits -> warped probabilities, their checks included (step 2, E6);
* ``"verify"`` - the verifier and the check of what it returned (step 3);
* ``"rollback"`` - both caches rolled back, finished rows dropped (step 4);
* ``"bookkeeping"`` - the step's total minus those: choosing K, packing the chunk, emitting
  tokens, the step record, the hooks (step 5), and the timer's own clock reads.

The loop runs the same code with or without a timer; without one, :data:`NO_TIMER` stands in and
reads no clock and synchronises nothing.  With a timer on CUDA, every clock read waits for the
device first (it is a profiling tool: it serialises the queue it measures).
"""

from __future__ import annotations

import contextlib
import time

import torch

PHASES = ("draft", "prefill", "target", "warp", "verify", "rollback")
BOOKKEEPING = "bookkeeping"


class PhaseTimer:
    """Seconds and call counts per phase, over the steps of one or more ``generate`` calls."""

    def __init__(self, device: torch.device | str | None = None) -> None:
        self.device = None if device is None else torch.device(device)  # None: the loop sets the target's device
        self.seconds: dict[str, float] = {name: 0.0 for name in PHASES}
        self.counts: dict[str, int] = {name: 0 for name in PHASES}
        self.steps = 0
        self.total_seconds = 0.0  # sum of whole steps' durations

    def bind(self, device: torch.device) -> None:
        """Called by the loop: the device to synchronise before each clock read (unless one was given)."""
        if self.device is None:
            self.device = torch.device(device)

    def _now(self) -> float:
        if self.device is not None and self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str):
        if name not in self.seconds:
            raise ValueError(f"phase must be one of {PHASES}, got {name!r}")
        started = self._now()
        try:
            yield
        finally:
            self.seconds[name] += self._now() - started
            self.counts[name] += 1

    @contextlib.contextmanager
    def step(self):
        started = self._now()
        try:
            yield
        finally:
            self.total_seconds += self._now() - started
            self.steps += 1

    def breakdown(self) -> dict[str, float]:
        """Seconds per phase over all steps, ``"bookkeeping"`` = total - the timed phases (>= 0)."""
        out = dict(self.seconds)
        out[BOOKKEEPING] = max(self.total_seconds - sum(self.seconds.values()), 0.0)
        return out


class _NoTimer:
    """The loop's timer when none is given: no clock, no synchronisation, one shared null context."""

    _null = contextlib.nullcontext()

    def bind(self, device) -> None:
        pass

    def phase(self, name: str):
        return self._null

    def step(self):
        return self._null


NO_TIMER = _NoTimer()
