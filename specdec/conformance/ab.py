"""check_ab: do two decoders emit the same law?  A two-sample check for laws specdec cannot compute.

Where the exact law is known (a transformers model, a table), :func:`check_decoder` tests a decoder
against it.  Where it is not - a quantised GGUF model, an engine whose forward is not transformers',
a server, an EAGLE head - the honest comparison is speculation on vs off: the subject and a
reference (the same engine without speculation), both :class:`specdec.protocols.Decoder` s, asked
for the same prompts with independent seeds.  The first L tokens after each prompt are compared
by a test of homogeneity over the 2 x C table of observed sequences (docs/reference.md §7):

* **H1** - Pearson's X^2 of homogeneity, cells pooled by their *combined* counts (a cell whose
  smaller side expects fewer than 5 joins one rare bin);
* **H2** - power: n per side is planned so that every pair of laws at TV >= ``tv`` is caught with
  power 0.99: twice the samples per side of a one-sample check.  The law is unknown before
  sampling, so the plan is made from the combined counts as they come in (never from which side a
  sample came from, which keeps the level) and re-made after every round; the TV stated is
  sqrt(lambda(bins - 1) / 4 n_eff) + r, where r is the rare bins' combined mass plus the
  Good-Turing estimate of the mass never seen (singletons / samples);
* **H3** - a FAIL is located at the first position and prefix where the two conditional laws
  differ (the per-prefix split of G);
* sequences seen by one side only are listed (a support difference), and each side's rows within a
  call are checked for copies (the independence diagnostic of :mod:`.decoder_stream`).

Both sides are read by the decoder contract (docs/decoder.md): after a row's first EOS anything may
follow; the decoders are asked for ``max_new_tokens`` >= L so that full blocks are verified at the
tested positions.  One check per prompt, Holm across them, alpha from the run's error budget.
A subject that counts its speculation (:class:`specdec.protocols.SpeculationCounter`) and
verified no draft during the check is INCONCLUSIVE about speculation.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from .._checks import as_float, as_int, as_seed
from ..laws.sequence import eos_ids
from ..stats.multiplicity import holm
from ..stats.two_sample import two_sample_detectable_tv, two_sample_sample_size
from .budget import ErrorBudget
from .console import Console
from .decoder import asked_tokens, speculation_delta, speculation_note, speculation_of
from .ab_stream import SIDES, Side, ab_check, combined_law, unseen_mass
from .decoder_stream import read_rows
from .engine import subject_name
from .report import Report, library_versions
from .seeds import derive_seed
from .subject import DEFAULT_CALL_TIMEOUT, CallGuard, SubjectError

DEFAULT_AB_MAX_N = 1_000_000  # samples per side and prompt
DEFAULT_ROWS_PER_CALL = 1024  # rows per decoder call (all prompts together); servers: one wave of requests
def _ab_inputs(prompts, length, eos_token_id, vocab_size):
    length = as_int("length", length, minimum=1)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not prompts:
        raise ValueError("prompts must be a non-empty list of token-id lists")
    out = []
    for i, prompt in enumerate(prompts):
        if isinstance(prompt, (str, bytes)) or not isinstance(prompt, Sequence) or not prompt:
            raise ValueError(f"prompts[{i}] must be a non-empty list of token ids, got {prompt!r}")
        ids = [as_int(f"prompts[{i}][{j}]", t, minimum=0, maximum=None if vocab_size is None else vocab_size - 1)
               for j, t in enumerate(prompt)]
        out.append(ids)
    if eos_token_id is None:
        eos = frozenset()
    elif vocab_size is not None:
        eos = eos_ids(eos_token_id, vocab_size)
    else:
        ids = [eos_token_id] if isinstance(eos_token_id, (int, np.integer)) and not isinstance(eos_token_id, bool) else eos_token_id
        eos = frozenset(as_int("eos_token_id", t, minimum=0) for t in ids)
    return out, length, eos


def check_ab(
    subject,
    reference,
    prompts: Sequence[Sequence[int]],
    *,
    length: int = 2,
    eos_token_id=None,
    vocab_size: int | None = None,
    tv: float | None = 0.05,
    n: int | None = None,
    time_budget: float | None = None,
    max_n: int = DEFAULT_AB_MAX_N,
    rows_per_call: int = DEFAULT_ROWS_PER_CALL,
    seed: int = 0,
    family_alpha: float = 1e-6,
    budget: ErrorBudget | None = None,
    console: Console | None = None,
    name: str | None = None,
    max_new_tokens: int | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
) -> Report:
    """Two-sample conformance report: does ``subject`` emit the law ``reference`` emits?

    ``subject``, ``reference``: :class:`specdec.protocols.Decoder` s (``decoder(prompts,
    max_new_tokens, seed)``; e.g. an engine with and without speculation).  ``prompts``: token-id
    lists, interleaved in every call.  ``length``: tokens tested after each prompt.  Samples per
    side and prompt: planned for ``tv`` (H2, re-planned from the combined counts after every round),
    fixed by ``n``, or as many as ``time_budget`` seconds allow; at most ``max_n``.
    ``rows_per_call``: rows per decoder call.  ``eos_token_id``: EOS is absorbing (E8): what follows
    a row's first EOS is ignored.  ``vocab_size``: when given, prompt ids are checked against it.
    Other arguments as in :func:`check_decoder`.  The verdict: FAIL when some prompt's two laws
    differ (H1 at the report's alpha, Holm), located by H3; PASS when no pair of laws at TV >= the
    reached TV went unseen with probability above 0.01; INCONCLUSIVE, ERROR and INTERRUPTED as in
    every report (docs/reference.md §9).
    """
    for role, decoder in (("subject", subject), ("reference", reference)):
        if not callable(decoder):
            raise TypeError(f"{role} must be callable (specdec.protocols.Decoder), got {type(decoder).__name__}")
    prompts, length, eos = _ab_inputs(prompts, length, eos_token_id, vocab_size)
    if tv is not None:
        tv = as_float("tv", tv, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    if n is not None:
        n = as_int("n", n, minimum=1)
    if time_budget is not None:
        time_budget = as_float("time_budget", time_budget, minimum=0.0, low_open=True)
    if tv is None and n is None and time_budget is None:
        raise ValueError("check_ab needs tv, n or time_budget to know how many samples to draw")
    max_n = as_int("max_n", max_n, minimum=1)
    rows_per_call = as_int("rows_per_call", rows_per_call, minimum=1)
    seed = as_seed(seed)
    asked = asked_tokens(subject, length, max_new_tokens)
    guard = CallGuard(call_timeout)
    console = console or Console.auto()
    label = name or f"{subject_name(subject)} vs {subject_name(reference)}"
    num_checks = len(prompts)
    entry = budget.allot(num_checks, label) if budget is not None else None
    alpha = entry.alpha if entry is not None else as_float(
        "family_alpha", family_alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    alpha_check = alpha / num_checks
    rule = (f"n = {n:,} per side and prompt" if n is not None else
            f"planned for TV {tv:g} at power 0.99 from the combined counts (H2)" if tv is not None else
            f"as many as {time_budget:g} s allow") + (f" within {time_budget:g} s" if time_budget is not None and n is not None else "")
    report = Report(subject=label, level="A/B (two samples)", checks=[], family_alpha=alpha, asked_tv=tv, seed=seed,
                    chunk_size=max(1, rows_per_call // len(prompts)), device="cpu", sample_size_rule=rule + f", at most {max_n:,}",
                    versions=library_versions())
    report.notes = [f"{len(prompts)} prompt(s) interleaved in every call of either decoder; the decoders were asked for "
                    f"{asked} new tokens per row and the first {length} are tested"
                    + (f" (EOS {sorted(eos)} absorbing: what follows a row's first EOS is ignored)" if eos else ""),
                    "the two sides draw with independent seeds; cells are the sequences either side produced"]
    console.say(f"-- {label} (A/B, two samples): {num_checks} check(s), Holm at family-wise alpha {alpha:.1e}; {rule}")
    sides = (Side(len(prompts)), Side(len(prompts)))
    before = [speculation_of(d) for d in (subject, reference)]
    started = time.perf_counter()
    deadline = None if time_budget is None else started + time_budget
    drawn = 0
    per_call = max(1, rows_per_call // len(prompts))
    goal = n if n is not None else (max_n if tv is None else None)
    progress = console.progress(goal or per_call * 8, label)
    try:
        chunk = 0
        while True:
            want = _wanted(goal, tv, sides, len(prompts), drawn, alpha_check, max_n, per_call)
            if want <= drawn or (deadline is not None and time.perf_counter() >= deadline):
                break
            m = min(per_call, want - drawn)
            for index, (decoder, side) in enumerate(zip((subject, reference), sides)):
                _draw(decoder, SIDES[index], side, prompts, m, asked, length, eos, derive_seed(seed, index, chunk), guard)
            drawn += m
            chunk += 1
            progress.update(m)
    except SubjectError as error:
        report.error = error.failure.to_dict()
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        progress.close()
    report.samples = 2 * drawn * len(prompts)
    report.planned_samples = 2 * len(prompts) * (goal or drawn)
    if report.error is None:
        report.checks = [ab_check(i, prompt, length, asked, sides, alpha_check, eos) for i, prompt in enumerate(prompts)]
        for check, rejected in zip(report.checks, holm([c.pvalue for c in report.checks], alpha)):
            check.passed = not rejected
        if entry is not None:
            entry.checks.extend(report.checks)
    _speculation_notes(report, before, [speculation_of(d) for d in (subject, reference)])
    report.seconds = time.perf_counter() - started
    return report


def _wanted(goal, tv, sides, num_prompts: int, drawn: int, alpha_check: float, max_n: int, first: int) -> int:
    """Samples per side and prompt the run needs now: a fixed goal, or H2's n for ``tv`` on the
    combined counts so far (a first round before any estimate)."""
    if goal is not None:
        return min(goal, max_n)
    if drawn == 0:
        return min(first, max_n)
    needed = 0
    for i in range(num_prompts):
        law = combined_law(*sides, i)
        unseen = unseen_mass(*sides, i)
        if two_sample_detectable_tv(law, drawn, drawn, alpha=alpha_check)[0] + unseen <= tv:
            needed = max(needed, drawn)
            continue
        planned = two_sample_sample_size(law, max(tv - unseen, tv / 2), alpha=alpha_check, max_n=max_n)
        needed = max(needed, min(max_n, max(planned, drawn + 1)))
    return needed


def _draw(decoder, role: str, side: Side, prompts, m: int, asked: int, length: int, eos, seed: int, guard: CallGuard) -> None:
    rows = [p for _ in range(m) for p in prompts]
    describe = lambda: f"a call of the {role} with {len(rows):,} rows ({m:,} per prompt x {len(prompts)}), max_new_tokens={asked}, seed={seed}"  # noqa: E731
    outputs = guard.call(decoder, (rows, asked, seed), describe)
    tested = guard.read(lambda: read_rows(outputs, len(rows), length, eos), describe)
    for i in range(len(prompts)):
        side.add(i, tested[i :: len(prompts)])


def _speculation_notes(report: Report, before, after) -> None:
    for role, was, now in zip(SIDES, before, after):
        spec = speculation_delta(was, now)
        if spec is None:
            continue
        if role == "subject":
            report.speculation = spec
        report.notes.append(speculation_note(f"speculation of the {role} during the check (its own counters)", spec))
