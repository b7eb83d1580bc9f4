"""Exact law of the first L tokens a decoder emits, by enumeration with the target model.

A lossless speculative decoder emits, after ``prompt``, the first L tokens with
the law of sampling the target autoregressively under the same warpers (E6),
EOS absorbing (E8: a sequence that emits EOS before L tokens stops there).
:func:`sequence_law` enumerates that law level by level: every live prefix of
length l is scored in one batched forward pass (no KV cache, so nothing the
decoder under test relies on is shared with the reference), probabilities are
taken in float64 from the warped logits (E7), and zero-probability prefixes
are pruned.  Cost: at most V^(L-1) sequences in the last pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .drafts import check_logits, model_device
from .warpers import SamplingConfig, warped_probs

MAX_SEQUENCES = 1_000_000


@dataclass(frozen=True)
class SequenceLaw:
    """Outcomes (token tuples, length L or ending in EOS) and their float64 probabilities, summing to 1."""

    sequences: tuple[tuple[int, ...], ...]
    probs: np.ndarray

    def index(self, outputs) -> np.ndarray:
        """Map emitted token lists to outcome ids; raise on an outcome outside the support."""
        lookup = {seq: i for i, seq in enumerate(self.sequences)}
        ids = np.empty(len(outputs), dtype=np.int64)
        for n, out in enumerate(outputs):
            key = tuple(out)
            if key not in lookup:
                raise AssertionError(f"emitted sequence {key} has probability 0 under the target (outside the support)")
            ids[n] = lookup[key]
        return ids


@torch.no_grad()
def sequence_law(
    target,
    prompt: list[int],
    length: int,
    *,
    sampling: SamplingConfig = SamplingConfig(),
    eos_token_id: int | list[int] | None = None,
    batch_size: int = 4096,
) -> SequenceLaw:
    """Exact law of the first ``length`` tokens sampled from ``target`` after ``prompt``."""
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    if not prompt:
        raise ValueError("prompt must hold at least one token")
    eos = set() if eos_token_id is None else ({eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id))
    device = model_device(target)
    live = [((), 1.0)]  # prefixes still running, with their probabilities
    done: dict[tuple[int, ...], float] = {}
    for level in range(length):
        grown = []
        for start in range(0, len(live), batch_size):
            part = live[start:start + batch_size]
            ids = torch.tensor([list(prompt) + list(seq) for seq, _ in part], dtype=torch.long, device=device)
            logits = check_logits(target(input_ids=ids).logits[:, -1], "target")
            probs = warped_probs(logits.double(), sampling, dtype=torch.float64).cpu().numpy()
            for (seq, mass), row in zip(part, probs):
                for token in np.flatnonzero(row > 0):
                    grown.append((seq + (int(token),), mass * float(row[token])))
        if len(grown) > MAX_SEQUENCES:
            raise ValueError(f"more than {MAX_SEQUENCES} sequences at length {level + 1}; use a smaller vocabulary or length")
        live = []
        for seq, mass in grown:
            if seq[-1] in eos or level + 1 == length:
                done[seq] = mass
            else:
                live.append((seq, mass))
    sequences = tuple(sorted(done))
    return SequenceLaw(sequences, np.array([done[s] for s in sequences], dtype=np.float64))
