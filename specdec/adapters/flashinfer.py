"""FlashInfer's fused chain verifier behind the TokenVerifier Protocol.

``flashinfer.sampling.chain_speculative_sampling`` as of **flashinfer-python 0.5.3**:
``(draft_probs (B, K, V) float32, draft_token_ids (B, K) int32, target_probs (B, K+1, V) float32,
output_accepted_token_num (B,) int32, output_emitted_draft_token_num (B,) int32,
deterministic=True, generator=g)`` returns ``(output_token_ids (B, K+1) int32 padded with -1,
accepted, emitted)``; the two count buffers are *added to* (they accumulate statistics), so the
adapter passes fresh zeros and reads ``emitted`` as the number of accepted drafts.  Its Philox seed
and offset come from the generator: the randomness is the caller's.

The adapter makes the inputs what the kernel needs (contiguous float32, int32 ids; a one-hot q for
point-mass drafts, which FlashInfer has no path for) and returns a :class:`specdec.VerifyResult`.
float64 rows are rounded to float32 on the way in: the law FlashInfer must follow is then the one
of the float32 rows (TV ~1e-7 from the float64 rows).  ``flashinfer`` is imported when the adapter
is first called, so importing this module never needs it.
"""

from __future__ import annotations

import torch

from ..verify import VerifyResult
from ..schemes import declare
from ._common import check_adapter_inputs, import_peer, repad

TESTED_FLASHINFER = "0.5.3"


def flashinfer_chain_speculative_sampling(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    pad_id: int = -1,
    validate: bool = True,
) -> VerifyResult:
    """FlashInfer's ``chain_speculative_sampling`` with :func:`specdec.verify_tokens`' signature and result."""
    pad_id = check_adapter_inputs(draft_tokens, draft_probs, target_probs, generator, pad_id, validate)
    batch, k = draft_tokens.shape
    vocab = target_probs.shape[-1]
    if k == 0:
        raise ValueError("FlashInfer's chain_speculative_sampling needs at least one draft token (K >= 1), got K=0")
    if draft_probs is None:  # a point-mass draft (E5) is the one-hot q
        draft_probs = torch.nn.functional.one_hot(draft_tokens.long(), vocab)
    device = target_probs.device
    accepted = torch.zeros(batch, dtype=torch.int32, device=device)
    emitted = torch.zeros(batch, dtype=torch.int32, device=device)
    out = import_peer("flashinfer", "sampling", f"flashinfer-python {TESTED_FLASHINFER}").chain_speculative_sampling(
        draft_probs.to(torch.float32).contiguous(),
        draft_tokens.to(torch.int32).contiguous(),
        target_probs.to(torch.float32).contiguous(),
        accepted,
        emitted,
        deterministic=True,
        generator=generator,
    )
    tokens = out[0] if isinstance(out, tuple) else out  # 0.5.3 returns (tokens, accepted, emitted)
    if isinstance(out, tuple) and len(out) == 3:
        emitted = out[2]
    return VerifyResult(num_accepted=emitted.to(torch.int64), tokens=repad(tokens, pad_id))

declare(flashinfer_chain_speculative_sampling, "token")  # the token rule (F2-F4): F28 and the engine read it from the registry
