"""check_tokens: every emitted token of a black box against a reference's per-token law (docs/reference.md §10).

Where an engine can say what its own law is - token by token - every emitted token of every answer is one
observation of a known distribution, and the test needs far fewer answers than comparing whole
sequences (``check_ab``, whose cells grow as V^L and whose two samples double n).  The subject (any
:class:`specdec.protocols.Decoder`: our loop, a server, llama.cpp) answers; a
:class:`specdec.protocols.LawOracle` (specdec's exact laws, a transformers model, llama.cpp's logits with its
sampler chain, vLLM's server without speculation) states the law of each emitted token given its prefix.

The test (P1): each token's rank in its law, pooled into rank cells with expectations summed from the laws -
valid although the tokens of an answer depend on each other, because each token's law is known given its
prefix (a martingale argument, docs/reference.md §10); deviations within the oracle's floor pass (P2);
checks by position and by draft mark keep a local deviation from being averaged away, and a FAIL says
where it lives (P3); n is planned for ``tv`` from the pooled law as the answers come in, and a gross
deviation stops the check at its first look (P4).  What it cannot see: deviations that cancel across
prefixes - ``check_ab`` beside it is the omnibus check (docs/reference.md §10's worked example).
"""

from __future__ import annotations

from typing import Sequence

from .._validation import as_int
from ..laws.oracles import check_laws, oracle_terms
from ..protocols import LawOracle
from ..settings import RunSettings, resolve
from . import checkpoints
from .ab_check import _ab_inputs
from .calls import CallGuard, refuse_timing_only
from .decoder_output import SpeculationWatch
from .engine import run, subject_name
from .report import Report
from .streams.tokens import token_stream

DEFAULT_LENGTH = 16  # tokens per answer: each is one observation
DEFAULT_ROWS_PER_CALL = 256

__all__ = ["DEFAULT_LENGTH", "check_tokens"]


def check_tokens(subject, oracle, prompts: Sequence[Sequence[int]], *, length: int = DEFAULT_LENGTH, eos_token_id=None,
                 vocab_size: int | None = None, rows_per_call: int = DEFAULT_ROWS_PER_CALL, settings: RunSettings | None = None,
                 speculating: bool = True, **overrides) -> Report:
    """Per-token conformance report: does every token ``subject`` emits follow ``oracle``'s law of it?

    ``subject``: a :class:`specdec.protocols.Decoder`, asked for ``length`` tokens per answer (every one is
    tested; after an EOS of ``eos_token_id`` an answer ends).  ``oracle``: a
    :class:`specdec.protocols.LawOracle` for the same model and sampling settings.  ``prompts``: token-id
    lists, interleaved in every call; ``rows_per_call`` answers per call.  ``vocab_size``: when given, ids
    are checked against it.  ``settings`` (a :class:`specdec.RunSettings`) and any of its fields as
    keywords: answers per prompt planned for ``tv`` (the TV of the pooled per-token law, above the
    oracle's floor), fixed by ``n``, or fitted to ``time_budget``.  An oracle that raises or answers what
    its Protocol does not allow makes the report ERROR, naming its call.  ``speculating=False``: ``subject`` is
    the engine without speculation (a control): a subject that keeps speculation counters and verified no draft
    is then not INCONCLUSIVE about speculation (its counters become a note).
    """
    if not callable(subject):
        raise TypeError(f"subject must be callable (specdec.protocols.Decoder), got {type(subject).__name__}")
    refuse_timing_only(subject)
    if not isinstance(speculating, bool):
        raise TypeError(f"speculating must be a bool, got {speculating!r}")
    if not isinstance(oracle, LawOracle):
        raise TypeError(f"oracle must be a specdec.protocols.LawOracle (token_laws, floor, tolerance), got {type(oracle).__name__}")
    floor, tolerance, stated = oracle_terms(oracle)
    if vocab_size is not None:
        vocab_size = as_int("vocab_size", vocab_size, minimum=1)
        if stated is not None and vocab_size != stated:
            raise ValueError(f"vocab_size is {vocab_size}, the oracle's vocab_size {stated}: one of them is not this model's")
    vocab_size = vocab_size if vocab_size is not None else stated
    run_settings = resolve(settings, overrides)
    prompts, length, eos = _ab_inputs(prompts, length, eos_token_id, vocab_size)
    rows_per_call = as_int("rows_per_call", rows_per_call, minimum=1)
    per_call = max(1, rows_per_call // len(prompts))
    oracle_guard = CallGuard(run_settings.call_timeout, party="law oracle")
    stream = token_stream(subject, oracle, prompts, length=length, eos=eos, vocab=vocab_size, tv=run_settings.tv,
                          max_n=run_settings.max_n, per_call=per_call, guard=CallGuard(run_settings.call_timeout),
                          oracle_guard=oracle_guard, terms=(floor, tolerance))
    notes = [f"{len(prompts)} prompt(s) interleaved in every call; {length} tokens asked per answer, every one tested "
             "against the oracle's law of it given its prefix" + (f" (an answer ends at EOS {sorted(eos)})" if eos else ""),
             f"the oracle's floor: a TV of {floor:g} per token (rounding, which the check does not count: docs/reference.md §10, P2); "
             f"its laws sum to 1 within {tolerance:g}",
             f"oracle: {getattr(oracle, 'settings', type(oracle).__name__)}"]
    label = run_settings.name or f"{subject_name(subject)}, per token"

    def law() -> dict:  # the checkpoint's: what the tested law depends on, the oracle's first laws included
        call = lambda: f"token_laws of the first token of {len(prompts)} prompt(s) (the checkpoint's probe of the oracle)"  # noqa: E731
        first = oracle_guard.call(oracle.token_laws, (prompts, [[0]] * len(prompts)), call)
        oracle_guard.read(lambda: check_laws(first, [[0]] * len(prompts), tolerance, "the law oracle", vocab_size), call)
        return {"prompts": prompts, "length": length, "eos": sorted(eos), "vocab_size": vocab_size,
                "oracle": {**checkpoints.party(oracle), "floor": floor, "tolerance": tolerance},
                "subject_settings": checkpoints.party(subject)["settings"],
                checkpoints.PROBE: checkpoints.probe([answer[0] for answer in first], max(1e-9, 2 * floor, 10 * tolerance))}

    return run(label, "per-token (law oracle)", [stream], run_settings, device=_cpu(), notes=notes,
               watch=SpeculationWatch({"subject": subject}, single=True, speculating=speculating), law=law)


def _cpu():
    import torch

    return torch.device("cpu")
