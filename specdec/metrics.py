"""Measured acceptance and tokens per step, from per-step counts (docs/reference.md §6).

One name, one definition:

* **acceptance rate** = accepted / verified draft tokens, pooled over steps and rows.
  A verified token is one the target judged: every accepted draft plus the rejected
  one; drafts after a rejection are discarded and not counted.  With i.i.d.
  acceptance alpha this is the maximum-likelihood estimate of alpha.
* **draft utilisation** = accepted / drafted: the share of drafted tokens kept
  (discarded drafts count against it).  Always <= the acceptance rate.
* **mean tokens per step** = mean emitted tokens per verification step and row
  (accepted + 1, unless EOS or max_new_tokens cut the block).
* **acceptance at position i** = the share of steps that drafted at least i tokens whose i-th draft was kept
  (accepted >= i): what vLLM's and llama.cpp's per-position counters count, over the steps that drafted that
  far.  F22's i.i.d. model predicts alpha^i (:func:`specdec.laws.speedup.positional_acceptance`).

The predicted counterparts are :mod:`specdec.laws.speedup` (F22-F25) and
:mod:`specdec.laws.chain` (F26-F27).

Counts are int64 per entry (beyond it they are refused) and totalled exactly, in Python ints
(:func:`specdec._validation.count_total`): a total past 2**63 does not wrap, and every ratio is the
correctly rounded quotient of the exact totals.
"""

from __future__ import annotations

import numpy as np

from ._validation import as_counts, count_total


def _accepted_and_drafted(num_accepted, num_draft_tokens) -> tuple[np.ndarray, np.ndarray]:
    accepted = as_counts("num_accepted", num_accepted)
    drafted = as_counts("num_draft_tokens", num_draft_tokens)
    if drafted.size not in (1, accepted.size):
        raise ValueError(f"num_draft_tokens must be one K or one per step ({accepted.size}), got {drafted.size} values")
    drafted = np.broadcast_to(drafted, accepted.shape)
    if np.any(accepted > drafted):
        raise ValueError("num_accepted exceeds num_draft_tokens in some step")
    return accepted, drafted


def acceptance_rate(num_accepted, num_draft_tokens) -> float:
    """Pooled acceptance rate: sum(accepted) / sum(verified), verified = accepted + [accepted < K].

    num_accepted: accepted counts per step (any shape); num_draft_tokens: K, one int or one per step.
    Raises ValueError when no draft token was verified (every step had K = 0).
    """
    accepted, drafted = _accepted_and_drafted(num_accepted, num_draft_tokens)
    verified = count_total(accepted) + int(np.count_nonzero(accepted < drafted))  # accepted <= drafted: no overflow
    if verified == 0:
        raise ValueError(
            f"the acceptance rate is undefined for num_accepted={accepted.tolist()[:8]} and num_draft_tokens="
            f"{drafted.tolist()[:8]}: no draft token was verified (every step had K = 0, or there was no step)"
        )
    return count_total(accepted) / verified  # int / int: the correctly rounded float


def draft_utilisation(num_accepted, num_draft_tokens) -> float:
    """accepted / drafted, pooled: the share of drafted tokens that were kept."""
    accepted, drafted = _accepted_and_drafted(num_accepted, num_draft_tokens)
    total = count_total(np.ascontiguousarray(drafted))
    if total == 0:
        raise ValueError(f"the draft utilisation is undefined for num_draft_tokens={drafted.tolist()[:8]}: nothing was drafted")
    return count_total(accepted) / total


def mean_tokens_per_step(num_emitted) -> float:
    """Mean emitted tokens per verification step (accepted + 1 unless EOS cut the block)."""
    emitted = as_counts("num_emitted", num_emitted)
    if emitted.size == 0:
        raise ValueError("num_emitted is empty")
    return count_total(emitted) / emitted.size


def acceptance_by_position(num_accepted, num_draft_tokens) -> list[float | None]:
    """Per draft position i = 1..max K: (steps with accepted >= i) / (steps that drafted >= i tokens);
    None where no step drafted that far (the module docstring's acceptance at position i)."""
    accepted, drafted = _accepted_and_drafted(num_accepted, num_draft_tokens)
    top = int(drafted.max()) if drafted.size else 0
    out: list[float | None] = []
    for position in range(1, top + 1):
        reached = drafted >= position
        steps = int(np.count_nonzero(reached))
        out.append(int(np.count_nonzero(accepted[reached] >= position)) / steps if steps else None)
    return out
