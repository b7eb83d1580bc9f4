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
  call are checked for copies (the independence diagnostic of :mod:`.streams.decoder_rows`).

Both sides are read by the decoder contract (docs/decoder.md): after a row's first EOS anything may
follow; the decoders are asked for ``max_new_tokens`` >= L so that full blocks are verified at the
tested positions.  One check per prompt, Holm across them, alpha from the run's error budget.
A subject that counts its speculation (:class:`specdec.protocols.SpeculationCounter`) and
verified no draft during the check is INCONCLUSIVE about speculation.  The check runs on the engine
(:mod:`.engine`) like every other: its stream is :func:`.streams.ab.ab_stream`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .._validation import as_int
from ..laws.sequence import eos_ids
from ..settings import AB_DEFAULTS, DEFAULT_AB_MAX_N, RunSettings, resolve
from . import checkpoints
from .calls import CallGuard, refuse_timing_only
from .decoder_output import SpeculationWatch, asked_tokens
from .engine import run, subject_name
from .report import Report
from .streams.ab import ab_stream

__all__ = ["DEFAULT_AB_MAX_N", "DEFAULT_ROWS_PER_CALL", "check_ab"]

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
    rows_per_call: int = DEFAULT_ROWS_PER_CALL,
    max_new_tokens: int | None = None,
    settings: RunSettings | None = None,
    **overrides,
) -> Report:
    """Two-sample conformance report: does ``subject`` emit the law ``reference`` emits?

    ``subject``, ``reference``: :class:`specdec.protocols.Decoder` s (``decoder(prompts,
    max_new_tokens, seed)``; e.g. an engine with and without speculation).  ``prompts``: token-id
    lists, interleaved in every call.  ``length``: tokens tested after each prompt.  ``rows_per_call``:
    rows per decoder call.  ``eos_token_id``: EOS is absorbing (E8): what follows a row's first EOS is
    ignored.  ``vocab_size``: when given, prompt ids are checked against it.  ``max_new_tokens``: as in
    :func:`check_decoder`.  ``settings`` (a :class:`specdec.RunSettings`, default
    :data:`specdec.settings.AB_DEFAULTS`: TV 0.05, at most 10^6 samples per side and prompt) and any of
    its fields as keywords: samples per side and prompt are planned for ``tv`` (H2, re-planned from the
    combined counts after every chunk), fixed by ``n``, or as many as ``time_budget`` seconds allow.
    The verdict: FAIL when some prompt's two laws differ (H1 at the report's alpha, Holm), located by
    H3; PASS when no pair of laws at TV >= the reached TV went unseen with probability above 0.01;
    INCONCLUSIVE, ERROR and INTERRUPTED as in every report (docs/reference.md §9).
    """
    for role, decoder in (("subject", subject), ("reference", reference)):
        if not callable(decoder):
            raise TypeError(f"{role} must be callable (specdec.protocols.Decoder), got {type(decoder).__name__}")
        refuse_timing_only(decoder, role)
    run_settings = resolve(settings, overrides, AB_DEFAULTS)
    prompts, length, eos = _ab_inputs(prompts, length, eos_token_id, vocab_size)
    rows_per_call = as_int("rows_per_call", rows_per_call, minimum=1)
    asked = asked_tokens(subject, length, max_new_tokens)
    per_call = max(1, rows_per_call // len(prompts))
    stream = ab_stream(subject, reference, prompts, length=length, asked=asked, eos=eos, tv=run_settings.tv,
                       max_n=run_settings.max_n, per_call=per_call, guard=CallGuard(run_settings.call_timeout),
                       vocab=vocab_size)
    notes = [f"{len(prompts)} prompt(s) interleaved in every call of either decoder; the decoders were asked for "
             f"{asked} new tokens per row and the first {length} are tested"
             + (f" (EOS {sorted(eos)} absorbing: what follows a row's first EOS is ignored)" if eos else ""),
             "the two sides draw with independent seeds; cells are the sequences either side produced"]
    label = run_settings.name or f"{subject_name(subject)} vs {subject_name(reference)}"
    fields = {"prompts": prompts, "length": length, "eos": sorted(eos), "max_new_tokens": asked, "vocab_size": vocab_size,
              "subject_settings": checkpoints.party(subject)["settings"], "reference": checkpoints.party(reference)}
    return run(label, "A/B (two samples)", [stream], run_settings, device=_cpu(), notes=notes,
               watch=SpeculationWatch({"subject": subject, "reference": reference}), law=lambda: fields)


def _cpu():
    import torch

    return torch.device("cpu")  # decoders return Python lists: counting happens on the host
