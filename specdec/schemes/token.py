"""The token rule (F2-F4): accept x_i with probability min(1, p_i(x_i)/q_i(x_i)), then one token from
the residual (F3) or the bonus row.  Exact law: :func:`specdec.laws.emitted_block_law`; tokens per
step: F26-F27; fused twin: :mod:`specdec.verify.fused`."""

from __future__ import annotations

import torch

from ..laws.block import joint_min_ideal
from ..laws.chain import acceptance_profile, emitted_block_law, tokens_per_step_moments
from ..laws.transport import multidraft_optimum
from ..verify import verify_tokens, verify_tokens_with_uniforms
from .record import Scheme


def moments(target_fn, draft_fn, num_draft_tokens: int) -> tuple[float, float]:
    """(F26-F27) E[T] and Var[T] of the tokens one step emits."""
    mean, _, var = tokens_per_step_moments(acceptance_profile(target_fn, draft_fn, num_draft_tokens))
    return mean, var


def compare(target: torch.Tensor, draft: torch.Tensor, max_drafts: int, num_draft_tokens: int) -> list[dict]:
    rows = [dict(scheme="token", size=1, value=float(torch.minimum(target, draft).sum()), optimum=multidraft_optimum(target, draft, 1))]
    if num_draft_tokens:
        same_t, same_d = (lambda prefix: target.tolist()), (lambda prefix: draft.tolist())
        value = float(acceptance_profile(same_t, same_d, num_draft_tokens)[1:].sum())
        ideal = float(joint_min_ideal(same_t, same_d, num_draft_tokens, target.shape[0]))
        rows.append(dict(scheme="token chain", size=num_draft_tokens, value=value, optimum=ideal))
    return rows


SCHEME = Scheme(
    name="token",
    shape="chain",
    verifier=verify_tokens,
    summary="token-level rejection sampling (F2-F4)",
    with_uniforms=verify_tokens_with_uniforms,
    fused="specdec.verify.fused:verify_tokens_fused",
    step_law=emitted_block_law,
    moments=moments,
    cases=("token", "chain"),
    compare=compare,
)
