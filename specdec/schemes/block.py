"""Block verification (F16-F19): accept the longest prefix tau drawn from the h_i, then one token from
norm((b_tau p - q)+).  Exact law and F20: :mod:`specdec.laws.block`."""

from __future__ import annotations

import torch

from ..laws.block import accepted_count_law, block_law, expected_accepted_block, joint_min_ideal
from ..verify import verify_block
from .record import Scheme


def _as_lists(fn):
    return lambda prefix: [float(x) for x in fn(prefix)]


def step_law(target_fn, draft_fn, num_draft_tokens: int) -> dict:
    """The exact law of the emitted block (F16-F19)."""
    vocab = len(list(target_fn(())))
    return block_law(_as_lists(target_fn), _as_lists(draft_fn), num_draft_tokens, vocab)


def moments(target_fn, draft_fn, num_draft_tokens: int) -> tuple[float, float]:
    """E[T] and Var[T] from the exact law of tau (F20)."""
    tau = accepted_count_law(step_law(target_fn, draft_fn, num_draft_tokens), num_draft_tokens)
    mean = sum((i + 1) * float(p) for i, p in enumerate(tau))
    return mean, sum((i + 1) ** 2 * float(p) for i, p in enumerate(tau)) - mean * mean


def compare(target: torch.Tensor, draft: torch.Tensor, max_drafts: int, num_draft_tokens: int) -> list[dict]:
    if not num_draft_tokens:
        return []
    same_t, same_d = (lambda prefix: target.tolist()), (lambda prefix: draft.tolist())
    vocab = target.shape[0]
    value = float(expected_accepted_block(same_t, same_d, num_draft_tokens, vocab))
    return [dict(scheme="block chain", size=num_draft_tokens, value=value, optimum=float(joint_min_ideal(same_t, same_d, num_draft_tokens, vocab)))]


SCHEME = Scheme(
    name="block",
    shape="chain",
    verifier=verify_block,
    summary="block verification (F16-F19)",
    step_law=step_law,
    moments=moments,
    cases=("token", "chain"),
    compare=compare,
)
