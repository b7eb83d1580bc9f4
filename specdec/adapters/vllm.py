"""vLLM's V1 rejection sampler behind the TokenVerifier Protocol.

Written against **vLLM 0.9.0**, ``vllm.v1.sample.rejection_sampler.rejection_sample``::

    rejection_sample(draft_token_ids (num_tokens,) int32, num_draft_tokens list[int] (B,),
                     max_spec_len int, cu_num_draft_tokens (B,) int32 (inclusive cumsum),
                     draft_probs (num_tokens, V) float32 or None, target_probs (num_tokens, V) float32,
                     bonus_token_ids (B, 1) int32, sampling_metadata) -> (B, max_spec_len + 1) int32

Requests are flattened (row b's drafts are ``draft_token_ids[cu[b-1]:cu[b]]``), the output is
padded with -1, and the target rows cover the draft positions only: vLLM samples the bonus token
outside the rejection sampler and passes it in, so the adapter draws it from the bonus row
(``target_probs[:, K]``) with the caller's generator.  ``draft_probs=None`` is vLLM's n-gram path
(a point-mass draft, E5).

Randomness: vLLM draws its uniforms and the exponentials of its recovered tokens from
``sampling_metadata.generators[b]`` for every request that has one, and from the global RNG
otherwise.  The adapter gives every request the caller's generator, and runs the call inside
``torch.random.fork_rng`` because vLLM first fills its buffers from the global RNG and then
overwrites them.  ``rejection_sample`` reads only ``all_greedy``, ``all_random``, ``temperature``
and ``generators`` of the metadata, so the adapter passes an object with exactly those
(temperature 1: the rows are already the warped distributions).

Probabilities are handed over as float32 (what vLLM computes); the law vLLM must follow is then the
float32 rows'.  ``vllm`` is imported when the adapter is first called.
"""

from __future__ import annotations

import types

import torch

from ..sampling import sample_categorical
from ..verify import VerifyResult
from ._common import check_adapter_inputs, import_peer, repad

TESTED_VLLM = "0.9.0"
PLACEHOLDER_TOKEN_ID = -1
acceptance_rule = "token"


def _rejection_sample():
    return import_peer("vllm.v1.sample.rejection_sampler", "rejection_sample", f"vllm {TESTED_VLLM}")


def sampling_metadata(batch: int, generator: torch.Generator, device) -> types.SimpleNamespace:
    """The four fields of vLLM's SamplingMetadata that ``rejection_sample`` reads: every request
    random, temperature 1, and every request drawing from ``generator``."""
    return types.SimpleNamespace(
        all_greedy=False,
        all_random=True,
        temperature=torch.ones(batch, dtype=torch.float32, device=device),
        generators={b: generator for b in range(batch)},
        top_k=None,
        top_p=None,
    )


def vllm_rejection_sample(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    rejection_sample=None,
    pad_id: int = -1,
    validate: bool = True,
) -> VerifyResult:
    """vLLM's ``rejection_sample`` with :func:`specdec.verify_tokens`' signature and result.

    ``rejection_sample``: the function to call (default: vLLM's own; a fake with its signature in
    tests).  Every row has the same K here; vLLM's ragged form is built from it.
    """
    pad_id = check_adapter_inputs(draft_tokens, draft_probs, target_probs, generator, pad_id, validate)
    device = target_probs.device
    batch, num_draft = draft_tokens.shape
    vocab = target_probs.shape[-1]
    kernel = rejection_sample or _rejection_sample()
    bonus = sample_categorical(target_probs[:, num_draft], generator, validate=False)  # vLLM samples it outside
    flat_target = target_probs[:, :num_draft].reshape(batch * num_draft, vocab).to(torch.float32).contiguous()
    flat_draft = None if draft_probs is None else draft_probs.reshape(batch * num_draft, vocab).to(torch.float32).contiguous()
    counts = torch.full((batch,), num_draft, dtype=torch.int32, device=device)
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        out = kernel(
            draft_tokens.reshape(-1).to(torch.int32).contiguous(),
            [num_draft] * batch,
            num_draft,
            torch.cumsum(counts, 0, dtype=torch.int32),
            flat_draft,
            flat_target,
            bonus.to(torch.int32).reshape(batch, 1).contiguous(),
            sampling_metadata(batch, generator, device),
        )
    num_accepted = (out != PLACEHOLDER_TOKEN_ID).sum(1).to(torch.int64) - 1
    return VerifyResult(num_accepted=num_accepted, tokens=repad(out, pad_id, PLACEHOLDER_TOKEN_ID))


vllm_rejection_sample.acceptance_rule = acceptance_rule
