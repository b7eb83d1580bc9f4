"""Our own loop as a benchmark subject: SmolLM2-135M-Instruct with prompt lookup or a model draft.

``specdec bench run specdec.bench.reference:smollm2_lookup --k 2 4 8`` measures the reference loop
(:class:`specdec.decoding.SpeculativeDecoder`) the way it measures any engine: the factory's
``num_draft_tokens=0`` is the autoregressive twin (the same loop, one target token per step).
The decoders time their own passes (:meth:`ReferenceDecoder.step_costs`: the target over K + 1 tokens
for a batch of B rows, and the draft), so rows carry F23's prediction from measured costs and F24's K*.
Greedy (temperature 0) by default, EOS ignored: both sides generate exactly ``max_new_tokens``.
"""

from __future__ import annotations

import functools

import torch

from ..decoding import ModelDraft, NgramDraft, SpeculativeDecoder
from ..warpers import SamplingConfig
from .costs import StepCosts, calibrate

CALIBRATION_TEXT = (
    "The old harbour was rebuilt after a storm destroyed the wooden piers. The new stone pier could hold twelve "
    "fishing boats, and a lighthouse was added at its end. Today the harbour is used by sailing clubs, and the "
    "lighthouse is a small museum. The old harbour was rebuilt after a storm destroyed the wooden piers."
)


@functools.lru_cache(maxsize=None)
def _smollm2(device: str):
    from ..decoding.models import load_smollm2

    return load_smollm2(device=device)


@functools.lru_cache(maxsize=None)
def _bfloat16_draft(device: str):
    import copy

    return copy.deepcopy(_smollm2(device)[0]).to(torch.bfloat16)


class ReferenceDecoder(SpeculativeDecoder):
    """A :class:`SpeculativeDecoder` that can time its own passes (a :class:`specdec.bench.pairs.CostedDecoder`)."""

    draft_kind: str = "lookup-n3"

    def step_costs(self, max_k: int, batch: int = 1) -> StepCosts:
        """T_target(K + 1) for K = 0..max_k and the draft's seconds per token, for a step over ``batch`` rows."""
        return _costs(self, int(max_k), int(batch))


_COSTS: dict = {}  # (target, draft kind, max K, batch) -> StepCosts: calibrated once per process


def _costs(decoder: ReferenceDecoder, max_k: int, batch: int) -> StepCosts:
    key = (id(decoder.target), decoder.draft_kind, max_k, batch)
    cache = _COSTS
    if key not in cache:
        tokenizer = _smollm2(str(next(decoder.target.parameters()).device))[1]
        context = tokenizer(CALIBRATION_TEXT)["input_ids"]
        kwargs = {}
        if isinstance(decoder.draft, NgramDraft):
            kwargs["draft_lookup"] = NgramDraft(max_ngram_size=decoder.draft.max_ngram_size)
        elif isinstance(decoder.draft, ModelDraft):
            kwargs["draft_model"] = decoder.draft.model
        cache[key] = calibrate(decoder.target, list(context), max_k, batch=batch, **kwargs)
    return cache[key]


def _decoder(num_draft_tokens: int, draft: str, temperature: float, device: str) -> ReferenceDecoder:
    if draft not in ("lookup-n2", "lookup-n3", "model-greedy", "model-sampled"):
        raise ValueError(f"draft must be lookup-n2, lookup-n3, model-greedy or model-sampled, got {draft!r}")
    target, _ = _smollm2(device)
    source = None
    if num_draft_tokens:
        source = (NgramDraft(max_ngram_size=int(draft[-1])) if draft.startswith("lookup")
                  else ModelDraft(_bfloat16_draft(device), greedy=draft == "model-greedy"))
    decoder = ReferenceDecoder(target, source, num_draft_tokens=num_draft_tokens, sampling=SamplingConfig(temperature=temperature))
    decoder.draft_kind = draft
    decoder.name = f"ours-{draft}" + ("" if temperature == 0 else f"-T{temperature:g}")
    return decoder


def smollm2_lookup(num_draft_tokens: int = 4, *, temperature: float = 0.0, device: str = "cpu") -> ReferenceDecoder:
    """Our loop on SmolLM2 with prompt lookup (n-gram size up to 3), greedy by default."""
    return _decoder(num_draft_tokens, "lookup-n3", temperature, device)


def smollm2_model_draft(num_draft_tokens: int = 4, *, temperature: float = 0.0, device: str = "cpu") -> ReferenceDecoder:
    """Our loop on SmolLM2 with SmolLM2 in bfloat16 as the draft (greedy drafts at temperature 0, sampled otherwise)."""
    return _decoder(num_draft_tokens, "model-greedy" if temperature == 0 else "model-sampled", temperature, device)


smollm2_lookup.name = "ours-lookup-n3"
smollm2_model_draft.name = "ours-model"
