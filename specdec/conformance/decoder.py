"""check_decoder: the conformance report of a whole decoder (docs/decoder.md).

The first L tokens after each prompt are compared with the exact law enumerated
from the target law (F35, EOS absorbing), located by F36.  The cells are the V^L
sequences (fewer with EOS or warpers that zero tokens), so the samples a check
needs grow with V^L: pick the smallest L that reaches the code paths you doubt
(L = 2 already exercises a rejection followed by a new step).

When the decoder can replay its last call step by step
(:class:`specdec.protocols.StepRecorder`: the reference loop with a model draft is
one), one more check compares its measured tokens per step with their exact
expectation at every visited context (F26-F28): a z-score that is approximately
N(0, 1) for a correct decoder.

What a decoder may return after EOS, how many tokens it is asked for and how a subject that
misbehaves is reported: :mod:`.decoder_stream` and :mod:`.subject` (docs/decoder.md).
"""

from __future__ import annotations

import math
from typing import Sequence

from scipy import stats as sps

from .._checks import as_int
from ..laws.sequence import eos_ids, sequence_law
from ..laws.target import as_target_law, check_contexts
from ..protocols import SpeculationCounter, StepRecorder, TargetLaw
from ..schemes import get as get_scheme
from ..schemes import names
from .budget import ErrorBudget
from .checks import Check
from .console import Console
from .decoder_stream import decoder_stream
from .engine import Extra, run, subject_name
from .plan import DEFAULT_MAX_N, SampleRequest
from .report import Report
from .subject import DEFAULT_CALL_TIMEOUT, CallGuard

EXTRA_TOKENS = 4  # tokens asked beyond those tested when the decoder does not state its K

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


def _f28_applies(decoder) -> str | None:
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


def check_decoder(
    decoder,
    target,
    prompts: Sequence[Sequence[int]],
    *,
    length: int = 2,
    sampling=None,
    eos_token_id=None,
    tv: float | None = 0.01,
    time_budget: float | None = None,
    n: int | None = None,
    max_n: int = DEFAULT_MAX_N,
    chunk_size: int | None = None,
    seed: int = 0,
    family_alpha: float = 1e-6,
    budget: ErrorBudget | None = None,
    console: Console | None = None,
    name: str | None = None,
    acceptance_rows: int = 256,
    max_new_tokens: int | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
) -> Report:
    """Conformance report of a :class:`specdec.protocols.Decoder` against a target law.

    ``target``: a :class:`specdec.protocols.TargetLaw`, or a transformers causal LM
    warped with ``sampling``.  ``prompts``: token-id lists; they are interleaved in every
    decoder call.  ``length``: tokens tested after each prompt (cells grow as V^length).
    ``max_new_tokens``: tokens asked of the decoder per row (>= ``length``; default ``length``
    plus the decoder's ``num_draft_tokens`` when it states an int, else plus 4), so that a decoder
    that shrinks its drafts near the end verifies full blocks at the tested positions.
    ``eos_token_id``: EOS is absorbing (E8); after a row's first EOS anything may follow
    (padding, truncation, any token): it is ignored.  ``call_timeout``: seconds one call of the
    decoder may take (None: no limit); a decoder that raises, hangs or breaks its Protocol gets
    the verdict ERROR.  n: planned for ``tv``, fixed by ``n`` (samples per prompt), or fitted to
    ``time_budget`` seconds.  Other arguments as in :func:`check_verifier`.
    """
    if not callable(decoder):
        raise TypeError(f"decoder must be callable (specdec.protocols.Decoder), got {type(decoder).__name__}")
    law = as_target_law(target, sampling)
    length = as_int("length", length, minimum=1)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not prompts:
        raise ValueError("prompts must be a non-empty list of token-id lists")
    prompts = [list(p) for p in check_contexts(prompts, law.vocab_size)]
    eos = eos_ids(eos_token_id, law.vocab_size)
    asked = asked_tokens(decoder, length, max_new_tokens)
    request = SampleRequest(tv, time_budget, n, max_n, chunk_size)
    guard = CallGuard(call_timeout)
    laws = [sequence_law(law, p, length, eos_token_id=sorted(eos) or None) for p in prompts]
    streams = [decoder_stream(decoder, prompts, laws, length, law.vocab_size, eos, max_new_tokens=asked, guard=guard)]
    notes = [f"{len(prompts)} prompt(s) interleaved in every decoder call; cells per prompt: "
             + ", ".join(str(len(x.sequences)) for x in laws),
             f"the decoder was asked for {asked} new tokens per row; the first {length} are tested"
             + (f" (EOS {sorted(eos)} absorbing: what follows a row's first EOS is ignored)" if eos else "")]
    why_not = _f28_applies(decoder)
    extras = []
    if why_not is None:
        extras.append(acceptance_z_check(decoder, law, prompts, length=asked, seed=seed + 1,
                                         rows=as_int("acceptance_rows", acceptance_rows, minimum=1), guard=guard))
    else:
        notes.append(f"F28 (tokens per step vs exact expectation) not applied: {why_not}")
    settings = getattr(decoder, "settings", None)
    if isinstance(settings, str):
        notes.append(f"subject: {settings}")
    before = speculation_of(decoder)
    report = run(
        name or subject_name(decoder), "decoder", streams, request, seed=seed, family_alpha=family_alpha, budget=budget,
        device=_cpu(), console=console or Console.auto(), notes=notes, extras=extras,
    )
    report.speculation = speculation_delta(before, speculation_of(decoder))
    if report.speculation is not None:
        report.notes.append(speculation_note("speculation during the check (the subject's own counters)", report.speculation))
    return report


def speculation_delta(before: dict | None, after: dict | None) -> dict | None:
    """The drafts, draft tokens and accepted tokens counted between two readings of a decoder's
    counters (:func:`speculation_of`); None when either reading is None."""
    if before is None or after is None:
        return None
    return {key: int(after.get(key, 0)) - int(before.get(key, 0)) for key in ("drafts", "draft_tokens", "accepted_tokens")}


def speculation_note(head: str, spec: dict) -> str:
    """One report note: ``head``, then the counts of :func:`speculation_delta` and the draft utilisation
    (accepted / drafted: counters alone do not give docs/reference.md §6's acceptance rate, which needs
    the steps that rejected)."""
    rate = f" (draft utilisation {spec['accepted_tokens'] / spec['draft_tokens']:.3f})" if spec["draft_tokens"] else ""
    return f"{head}: {spec['drafts']:,} drafts verified, {spec['draft_tokens']:,} draft tokens, {spec['accepted_tokens']:,} accepted{rate}"


def speculation_of(decoder) -> dict | None:
    if not isinstance(decoder, SpeculationCounter):
        return None
    counts = decoder.speculation_counts()
    return None if counts is None else dict(counts)


def asked_tokens(decoder, length: int, max_new_tokens) -> int:
    if max_new_tokens is not None:
        return as_int("max_new_tokens", max_new_tokens, minimum=length)
    stated = getattr(decoder, "num_draft_tokens", None)
    extra = stated if isinstance(stated, int) and not isinstance(stated, bool) and stated >= 0 else EXTRA_TOKENS
    return length + extra


def _cpu():
    import torch

    return torch.device("cpu")  # decoders return Python lists: counting happens on the host
