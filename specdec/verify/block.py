"""Block verification (docs/reference.md §4, F16-F19; Sun et al., ICLR 2025, arXiv 2403.10444, Alg. 2), batched.

For drafts x_1..x_g ~ q with q_i = q(.|c, x_<i), p_i = p(.|c, x_<i), i <= g+1:

    (F16) b_0 = 1, b_i = min(1, b_{i-1} p_i(x_i)/q_i(x_i));  log b_i = S_i - max_{j<=i} S_j
    (F17) z_i = sum_v max(b_i p_{i+1}(v) - q_{i+1}(v), 0)                 i < g
    (F18) h_i = z_i / (z_i + 1 - b_i) (0/0 := 1) for i < g;  h_g = b_g
    (F19) tau = max{i : eta_i < h_i}; emit x_1..x_tau, then Y ~ p_{g+1} if tau = g,
          else Y ~ norm(max(b_tau p_{tau+1} - q_{tau+1}, 0)).

Lossless, and E[tau] >= E[tau_token] in expectation (not per draft).  Its exact law
and F20 are in :mod:`specdec.laws.block`.
"""

from __future__ import annotations

import torch

from ._chain import draft_row_at, emit_block, row_at, with_generator
from .result import VerifyResult


def block_step(draft_tokens, draft_probs, target_probs, uniforms, pad_id) -> VerifyResult:
    """The algorithm; uniforms (B, K+2): eta_0..eta_K for tau (F19), then one for the last token."""
    gamma = draft_tokens.shape[1]
    vocab = target_probs.shape[-1]
    dtype = target_probs.dtype
    if draft_probs is None:  # E5: point masses
        draft_probs = torch.nn.functional.one_hot(draft_tokens, vocab).to(dtype)
    x = draft_tokens.unsqueeze(-1)  # (B, g, 1)
    log_ratio = (
        target_probs[:, :gamma].gather(-1, x).squeeze(-1).double().log()
        - draft_probs.gather(-1, x).squeeze(-1).double().log()
    )  # (B, g); -inf where p(x) = 0
    partial = torch.nn.functional.pad(log_ratio.cumsum(-1), (1, 0))  # (B, g+1): S_0 = 0 .. S_g
    b = (partial - partial.cummax(-1).values).exp()  # (F16) (B, g+1), b_0 = 1
    b = torch.nan_to_num(b, nan=0.0)  # inf - inf only when q(x) = 0 (E1), reachable with validate=False

    # (F17) z_i for i < g over the whole (B, g, V) block, then (F18).
    excess = target_probs[:, :gamma] * b[:, :gamma, None].to(dtype)  # (B, g, V): one buffer, updated in place
    z = excess.sub_(draft_probs).clamp_min_(0).sum(-1).double()  # (B, g)
    denominator = z + 1 - b[:, :gamma]
    h = torch.where(denominator > 0, z / torch.where(denominator > 0, denominator, 1.0), 1.0)  # 0/0 := 1
    h = torch.cat([h, b[:, gamma:]], -1)  # (B, g+1), h_g = b_g

    # (F19) tau = max{i : eta_i < h_i}; h_0 = 1 so tau >= 0.
    hit = uniforms[:, : gamma + 1] < h
    positions = torch.arange(gamma + 1, device=draft_tokens.device)
    tau = torch.where(hit, positions, 0).amax(-1)  # (B,)

    # Residual max(b_tau p_{tau+1} - q_{tau+1}, 0), or p_{g+1} on the bonus row (b_g is unused there).
    target_row = row_at(target_probs, tau)  # p_{tau+1}, (B, V)
    scale = torch.where(tau < gamma, b.gather(1, tau.unsqueeze(-1)).squeeze(-1), 1.0).to(dtype)  # (B,)
    residual = (scale.unsqueeze(-1) * target_row - draft_row_at(draft_tokens, draft_probs, tau, target_row)).clamp_min(0)
    return emit_block(draft_tokens, tau, target_row, residual, uniforms[:, gamma + 1], pad_id)


def verify_block(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    pad_id: int = -1,
    validate: bool = True,
    sum_tol: float | None = None,
) -> VerifyResult:
    """Block verification (F16-F19); inputs and result exactly as :func:`specdec.verify_tokens`.

    Draws B*(K+2) uniforms: eta_0..eta_K for tau (F19) and one for the last token.
    """
    return with_generator(
        block_step, draft_tokens, draft_probs, target_probs, generator,
        extra_uniforms=2, pad_id=pad_id, validate=validate, sum_tol=sum_tol,
    )
