"""The token verifier (F2-F4) fused into one Triton kernel: one program per batch row, no host sync.

Same inputs, randomness and result as :func:`specdec.verify_tokens` - which stays the definition:
on the same uniforms the kernel emits the reference's tokens (a property test checks it), except
where a uniform falls within float64 rounding of a CDF step (measure ~1e-16).

Per row b, one program:

1. (F2) walks the K drafts: accept x_i iff u_i q_i(x_i) < p_i(x_i) in float64 (strict, E3);
   n = the number of leading accepts;
2. (F3) pass one over row n: the residual mass sum_v max(p_n(v) - q_n(v), 0), accumulated in float64
   (q_n is zero on the bonus row n = K, the point mass on x_n for E5); an empty residual (E2)
   falls back to p_n and is flagged;
3. (F4) pass two: the first id whose float64 CDF exceeds u_K times that mass (an id of positive
   weight, < V: B6), then x_1..x_n, that id, padding.

It reads about 3V entries per row (plus one per draft), never the whole (B, K+1, V) block: below
the one-copy memory floor.  CUDA tensors run the compiled kernel; with TRITON_INTERPRET=1 set
before Triton is imported, CPU tensors run the same kernel in Triton's interpreter (slow; the test
suite does this when there is no GPU).  Without Triton, :func:`available` is False and the
decoding loop keeps the reference.
"""

import torch

try:  # Triton ships with CUDA builds of torch; on CPU it is optional (``pip install triton``)
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = tl = None

from .. import _validation as c
from ..laws.token import empty_residual_mass
from ._chain import check_inputs
from .result import VerifyResult

BLOCK = 8192  # vocabulary entries per step of the passes (fewer for small vocabularies; tuned on an H100)
NUM_WARPS = 16  # per row: one program of 512 threads


def available(device) -> bool:
    """Whether the fused kernel can run on ``device``: CUDA (compiled), or any device under Triton's interpreter."""
    return tl is not None and (torch.device(device).type == "cuda" or interpreting())


if tl is not None:  # the kernel exists only where Triton does

    @triton.jit
    def _token_kernel(
        tokens_ptr, draft_ptr, target_ptr, u_ptr, out_ptr, accepted_ptr, empty_ptr,
        K, V, pad_id,
        s_xb, s_xk, s_db, s_dk, s_dv, s_tb, s_tk, s_tv, s_ub, s_uk,
        HAS_DRAFT: tl.constexpr, EMPTY_MASS: tl.constexpr, BLOCK: tl.constexpr,
    ):
        b = tl.program_id(0).to(tl.int64)
        # (F2) leading accepts, in float64.
        n = tl.zeros((), dtype=tl.int32)
        live = tl.full((), 1, dtype=tl.int32)
        i = 0
        while i < K:  # while, not range: Triton's interpreter cannot index a range by a runtime int
            x = tl.load(tokens_ptr + b * s_xb + i * s_xk).to(tl.int64)
            p_x = tl.load(target_ptr + b * s_tb + i * s_tk + x * s_tv).to(tl.float64)
            if HAS_DRAFT:
                q_x = tl.load(draft_ptr + b * s_db + i * s_dk + x * s_dv).to(tl.float64)
            else:
                q_x = tl.full((), 1.0, dtype=tl.float64)
            u = tl.load(u_ptr + b * s_ub + i * s_uk)
            live = live * (u * q_x < p_x).to(tl.int32)
            n += live
            i += 1
        # (F3) pass one: the residual mass of row n; q is zero on the bonus row (n = K).
        has_q = n < K
        x_n = tl.load(tokens_ptr + b * s_xb + tl.maximum(tl.minimum(n, K - 1), 0) * s_xk, mask=K > 0, other=0).to(tl.int64)
        row_p = target_ptr + b * s_tb + n.to(tl.int64) * s_tk
        row_q = draft_ptr + b * s_db + tl.maximum(tl.minimum(n, K - 1), 0).to(tl.int64) * s_dk
        total = tl.zeros((), dtype=tl.float64)
        start = 0
        while start < V:
            offs = start + tl.arange(0, BLOCK)
            inside = offs < V
            p = tl.load(row_p + offs * s_tv, mask=inside, other=0.0)
            if HAS_DRAFT:
                q = tl.load(row_q + offs * s_dv, mask=inside & has_q, other=0.0)
            else:
                q = tl.where((offs == x_n) & has_q, 1.0, 0.0).to(p.dtype)
            total += tl.sum(tl.maximum(p - q, 0.0).to(tl.float64), axis=0)
            start += BLOCK
        empty = total <= EMPTY_MASS  # E2 (the reference's rule): sample from p_n instead (rare), and flag the row
        if empty:
            total = tl.zeros((), dtype=tl.float64)
            start = 0
            while start < V:
                offs = start + tl.arange(0, BLOCK)
                total += tl.sum(tl.load(row_p + offs * s_tv, mask=offs < V, other=0.0).to(tl.float64), axis=0)
                start += BLOCK
        # (F4) pass two, stopped once the id is found: block sums locate the block whose CDF crosses
        # the threshold, a float64 scan inside it the id; if rounding puts the threshold at the total,
        # the last id of positive weight (the reference clamps the threshold below the total).
        use_q = has_q & (~empty)
        threshold = tl.load(u_ptr + b * s_ub + K * s_uk) * total
        running = tl.zeros((), dtype=tl.float64)
        found = tl.full((), V, dtype=tl.int32)
        last_w = tl.full((), -1, dtype=tl.int32)
        start = 0
        while (start < V) & (found == V):
            offs = start + tl.arange(0, BLOCK)
            inside = offs < V
            p = tl.load(row_p + offs * s_tv, mask=inside, other=0.0)
            if HAS_DRAFT:
                q = tl.load(row_q + offs * s_dv, mask=inside & use_q, other=0.0)
            else:
                q = tl.where((offs == x_n) & use_q, 1.0, 0.0).to(p.dtype)
            w = tl.maximum(p - q, 0.0).to(tl.float64)
            mass = tl.sum(w, axis=0)
            if running + mass > threshold:
                cdf = tl.cumsum(w, axis=0) + running
                found = tl.min(tl.where(inside & (cdf > threshold), offs, V), axis=0)
            last_w = tl.maximum(last_w, tl.max(tl.where(inside & (w > 0), offs, -1), axis=0))
            running += mass
            start += BLOCK
        token = tl.where(found < V, found, last_w).to(tl.int64)
        _write_row(tokens_ptr, out_ptr, accepted_ptr, empty_ptr, b, n, token, empty, K, pad_id, s_xb, s_xk)

    @triton.jit
    def _write_row(tokens_ptr, out_ptr, accepted_ptr, empty_ptr, b, n, token, empty, K, pad_id, s_xb, s_xk):
        """Row b's outcome: x_1..x_n, the token at position n, padding after; n; the E2 flag."""
        j = 0
        while j <= K:
            x = tl.load(tokens_ptr + b * s_xb + tl.minimum(j, tl.maximum(K - 1, 0)) * s_xk, mask=(j < K), other=0).to(tl.int64)
            value = tl.where(j < n, x, tl.where(j == n, token, pad_id))
            tl.store(out_ptr + b * (K + 1) + j, value.to(tl.int64))
            j += 1
        tl.store(accepted_ptr + b, n.to(tl.int64))
        tl.store(empty_ptr + b, empty)


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1 when Triton was imported)."""
    from triton import knobs

    return bool(knobs.runtime.interpret)


def fused_step(draft_tokens, draft_probs, target_probs, uniforms, pad_id) -> VerifyResult:
    """The kernel on checked inputs (the counterpart of :func:`specdec.verify.token.token_step`)."""
    batch, k = draft_tokens.shape
    vocab = target_probs.shape[-1]
    device = target_probs.device
    tokens = torch.empty((batch, k + 1), dtype=torch.int64, device=device)  # three buffers: cheaper than views of one
    accepted = torch.empty((batch,), dtype=torch.int64, device=device)
    empty = torch.empty((batch,), dtype=torch.bool, device=device)
    if batch == 0:
        return VerifyResult(accepted, tokens, empty)
    draft = draft_probs if draft_probs is not None else target_probs  # a valid pointer; unused without a draft
    if tl is None:
        raise RuntimeError("the fused verifier needs triton (it ships with CUDA builds of torch; pip install triton on CPU)")
    if device.type != "cuda" and not interpreting():
        raise ValueError(
            f"the fused verifier runs CUDA tensors, or {device} tensors under Triton's interpreter "
            f"(set TRITON_INTERPRET=1 before triton is imported); got tensors on {device}"
        )
    block = min(BLOCK, max(128, 1 << (vocab - 1).bit_length()))
    _token_kernel[(batch,)](
        draft_tokens, draft, target_probs, uniforms, tokens, accepted, empty,
        k, vocab, pad_id,
        draft_tokens.stride(0), draft_tokens.stride(1),
        draft.stride(0), draft.stride(1), draft.stride(2),
        target_probs.stride(0), target_probs.stride(1), target_probs.stride(2),
        uniforms.stride(0), uniforms.stride(1),
        HAS_DRAFT=draft_probs is not None, EMPTY_MASS=empty_residual_mass(target_probs.dtype), BLOCK=block,
        num_warps=max(1, min(NUM_WARPS, block // 256)),
    )
    return VerifyResult(accepted, tokens, empty)


def verify_tokens_fused(draft_tokens, draft_probs, target_probs, generator, *, pad_id: int = -1, validate: bool = True, sum_tol=None) -> VerifyResult:
    """:func:`specdec.verify_tokens` as one fused kernel: same arguments, same uniforms drawn from
    ``generator`` (B*(K+1) float64), same result.  CUDA-graph capturable with ``validate=False``."""
    check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=validate)
    pad_id = c.as_pad_id(pad_id)
    c.check_generator(generator, target_probs.device)
    batch, k = draft_tokens.shape
    uniforms = torch.rand((batch, k + 1), dtype=torch.float64, device=target_probs.device, generator=generator)
    return fused_step(draft_tokens.long(), draft_probs, target_probs, uniforms, pad_id)


def verify_tokens_fused_with_uniforms(draft_tokens, draft_probs, target_probs, uniforms, *, pad_id: int = -1, validate: bool = True, sum_tol=None) -> VerifyResult:
    """:func:`specdec.verify_tokens_with_uniforms` as one fused kernel."""
    c.check_tensor("uniforms", uniforms, dtypes=(torch.float64,), ndim=2)
    check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=validate)
    pad_id = c.as_pad_id(pad_id)
    batch, k = draft_tokens.shape
    c.check_shape("uniforms", uniforms, (batch, k + 1), "B, K+1")
    c.check_same_device(uniforms=uniforms, target_probs=target_probs)
    if validate and uniforms.numel() and not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms must lie in [0, 1)")
    return fused_step(draft_tokens.long(), draft_probs, target_probs, uniforms, pad_id)


