"""Where a speculative step's time goes: one generation under a :class:`PhaseTimer`, per phase.

F23 counts only the two model passes; a row's efficiency below 1 is time outside them.  The
breakdown splits a step into the draft's proposal, the target pass, warping, verification, cache
rollback and the rest (bookkeeping), so that time can be named before it is cut.  It comes from a
separate, untimed run: the timer's clock reads (and, on CUDA, its synchronisations) must not touch
the measured rounds.
"""

from __future__ import annotations

from ..decoding.loop import generate
from ..decoding.phases import BOOKKEEPING, PHASES, PhaseTimer
from ..warpers import SamplingConfig


def step_breakdown(target, draft, prompts, *, max_new_tokens: int, num_draft_tokens, sampling: SamplingConfig, seed: int,
                   target_cache="dynamic") -> dict:
    """One ``generate`` call (no EOS: exactly ``max_new_tokens`` per row) with a phase timer.

    Returns ``{"ms_per_step": {phase: ms}, "fractions": {phase: share of the step total}, "steps": n,
    "total_seconds": s}`` over the phases draft, target, warp, verify, rollback and bookkeeping
    (:mod:`specdec.decoding.phases`); ``total_seconds`` sums the steps (the prefill is not a step).
    """
    timer = PhaseTimer()
    generate(target, draft, prompts, max_new_tokens=max_new_tokens, num_draft_tokens=num_draft_tokens, sampling=sampling,
             eos_token_id=None, seed=seed, target_cache=target_cache, phase_timer=timer)
    seconds = timer.breakdown()
    steps = max(timer.steps, 1)
    total = timer.total_seconds
    return {
        "ms_per_step": {name: seconds[name] * 1e3 / steps for name in (*PHASES, BOOKKEEPING)},
        "fractions": {name: seconds[name] / total if total > 0 else 0.0 for name in (*PHASES, BOOKKEEPING)},
        "steps": timer.steps,
        "total_seconds": total,
    }
