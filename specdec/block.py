"""Block verification (SPEC §4; Sun et al., ICLR 2025, arXiv 2403.10444, Alg. 2), batched.

For drafts x_1..x_g ~ q with q_i = q(.|c, x_<i), p_i = p(.|c, x_<i), i <= g+1:

    (F16) b_0 = 1, b_i = min(1, b_{i-1} p_i(x_i)/q_i(x_i));  log b_i = S_i - max_{j<=i} S_j,
          S_i = sum_{k<=i} log(p_k(x_k)/q_k(x_k)), S_0 = 0
    (F17) z_i = sum_v max(b_i p_{i+1}(v) - q_{i+1}(v), 0)                 i < g
    (F18) h_i = z_i / (z_i + 1 - b_i) (0/0 := 1) for i < g;  h_g = b_g
    (F19) tau = max{i : eta_i < h_i}, eta_i ~ U[0,1) i.i.d.; emit x_1..x_tau, then
          Y ~ p_{g+1} if tau = g, else Y ~ norm(max(b_tau p_{tau+1} - q_{tau+1}, 0)).

Lossless, and E[tau] >= E[tau_token] in expectation (not per draft).  The exact
law and E[tau] (F20) are computed in plain Python arithmetic, so ``Fraction``
inputs give exact rationals.
"""

from __future__ import annotations

import itertools

import torch

from .verify import VerifyResult, _draft_row_at, _emit_block, _row_at, run_with_generator


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
    return run_with_generator(
        _verify_block, draft_tokens, draft_probs, target_probs, generator, extra_uniforms=2, pad_id=pad_id, validate=validate, sum_tol=sum_tol
    )


def _verify_block(draft_tokens, draft_probs, target_probs, uniforms, pad_id) -> VerifyResult:
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
    target_row = _row_at(target_probs, tau)  # p_{tau+1}, (B, V)
    scale = torch.where(tau < gamma, b.gather(1, tau.unsqueeze(-1)).squeeze(-1), 1.0).to(dtype)  # (B,)
    residual = (scale.unsqueeze(-1) * target_row - _draft_row_at(draft_tokens, draft_probs, tau, target_row)).clamp_min(0)
    return _emit_block(draft_tokens, tau, target_row, residual, uniforms[:, gamma + 1], pad_id)


# ---------------------------------------------------------------------------
# Exact law (plain Python arithmetic: floats or Fractions)
# ---------------------------------------------------------------------------


def _block_h(target_rows, draft_rows, draft):
    """b_0..b_g and h_0..h_g of (F16, F18) for one draft; rows are lists of numbers."""
    gamma = len(draft)
    b = [1]
    for i, token in enumerate(draft):
        b.append(min(1, b[-1] * target_rows[i][token] / draft_rows[i][token]) if target_rows[i][token] else 0)
    h = []
    for i in range(gamma):
        z = sum(max(b[i] * pv - qv, 0) for pv, qv in zip(target_rows[i], draft_rows[i]))
        h.append(1 if z + 1 - b[i] == 0 else z / (z + 1 - b[i]))
    h.append(b[gamma])
    return b, h


def block_law(target_fn, draft_fn, num_draft: int, vocab: int) -> dict[tuple[int, ...], object]:
    """Exact law of the emitted block of block verification on a chain of tables (enumerates V^g drafts).

    ``target_fn(prefix)`` / ``draft_fn(prefix)`` return sequences of numbers (floats or Fractions).
    """
    law: dict[tuple[int, ...], object] = {}
    for draft in itertools.product(range(vocab), repeat=num_draft):
        target_rows = [list(target_fn(draft[:i])) for i in range(num_draft + 1)]
        draft_rows = [list(draft_fn(draft[:i])) for i in range(num_draft)]
        mass = 1
        for i, token in enumerate(draft):
            mass *= draft_rows[i][token]
        if mass == 0:
            continue
        b, h = _block_h(target_rows, draft_rows, draft)
        for tau in range(num_draft + 1):
            p_tau = h[tau]
            for j in range(tau + 1, num_draft + 1):
                p_tau *= 1 - h[j]
            if p_tau == 0:
                continue
            if tau == num_draft:
                weights = target_rows[tau]
            else:
                weights = [max(b[tau] * pv - qv, 0) for pv, qv in zip(target_rows[tau], draft_rows[tau])]
            total = sum(weights)
            for y, w in enumerate(weights):
                if w:
                    key = draft[:tau] + (y,)
                    law[key] = law.get(key, 0) + mass * p_tau * w / total
    return law


def expected_accepted_block(target_fn, draft_fn, num_draft: int, vocab: int):
    """(F20) E[tau_block] = sum_i sum_{x_1..i} min_{0<=j<=i} prod_{k<=j} q_k(x_k) prod_{j<k<=i} p_k(x_k)."""
    total = 0
    for i in range(1, num_draft + 1):
        for prefix in itertools.product(range(vocab), repeat=i):
            q = [draft_fn(prefix[:k])[prefix[k]] for k in range(i)]
            p = [target_fn(prefix[:k])[prefix[k]] for k in range(i)]
            terms = []
            for j in range(i + 1):
                term = 1
                for k in range(j):
                    term *= q[k]
                for k in range(j, i):
                    term *= p[k]
                terms.append(term)
            total += min(terms)
    return total


def joint_min_ideal(target_fn, draft_fn, num_draft: int, vocab: int):
    """sum_i sum_{x_<=i} min(Q(x_<=i), P(x_<=i)): the bound no verifier of one draft can beat."""
    total = 0
    for i in range(1, num_draft + 1):
        for prefix in itertools.product(range(vocab), repeat=i):
            q = p = 1
            for k in range(i):
                q *= draft_fn(prefix[:k])[prefix[k]]
                p *= target_fn(prefix[:k])[prefix[k]]
            total += min(q, p)
    return total
