"""Exact law of the first L tokens a lossless decoder emits (docs/reference.md §7, F35; docs/reference.md).

A lossless speculative decoder emits, after ``prompt``, the first L tokens with
the law of sampling the target autoregressively under the same warpers (E6), EOS
absorbing (E8: a sequence that emits EOS before L tokens stops there).
:func:`sequence_law` enumerates that law level by level from any
:class:`specdec.protocols.TargetLaw`: every live prefix of length l is scored in
one batched call, probabilities in float64 (E7), zero-probability prefixes
pruned.  Cost: at most V^(L-1) contexts in the last call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import as_int
from .target import as_target_law, as_token_ids

MAX_SEQUENCES = 1_000_000


@dataclass(frozen=True)
class SequenceLaw:
    """Outcomes (token tuples, length L or ending in EOS) and their float64 probabilities, summing to 1."""

    sequences: tuple[tuple[int, ...], ...]
    probs: np.ndarray

    def index(self, outputs) -> np.ndarray:
        """Outcome ids of emitted token lists; -1 for an outcome outside the support."""
        lookup = {seq: i for i, seq in enumerate(self.sequences)}
        return np.array([lookup.get(tuple(out), -1) for out in outputs], dtype=np.int64)

    def conditional(self, prefix: tuple[int, ...], vocab_size: int) -> list[float]:
        """p(x | prefix) from the marginals of the prefixes (0 where the prefix has no mass)."""
        total = self._prefix_mass().get(prefix, 0.0)
        mass = self._prefix_mass()
        return [mass.get(prefix + (x,), 0.0) / total if total > 0 else 0.0 for x in range(vocab_size)]

    def _prefix_mass(self) -> dict[tuple[int, ...], float]:
        cached = self.__dict__.get("_mass")
        if cached is None:
            cached = {}
            for sequence, p in zip(self.sequences, self.probs):
                for t in range(len(sequence) + 1):
                    cached[sequence[:t]] = cached.get(sequence[:t], 0.0) + float(p)
            object.__setattr__(self, "_mass", cached)
        return cached


def sequence_law(target, prompt, length: int, *, sampling=None, eos_token_id=None) -> SequenceLaw:
    """Exact law of the first ``length`` tokens sampled from ``target`` after ``prompt``.

    ``target``: a :class:`specdec.protocols.TargetLaw`, or a transformers causal LM
    warped with ``sampling`` (default: no warper).
    """
    law = as_target_law(target, sampling)
    length = as_int("length", length, minimum=1)
    prompt = as_token_ids("prompt", prompt, law.vocab_size)  # the rule generate applies to each prompt
    eos = eos_ids(eos_token_id, law.vocab_size)
    live = [((), 1.0)]  # prefixes still running, with their probabilities
    done: dict[tuple[int, ...], float] = {}
    for level in range(length):
        rows = law.next_token_probs([prompt + seq for seq, _ in live])
        grown = []
        for (seq, mass), row in zip(live, rows):
            for token in np.flatnonzero(row > 0):
                grown.append((seq + (int(token),), mass * float(row[token])))
        if len(grown) > MAX_SEQUENCES:
            raise ValueError(f"more than {MAX_SEQUENCES:,} sequences at length {level + 1}; use a smaller vocabulary or length")
        live = []
        for seq, mass in grown:
            if seq[-1] in eos or level + 1 == length:
                done[seq] = mass
            else:
                live.append((seq, mass))
    sequences = tuple(sorted(done))
    return SequenceLaw(sequences, np.array([done[s] for s in sequences], dtype=np.float64))


def eos_ids(eos_token_id, vocab_size: int) -> frozenset[int]:
    """``eos_token_id`` (None, an id, or ids) as a set of ids in [0, V)."""
    if eos_token_id is None:
        return frozenset()
    if isinstance(eos_token_id, (list, tuple, set, frozenset)):
        ids = list(eos_token_id)
    else:
        ids = [eos_token_id]
    return frozenset(as_int("eos_token_id", t, minimum=0, maximum=vocab_size - 1) for t in ids)
