"""F28 along a run: a decoder's measured tokens per step against their exact expectation at every
visited context (F26-F28), for decoders that can replay their last call step by step
(:class:`specdec.protocols.StepRecorder`: the reference loop with a model draft is one).

Z = sum_k (T_k - mu(c_k)) / sqrt(sum_k sigma^2(c_k)) is approximately N(0, 1) for a correct decoder
(martingale central limit theorem); mu and sigma^2 come from the registered scheme's ``moments``.
"""

from __future__ import annotations

import math

from scipy import stats as sps

from ..protocols import StepRecorder, TargetLaw
from ..schemes import get as get_scheme
from ..schemes import names
from .calls import CallGuard
from .checks import Check
from .engine import Extra

SEES_ACCEPTANCE_Z = (
    "acceptance that departs from its exact expectation along a run (F26-F28): a draft law or an acceptance rule "
    "that is not the one declared, even where the output law still looks right"
)


class _CachedLaw:
    """One call of the underlying law per distinct context."""

    def __init__(self, law: TargetLaw) -> None:
        self.law, self.rows = law, {}

    def __call__(self, context: tuple[int, ...]):
        if context not in self.rows:
            self.rows[context] = self.law.next_token_probs([context])[0]
        return self.rows[context]


def _moments(rule: str, target, draft, context: tuple, num_draft_tokens: int) -> tuple[float, float]:
    """Mean and variance of the tokens emitted by one step at ``context``: the registered scheme's
    ``moments`` (F26-F27 for the token rule, F20's law for blocks)."""
    return get_scheme(rule, shape="chain").moments(lambda prefix: target(context + prefix), lambda prefix: draft(context + prefix), num_draft_tokens)


def acceptance_z_check(decoder, target: TargetLaw, prompts, *, length: int, seed: int, rows: int = 256,
                       guard: CallGuard | None = None) -> Extra:
    """(F28) Z = sum_k (T_k - mu(c_k)) / sqrt(sum_k sigma^2(c_k)) over the row-steps of one run of ``rows`` rows
    of ``length`` new tokens."""
    guard = guard or CallGuard(None)

    def run_check(alpha: float) -> Check:
        batch = [p for _ in range(max(1, rows // len(prompts))) for p in prompts]
        guard.call(decoder, (batch, length, seed), lambda: f"the F28 replay call of {len(batch)} rows, max_new_tokens={length}, seed={seed}")
        target_law, draft_law = _CachedLaw(target), _CachedLaw(decoder.draft_law)
        deviation = variance = 0.0
        steps = measured = 0
        for context, num_draft_tokens, accepted in decoder.last_steps():
            if num_draft_tokens == 0:
                continue
            mean, var = _moments(decoder.acceptance_rule, target_law, draft_law, tuple(context), num_draft_tokens)
            deviation += accepted + 1 - mean
            variance += var
            measured += accepted + 1
            steps += 1
        z = deviation / math.sqrt(variance) if variance > 0 else (0.0 if abs(deviation) < 1e-9 else math.inf)
        return Check(
            "tokens per step vs exact expectation (F26-F28)", "acceptance z", SEES_ACCEPTANCE_Z, "z (martingale CLT)",
            z, float(2 * sps.norm.sf(abs(z))), steps,
            details={"tokens_per_step": measured / max(steps, 1), "expected_tokens_per_step": (measured - deviation) / max(steps, 1)},
        )

    return Extra("acceptance z (F28)", run_check)


def f28_applies(decoder) -> str | None:
    """None when F28 applies, else why not."""
    if not isinstance(decoder, StepRecorder):
        return "the decoder does not expose its steps (specdec.protocols.StepRecorder)"
    if decoder.draft_law is None:
        return "the draft cannot state its law per context (e.g. prompt lookup)"
    rule = decoder.acceptance_rule
    if rule not in names("chain"):
        return (f"the verifier implements no registered chain scheme ({rule!r}; known: {', '.join(names('chain'))}; "
                "specdec.schemes.declare(your_verifier, NAME) says which)")
    return None
