"""What a decoder returns and what it counts, read in one place (docs/decoder.md).

Every check of a decoder (:func:`check_decoder`, :func:`check_ab`) and the benchmark's paired
rounds read a :class:`specdec.protocols.Decoder` through these functions:

* :func:`read_rows` / :func:`tested_tokens` - a call's answer by the contract: one list of new token
  ids per prompt row (ints, or a 1-D integer tensor or array); **after the first EOS, anything**
  (padding, truncation, any token: ignored, E8); a row of the wrong kind is a ContractError;
* :func:`asked_tokens` - how many tokens a check asks for (>= the tested L: a decoder that shrinks
  its drafts near the end then verifies full blocks at the tested positions);
* :func:`speculation_of` / :func:`speculation_delta` / :func:`speculation_note` - the counters of a
  :class:`specdec.protocols.SpeculationCounter` (drafts, draft tokens, accepted tokens), read before
  and after a check, and the report's note on them.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_int
from ..errors import ContractError
from ..protocols import SpeculationCounter

EXTRA_TOKENS = 4  # tokens asked beyond those tested when the decoder does not state its K
COUNTERS = ("drafts", "draft_tokens", "accepted_tokens")


def tested_tokens(output, length: int, eos: frozenset) -> tuple[int, ...]:
    """The first ``length`` tokens of one output row, cut after its first EOS; a ContractError if
    the row is not a sequence of integer token ids."""
    if hasattr(output, "tolist") and not isinstance(output, (list, tuple)):
        output = output.tolist()
    if isinstance(output, (str, bytes)) or not hasattr(output, "__len__"):
        raise ContractError(f"the decoder returned a row of type {type(output).__name__}; a Decoder returns lists of token ids")
    tokens = []
    for token in list(output)[:length]:
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)):
            raise ContractError(f"the decoder returned a token {token!r} of type {type(token).__name__}; token ids are integers")
        tokens.append(int(token))
        if tokens[-1] in eos:
            break
    return tuple(tokens)


def read_rows(outputs, rows: int, length: int, eos: frozenset) -> list[tuple[int, ...]]:
    """A decoder's answer to a call of ``rows`` rows, read by the contract: each row's tested tokens."""
    if not isinstance(outputs, (list, tuple)) or len(outputs) != rows:
        got = len(outputs) if isinstance(outputs, (list, tuple)) else type(outputs).__name__
        raise ContractError(
            f"the decoder returned {got} for {rows} prompts; a Decoder (specdec.protocols.Decoder) returns "
            "one list of new token ids per prompt"
        )
    return [tested_tokens(o, length, eos) for o in outputs]


def asked_tokens(decoder, length: int, max_new_tokens) -> int:
    """Tokens asked per row: ``max_new_tokens`` (>= ``length``), else ``length`` plus the decoder's
    ``num_draft_tokens`` when it states an int, else plus :data:`EXTRA_TOKENS`."""
    if max_new_tokens is not None:
        return as_int("max_new_tokens", max_new_tokens, minimum=length)
    stated = getattr(decoder, "num_draft_tokens", None)
    extra = stated if isinstance(stated, int) and not isinstance(stated, bool) and stated >= 0 else EXTRA_TOKENS
    return length + extra


def speculation_of(decoder) -> dict | None:
    """The decoder's cumulative speculation counters, or None when it does not count."""
    if not isinstance(decoder, SpeculationCounter):
        return None
    counts = decoder.speculation_counts()
    return None if counts is None else dict(counts)


def speculation_delta(before: dict | None, after: dict | None) -> dict | None:
    """The drafts, draft tokens and accepted tokens counted between two readings of a decoder's
    counters (:func:`speculation_of`); None when either reading is None."""
    if before is None or after is None:
        return None
    return {key: int(after.get(key, 0)) - int(before.get(key, 0)) for key in COUNTERS}


def speculation_note(head: str, spec: dict) -> str:
    """One report note: ``head``, then the counts of :func:`speculation_delta` and the draft utilisation
    (accepted / drafted: counters alone do not give docs/reference.md §6's acceptance rate, which needs
    the steps that rejected)."""
    rate = f" (draft utilisation {spec['accepted_tokens'] / spec['draft_tokens']:.3f})" if spec["draft_tokens"] else ""
    return f"{head}: {spec['drafts']:,} drafts verified, {spec['draft_tokens']:,} draft tokens, {spec['accepted_tokens']:,} accepted{rate}"


class SpeculationWatch:
    """Reads the counters of a check's decoders before it samples; :meth:`record` writes the
    differences into the report (the subject's as ``report.speculation``, every side as a note)."""

    def __init__(self, decoders: dict) -> None:
        self.decoders = decoders  # role -> decoder; the first role is the subject
        self.before = {role: speculation_of(d) for role, d in decoders.items()}

    def record(self, report, *, single: bool = False) -> None:
        for index, (role, decoder) in enumerate(self.decoders.items()):
            spec = speculation_delta(self.before[role], speculation_of(decoder))
            if spec is None:
                continue
            if index == 0:
                report.speculation = spec
            head = "speculation during the check (the subject's own counters)" if single else \
                f"speculation of the {role} during the check (its own counters)"
            report.notes.append(speculation_note(head, spec))
