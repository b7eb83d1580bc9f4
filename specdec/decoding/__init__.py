"""Decoding real models (SPEC §1): the loop, draft sources, the ragged KV cache, model builders.

Needs transformers (the ``hf`` extra).
"""

from .draft_length import AdaptiveDraftLength, FixedDraftLength
from .drafts import ModelDraft, NgramDraft, Proposal
from .loop import GenerationResult, SpeculativeDecoder, StepRecord, generate

__all__ = ["AdaptiveDraftLength", "FixedDraftLength", "GenerationResult", "ModelDraft", "NgramDraft", "Proposal", "SpeculativeDecoder", "StepRecord", "generate"]
