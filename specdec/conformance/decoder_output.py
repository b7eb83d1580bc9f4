"""What a decoder returns and what it counts, read in one place (docs/decoder.md).

Every check of a decoder (:func:`check_decoder`, :func:`check_ab`) and the benchmark's paired
rounds read a :class:`specdec.protocols.Decoder` through these functions:

* :func:`read_rows` / :func:`tested_tokens` - a call's answer by the contract: one list of new token
  ids per prompt row (ints, or a 1-D integer tensor or array), ``max_new_tokens`` of them (never more), in the
  target's vocabulary; **after the first EOS, anything** (padding, truncation, any token: ignored,
  E8).  A row of the wrong kind, an id outside the vocabulary or a row cut short with no EOS is a
  ContractError: the subject broke its Protocol, the report's verdict is ERROR naming the call (not a
  FAIL of its law);
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


def tested_tokens(output, length: int, eos: frozenset, *, asked: int | None = None, vocab: int | None = None) -> tuple[int, ...]:
    """The first ``length`` tokens of one output row, cut after its first EOS; a ContractError if the row
    is not a sequence of integer token ids, holds an id outside [0, ``vocab``), or is shorter than the
    ``asked`` tokens with no EOS in it (a Decoder stops early only at EOS)."""
    if hasattr(output, "tolist") and not isinstance(output, (list, tuple)):
        output = output.tolist()
    if isinstance(output, (str, bytes)) or not hasattr(output, "__len__"):
        raise ContractError(f"the decoder returned a row of type {type(output).__name__}; a Decoder returns lists of token ids")
    row = list(output)
    stop = next((i for i, token in enumerate(row[:asked]) if _is_id(token) and int(token) in eos), None)
    for position, token in enumerate(row[: len(row) if stop is None else stop + 1]):
        if not _is_id(token):
            raise ContractError(f"the decoder returned a token {token!r} of type {type(token).__name__}; token ids are integers")
        if token < 0 or (vocab is not None and token >= vocab):
            raise ContractError(f"the decoder returned token id {int(token)} at position {position}, outside the vocabulary "
                                f"[0, {vocab if vocab is not None else 'V'}); a Decoder returns token ids of the target's vocabulary")
    if asked is not None and len(row) > asked:
        raise ContractError(f"the decoder returned a row of {len(row)} tokens for max_new_tokens={asked}; a Decoder returns "
                            "at most max_new_tokens new tokens per row (the prompt echoed, or steps past the end?)")
    if asked is not None and stop is None and len(row) < asked:
        raise ContractError(f"the decoder returned a row of {len(row)} tokens for max_new_tokens={asked}, with no EOS "
                            f"({'EOS ' + str(sorted(eos)) if eos else 'no eos_token_id given to the check'}); a Decoder returns "
                            "max_new_tokens tokens per row unless it stops at EOS")
    cut = row[:length] if stop is None else row[: min(length, stop + 1)]
    return tuple(int(token) for token in cut)


def _is_id(token) -> bool:
    return not isinstance(token, bool) and isinstance(token, (int, np.integer))


def read_rows(outputs, rows: int, length: int, eos: frozenset, *, asked: int | None = None, vocab: int | None = None
              ) -> list[tuple[int, ...]]:
    """A decoder's answer to a call of ``rows`` rows, read by the contract: each row's tested tokens
    (:func:`tested_tokens`; ``asked`` tokens per row were asked, ids are in [0, ``vocab``))."""
    if not isinstance(outputs, (list, tuple)) or len(outputs) != rows:
        got = len(outputs) if isinstance(outputs, (list, tuple)) else type(outputs).__name__
        raise ContractError(
            f"the decoder returned {got} for {rows} prompts; a Decoder (specdec.protocols.Decoder) returns "
            "one list of new token ids per prompt"
        )
    return [tested_tokens(o, length, eos, asked=asked, vocab=vocab) for o in outputs]


def asked_tokens(decoder, length: int, max_new_tokens) -> int:
    """Tokens asked per row: ``max_new_tokens`` (>= ``length``), else ``length`` plus the decoder's
    ``num_draft_tokens`` when it states an int, else plus :data:`EXTRA_TOKENS`."""
    if max_new_tokens is not None:
        return as_int("max_new_tokens", max_new_tokens, minimum=length)
    stated = getattr(decoder, "num_draft_tokens", None)
    extra = stated if isinstance(stated, int) and not isinstance(stated, bool) and stated >= 0 else EXTRA_TOKENS
    return length + extra


def speculation_of(decoder) -> dict | None:
    """The decoder's cumulative speculation counters, or None when it does not count; a ContractError when
    ``speculation_counts()`` answers what its Protocol does not allow (not a mapping of non-negative integer
    counts with drafts, draft_tokens and accepted_tokens)."""
    if not isinstance(decoder, SpeculationCounter):
        return None
    return read_counters(decoder.speculation_counts(), "speculation_counts()")


def read_counters(counts, what: str) -> dict | None:
    """``counts`` (None, or a mapping of the COUNTERS and any ``accepted_at_<i>`` to integers >= 0) as a dict of ints."""
    if counts is None:
        return None
    if not hasattr(counts, "keys") or not all(key in counts for key in COUNTERS):
        raise ContractError(f"{what} returned {type(counts).__name__} {str(counts)[:80]}; a SpeculationCounter returns None "
                            f"or a mapping with {', '.join(COUNTERS)}")
    out = {}
    for key in [*COUNTERS, *(k for k in counts.keys() if isinstance(k, str) and k.startswith("accepted_at_"))]:
        value = counts[key]
        if not _is_id(value) or value < 0:
            raise ContractError(f"{what} returned {key}={value!r}; the counters are integers >= 0")
        out[key] = int(value)
    return out


def speculation_delta(before: dict | None, after: dict | None) -> dict | None:
    """The drafts, draft tokens and accepted tokens (and the per-position ``accepted_at_<i>`` a server counts)
    counted between two readings of a decoder's counters (:func:`speculation_of`); None when either reading is None."""
    if before is None or after is None:
        return None
    positions = [key for key in after if key.startswith("accepted_at_")]  # per-position counts, where the subject keeps them
    return {key: int(after.get(key, 0)) - int(before.get(key, 0)) for key in [*COUNTERS, *positions]}


def speculation_note(head: str, spec: dict) -> str:
    """One report note: ``head``, then the counts of :func:`speculation_delta` and the draft utilisation
    (accepted / drafted: counters alone do not give docs/reference.md §6's acceptance rate, which needs
    the steps that rejected)."""
    rate = f" (draft utilisation {spec['accepted_tokens'] / spec['draft_tokens']:.3f})" if spec["draft_tokens"] else ""
    return f"{head}: {spec['drafts']:,} drafts verified, {spec['draft_tokens']:,} draft tokens, {spec['accepted_tokens']:,} accepted{rate}"


class SpeculationWatch:
    """The counters of a check's decoders: :meth:`start` reads them before the check samples, :meth:`snapshot`
    after every chunk counted, :meth:`record` writes the differences into the report (the subject's as
    ``report.speculation``, every side as a note).  A counter that raises or breaks its Protocol is the
    decoder's ERROR (a :class:`~specdec.errors.SubjectError` naming the role and the call).  ``counted``:
    the differences as of the last chunk counted, what a checkpoint keeps (a chunk cut short is not in them);
    :meth:`resume` adds those of the run this one continues.  ``speculating=False``: the subject is an engine
    run without speculation (a cell's control): its counters are only a note, never ``report.speculation``, so a
    run that verified no draft is not INCONCLUSIVE about speculation for it."""

    def __init__(self, decoders: dict, *, single: bool = False, speculating: bool = True) -> None:
        self.decoders = decoders  # role -> decoder; the first role is the subject
        self.single = single  # one decoder: the notes say "the subject's own counters"
        self.speculating = speculating
        self.before: dict = {}
        self.prior: dict | None = None
        self.counted: dict | None = None

    def _read(self, role: str, when: str) -> dict | None:
        from .calls import CallGuard

        decoder = self.decoders[role]
        if not isinstance(decoder, SpeculationCounter):
            return None
        guard = CallGuard(None, party=role)
        describe = lambda: f"speculation_counts() {when}"  # noqa: E731
        counts = guard.call(decoder.speculation_counts, (), describe)
        return guard.read(lambda: read_counters(counts, "speculation_counts()"), describe)

    def start(self) -> None:
        self.before = {role: self._read(role, "before the check sampled") for role in self.decoders}
        self.counted = {role: None if spec is None else dict.fromkeys(COUNTERS, 0) for role, spec in self.before.items()}

    def resume(self, prior) -> None:
        """The counters a checkpoint kept (role -> counts or None); a ValueError unless they are counters."""
        if prior is not None and not isinstance(prior, dict):
            raise ValueError(f"resume: the checkpoint's speculation must be an object, got {type(prior).__name__}")
        try:
            self.prior = {role: read_counters(counts, f"resume: the checkpoint's speculation of the {role}")
                          for role, counts in (prior or {}).items()}
        except ContractError as error:
            raise ValueError(str(error)) from None
        self.counted = self.prior

    def snapshot(self) -> None:
        self.counted = self.deltas("after a chunk")

    def deltas(self, when: str = "at the end of the check") -> dict:
        """role -> the counts since the check started (prior included; None where the decoder does not count)."""
        out = {}
        for role in self.decoders:
            spec = speculation_delta(self.before.get(role), self._read(role, when))
            earlier = (self.prior or {}).get(role)
            if spec is not None and earlier:
                spec = {key: spec[key] + int(earlier.get(key, 0)) for key in COUNTERS}
            out[role] = spec if spec is not None else earlier
        return out

    def record(self, report) -> None:
        for index, (role, spec) in enumerate(self.deltas().items()):
            if spec is None:
                continue
            if index == 0 and self.speculating:
                report.speculation = spec
            head = "speculation during the check (the subject's own counters)" if self.single else \
                f"speculation of the {role} during the check (its own counters)"
            if index == 0 and not self.speculating:
                head += ", run without speculation (a control)"
            report.notes.append(speculation_note(head, spec))
