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
misbehaves is reported: :mod:`.decoder_output` and :mod:`.calls` (docs/decoder.md); F28: :mod:`.acceptance_z`.
"""

from __future__ import annotations

from typing import Sequence

from .._validation import as_int
from ..laws.sequence import eos_ids, sequence_law
from ..laws.target import as_target_law, check_contexts
from ..settings import RunSettings, resolve
from . import checkpoints
from .acceptance_z import acceptance_z_check, f28_applies
from .calls import CallGuard, refuse_timing_only
from .decoder_output import SpeculationWatch, asked_tokens
from .engine import run, subject_name
from .report import Report
from .streams.decoder_rows import decoder_stream

__all__ = ["check_decoder"]


def check_decoder(decoder, target, prompts: Sequence[Sequence[int]], *, length: int = 2, sampling=None, eos_token_id=None,
                  acceptance_rows: int = 256, max_new_tokens: int | None = None, settings: RunSettings | None = None,
                  **overrides) -> Report:
    """Conformance report of a :class:`specdec.protocols.Decoder` against a target law.

    ``target``: a :class:`specdec.protocols.TargetLaw`, or a transformers causal LM
    warped with ``sampling``.  ``prompts``: token-id lists; they are interleaved in every
    decoder call.  ``length``: tokens tested after each prompt (cells grow as V^length).
    ``max_new_tokens``: tokens asked of the decoder per row (>= ``length``; default ``length``
    plus the decoder's ``num_draft_tokens`` when it states an int, else plus 4), so that a decoder
    that shrinks its drafts near the end verifies full blocks at the tested positions.
    ``eos_token_id``: EOS is absorbing (E8); after a row's first EOS anything may follow
    (padding, truncation, any token): it is ignored.  ``acceptance_rows``: rows of F28's replay call.
    ``settings`` (a :class:`specdec.RunSettings`) and any of its fields as keywords, as in
    :func:`check_verifier`: n per prompt planned for ``tv``, fixed by ``n``, or fitted to
    ``time_budget`` seconds; ``call_timeout``: seconds one call of the decoder may take (None: no
    limit); a decoder that raises, hangs or breaks its Protocol gets the verdict ERROR.
    """
    if not callable(decoder):
        raise TypeError(f"decoder must be callable (specdec.protocols.Decoder), got {type(decoder).__name__}")
    refuse_timing_only(decoder, "decoder")
    run_settings = resolve(settings, overrides)
    law = as_target_law(target, sampling)
    length = as_int("length", length, minimum=1)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not prompts:
        raise ValueError("prompts must be a non-empty list of token-id lists")
    prompts = [list(p) for p in check_contexts(prompts, law.vocab_size)]
    eos = eos_ids(eos_token_id, law.vocab_size)
    asked = asked_tokens(decoder, length, max_new_tokens)
    guard = CallGuard(run_settings.call_timeout)
    laws = [sequence_law(law, p, length, eos_token_id=sorted(eos) or None) for p in prompts]
    streams = [decoder_stream(decoder, prompts, laws, length, law.vocab_size, eos, max_new_tokens=asked, guard=guard)]
    notes = [f"{len(prompts)} prompt(s) interleaved in every decoder call; cells per prompt: "
             + ", ".join(str(len(x.sequences)) for x in laws),
             f"the decoder was asked for {asked} new tokens per row; the first {length} are tested"
             + (f" (EOS {sorted(eos)} absorbing: what follows a row's first EOS is ignored)" if eos else "")]
    why_not = f28_applies(decoder)
    extras = []
    if why_not is None:
        extras.append(acceptance_z_check(decoder, law, prompts, length=asked, seed=run_settings.seed + 1,
                                         rows=as_int("acceptance_rows", acceptance_rows, minimum=1), guard=guard))
    else:
        notes.append(f"F28 (tokens per step vs exact expectation) not applied: {why_not}")
    described = getattr(decoder, "settings", None)
    if isinstance(described, str):
        notes.append(f"subject: {described}")
    fields = {"prompts": prompts, "length": length, "eos": sorted(eos), "max_new_tokens": asked,
              "subject_settings": checkpoints.party(decoder)["settings"]}  # the target enters the exact laws' digest
    return run(run_settings.name or subject_name(decoder), "decoder", streams, run_settings, device=_cpu(), notes=notes,
               extras=extras, watch=SpeculationWatch({"subject": decoder}, single=True), law=lambda: fields)


def _cpu():
    import torch

    return torch.device("cpu")  # decoders return Python lists: counting happens on the host
