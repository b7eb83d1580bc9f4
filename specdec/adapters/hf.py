"""Hugging Face transformers' speculative decoding, wrapped as decoders and a verifier under test.

Tested against transformers ``TESTED_TRANSFORMERS`` (recorded in the README);
other versions run but are not vouched for.

transformers draws from the **global** torch RNG (``torch.rand_like``,
``torch.multinomial``).  These adapters are the only place in ``specdec`` that
touch it: each call derives seeds from the caller's generator or seed, seeds
the global RNG inside ``torch.random.fork_rng`` (so the caller's global state is
restored afterwards) and runs transformers' code unchanged.

* :func:`hf_speculative_sampling` - transformers' verifier
  (``transformers.generation.utils._speculative_sampling``, batch size 1),
  called row by row with our verifier's signature and result type, so the same
  checks run on it as on :func:`specdec.verify_tokens`.  It takes logits, so
  probabilities are passed as their logarithms (softmax(log p) = p).
* :class:`HFGenerateDecoder` - ``model.generate(...)`` without speculation (the control).
* :class:`HFAssistedDecoder` - ``model.generate(assistant_model=..., do_sample=...)``.
* :class:`HFPromptLookupDecoder` - ``model.generate(prompt_lookup_num_tokens=...)``.

Decoders here and :class:`specdec.decoding.SpeculativeDecoder` share one call
signature: ``decoder(prompts, max_new_tokens, seed) -> list of new-token lists``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validation import as_float, as_int
from ..decoding.decoder import check_decoder_args
from ..sampling_settings import SamplingSettings
from ..schemes import declare
from ..verify import VerifyResult, validate_token_inputs
from ..warpers import SamplingConfig
from .hf_settings import generate_kwargs, generation_kwargs

TESTED_TRANSFORMERS = "5.23.0"


def _seeds(seed: int, count: int) -> list[int]:
    """``count`` independent 63-bit seeds from one seed (numpy's SeedSequence)."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(count, dtype=np.uint64) >> np.uint64(1)]


def hf_speculative_sampling(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    pad_id: int = -1,
    assistant_ensemble_weight: float | None = None,
    validate: bool = True,
) -> VerifyResult:
    """transformers' ``_speculative_sampling`` with :func:`specdec.verify_tokens`' signature.

    One call per batch row (transformers supports batch size 1 only), each with
    the global RNG seeded from ``generator``.  ``draft_probs=None`` (point-mass
    drafts, E5) is passed as one-hot logits.  K = 0 is rejected: transformers
    never calls this function without candidates (its slicing assumes K >= 1).
    """
    from transformers.generation.utils import _speculative_sampling

    validate_token_inputs(draft_tokens, draft_probs, target_probs, values=validate)
    pad_id = as_int("pad_id", pad_id, minimum=-(2**63), maximum=2**63 - 1)
    if assistant_ensemble_weight is not None:
        assistant_ensemble_weight = as_float("assistant_ensemble_weight", assistant_ensemble_weight, minimum=0.0, maximum=1.0)
    batch, num_draft = draft_tokens.shape
    if num_draft == 0:
        raise ValueError("transformers' _speculative_sampling needs at least one draft token (K >= 1), got K=0")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if draft_probs is None:
        draft_probs = torch.nn.functional.one_hot(draft_tokens.long(), target_probs.shape[-1]).to(target_probs.dtype)
    seeds = torch.randint(0, 2**62, (batch,), generator=generator, device=generator.device).tolist()
    num_accepted = torch.zeros(batch, dtype=torch.long)
    tokens = torch.full((batch, num_draft + 1), pad_id, dtype=torch.long)
    with torch.random.fork_rng(devices=[target_probs.device] if target_probs.is_cuda else []):
        for row in range(batch):
            torch.manual_seed(seeds[row])
            emitted, matches = _speculative_sampling(
                draft_tokens[row: row + 1].long(),
                draft_probs[row: row + 1].log(),
                num_draft,
                target_probs[row: row + 1].log(),
                assistant_ensemble_weight=assistant_ensemble_weight,
            )
            count = int(matches)
            num_accepted[row] = count
            tokens[row, : count + 1] = emitted[0, : count + 1].cpu()
    device = target_probs.device
    return VerifyResult(
        num_accepted=num_accepted.to(device),
        tokens=tokens.to(device),
        residual_empty=torch.zeros(batch, dtype=torch.bool, device=device),
    )


@dataclass
class _HFDecoder:
    target: object
    sampling: SamplingConfig = SamplingConfig()
    eos_token_id: int | None = None
    settings: SamplingSettings | None = None  # the whole record (:mod:`.hf_settings`); then ``sampling`` is not read

    def __post_init__(self) -> None:
        if self.settings is not None and self.sampling != SamplingConfig():
            raise ValueError("give sampling= (a SamplingConfig) or settings= (a SamplingSettings), not both")

    def _extra(self) -> dict:
        return {}

    def _generate_kwargs(self) -> tuple[dict, set]:
        """(``generate``'s sampling keywords, the ids a row stops after: ``eos_token_id`` and the settings' stop tokens)."""
        width = self.target.get_output_embeddings().weight.shape[0]  # the logits' width: ids beyond it refused by field
        chosen = generation_kwargs(self.sampling) if self.settings is None else generate_kwargs(self.settings, vocab_size=width)
        stops = set(chosen.pop("eos_token_id", ())) | ({self.eos_token_id} if self.eos_token_id is not None else set())
        kwargs = {"min_new_tokens": 0, "eos_token_id": sorted(stops) if stops else None, **chosen}
        return kwargs, stops

    def _run(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        prompts, max_new_tokens, seed = check_decoder_args(self.target, prompts, max_new_tokens, seed)
        device = next(self.target.parameters()).device
        pad = self.eos_token_id if self.eos_token_id is not None else 0
        kwargs, stops = self._generate_kwargs()
        outputs = []
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            for prompt, row_seed in zip(prompts, _seeds(seed, len(prompts))):
                torch.manual_seed(row_seed)
                ids = torch.tensor([prompt], dtype=torch.long, device=device)
                out = self.target.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    pad_token_id=pad,
                    **kwargs,
                    **self._extra(),
                )
                new = out[0, len(prompt):].tolist()
                stop = next((i for i, token in enumerate(new) if token in stops), None)
                if stop is not None:
                    new = new[: stop + 1]
                outputs.append(new)
        return outputs


@dataclass
class HFGenerateDecoder(_HFDecoder):
    """transformers ``generate`` without speculation: the control of the decoders below."""

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        return self._run(prompts, max_new_tokens, seed)


@dataclass
class HFAssistedDecoder(_HFDecoder):
    """transformers assisted generation with a draft model: constant K, no confidence early stop."""

    assistant: object = None
    num_draft_tokens: int = 4

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        config = self.assistant.generation_config
        saved = {k: getattr(config, k, None) for k in ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")}
        config.num_assistant_tokens = self.num_draft_tokens
        config.num_assistant_tokens_schedule = "constant"
        config.assistant_confidence_threshold = 0.0
        try:
            return self._run(prompts, max_new_tokens, seed)
        finally:
            for key, value in saved.items():
                setattr(config, key, value)

    def _extra(self) -> dict:
        return {"assistant_model": self.assistant}


@dataclass
class HFPromptLookupDecoder(_HFDecoder):
    """transformers prompt-lookup decoding (``prompt_lookup_num_tokens``, ``max_matching_ngram_size``)."""

    num_draft_tokens: int = 10
    max_ngram_size: int = 3

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        return self._run(prompts, max_new_tokens, seed)

    def _extra(self) -> dict:
        return {"prompt_lookup_num_tokens": self.num_draft_tokens, "max_matching_ngram_size": self.max_ngram_size}


def hf_speculative_sampling_in_loop(draft_tokens: torch.Tensor, draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                                    generator: torch.Generator) -> VerifyResult:
    """:func:`hf_speculative_sampling` as a decoding loop's verifier: transformers' rule at every step that drafted; a
    step without drafts (K = 0: the last token of a request, where the loop shrinks its drafts) is specdec's
    autoregressive step (:func:`specdec.verify_tokens`, one target token) - transformers never calls its rule without
    candidates, so there is nothing of its to test there."""
    if draft_tokens.shape[1] == 0:
        from ..verify import verify_tokens

        return verify_tokens(draft_tokens, draft_probs, target_probs, generator)
    return hf_speculative_sampling(draft_tokens, draft_probs, target_probs, generator)


declare(hf_speculative_sampling, "token")  # transformers' _speculative_sampling is the token rule (F2-F4)
declare(hf_speculative_sampling_in_loop, "token")
