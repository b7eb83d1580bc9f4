"""specdec: reference implementation, conformance harness and benchmarks for speculative decoding.

Conventions: distributions are named by role - ``target_probs`` (the large model)
and ``draft_probs`` (the draft) - never by letter; randomness is an argument (a
``torch.Generator``, explicit uniforms, or a seed), never the global RNG.  Formula
numbers (F1...F36, E1...E8, L1...L6, B1...B14) are defined in docs/reference.md.

The public API is re-exported here lazily: ``import specdec`` imports nothing
heavy (no torch, scipy or transformers) until a name is used.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0.dev0"

# name -> module that defines it
_EXPORTS = {
    "VerifyResult": "specdec.verify",
    "MultiDraftResult": "specdec.verify",
    "verify_tokens": "specdec.verify",
    "verify_tokens_with_uniforms": "specdec.verify",
    "verify_greedy": "specdec.verify",
    "verify_block": "specdec.verify",
    "verify_kseq": "specdec.verify",
    "verify_mss": "specdec.verify",
    "SamplingConfig": "specdec.warpers",
    "SamplingSettings": "specdec.sampling_settings",
    "UnsupportedSetting": "specdec.sampling_settings",
    "warp_logits": "specdec.warpers",
    "warped_probs": "specdec.warpers",
    "inverse_cdf": "specdec.sampling",
    "sample_categorical": "specdec.sampling",
    "acceptance_probability": "specdec.laws",
    "acceptance_profile": "specdec.laws",
    "emitted_block_law": "specdec.laws",
    "residual_distribution": "specdec.laws",
    "token_joint_law": "specdec.laws",
    "token_output_law": "specdec.laws",
    "tokens_per_step_moments": "specdec.laws",
    "optimal_plan": "specdec.laws",
    "multidraft_optimum": "specdec.laws",
    "sequence_law": "specdec.laws",
    "expected_tokens_iid": "specdec.laws",
    "expected_tokens_positional": "specdec.laws",
    "speedup": "specdec.laws",
    "optimal_draft_length": "specdec.laws",
    "predicted_speedup": "specdec.laws",
    "end_to_end_speedup": "specdec.laws",
    "speedup_with_costs": "specdec.laws",
    "acceptance_rate": "specdec.metrics",
    "draft_utilisation": "specdec.metrics",
    "mean_tokens_per_step": "specdec.metrics",
    "required_sample_size": "specdec.stats",
    "detectable_tv": "specdec.stats",
    "homogeneity_test": "specdec.stats",
    "goodness_of_fit": "specdec.stats",
    "GofResult": "specdec.stats",
    "check_verifier": "specdec.conformance",
    "check_multidraft": "specdec.conformance",
    "check_tree": "specdec.conformance",
    "check_decoder": "specdec.conformance",
    "check_law": "specdec.conformance",
    "check_ab": "specdec.conformance",
    "check_tokens": "specdec.conformance",
    "TargetLawOracle": "specdec.laws.oracles",
    "TransformersOracle": "specdec.laws.oracles",
    "TokenLaw": "specdec.laws.oracles",
    "LawOracle": "specdec.protocols",
    "ErrorBudget": "specdec.conformance",
    "RunSettings": "specdec.settings",
    "Report": "specdec.conformance",
    "generate": "specdec.decoding",
    "GenerationResult": "specdec.decoding",
    "SpeculativeDecoder": "specdec.decoding",
    "ModelDraft": "specdec.decoding",
    "NgramDraft": "specdec.decoding",
    "TokenVerifier": "specdec.protocols",
    "MultiDraftVerifier": "specdec.protocols",
    "TreeVerifier": "specdec.protocols",
    "Decoder": "specdec.protocols",
    "DraftSource": "specdec.protocols",
    "TargetLaw": "specdec.protocols",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'specdec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__
