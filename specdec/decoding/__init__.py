"""Decoding real models (docs/reference.md §1): the loop, draft sources, the ragged and static KV caches, model builders.

Needs transformers (the ``hf`` extra).
"""

from .draft_length import AdaptiveDraftLength, FixedDraftLength
from .drafts import ModelDraft, NgramDraft, Proposal
from .decoder import SpeculativeDecoder
from .loop import GenerationResult, StepRecord, generate
from .static_cache import StaticKVCache

__all__ = ["AdaptiveDraftLength", "FixedDraftLength", "GenerationResult", "ModelDraft", "NgramDraft", "Proposal", "SpeculativeDecoder", "StaticKVCache", "StepRecord", "generate"]
