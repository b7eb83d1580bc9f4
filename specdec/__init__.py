"""specdec: reference implementation and conformance harness for speculative decoding.

Conventions (see README): distributions are named by role - ``target_probs`` (the
large model, p) and ``draft_probs`` (the draft, q) - never by letter; randomness
is always an argument (a ``torch.Generator`` or explicit uniforms), never the
global RNG.  Formula numbers (F1...F36, E1...E8) refer to SPEC.md.
"""

from .exact import (
    acceptance_probability,
    acceptance_profile,
    emitted_block_law,
    residual_distribution,
    token_joint_law,
    token_output_law,
    tokens_per_step_moments,
)
from .metrics import (
    acceptance_rate,
    expected_tokens_iid,
    expected_tokens_positional,
    mean_tokens_per_step,
    optimal_draft_length,
    speedup,
)
from .sampling import inverse_cdf, sample_categorical
from .stats import GofResult, detectable_tv, goodness_of_fit, plan_sample_size
from .block import verify_block
from .drafts import DraftSource, ModelDraft, NgramDraft
from .generate import GenerationResult, SpeculativeDecoder, generate
from .multidraft import verify_kseq, verify_mss
from .transport import multidraft_optimum, optimal_plan
from .verify import VerifyResult, verify_greedy, verify_tokens, verify_tokens_with_uniforms
from .warpers import SamplingConfig, warp_logits, warped_probs

__version__ = "0.1.0.dev0"

__all__ = [
    "DraftSource",
    "GenerationResult",
    "ModelDraft",
    "NgramDraft",
    "SpeculativeDecoder",
    "generate",
    "verify_kseq",
    "verify_mss",
    "GofResult",
    "SamplingConfig",
    "VerifyResult",
    "acceptance_probability",
    "acceptance_profile",
    "acceptance_rate",
    "detectable_tv",
    "emitted_block_law",
    "expected_tokens_iid",
    "expected_tokens_positional",
    "goodness_of_fit",
    "inverse_cdf",
    "mean_tokens_per_step",
    "multidraft_optimum",
    "optimal_draft_length",
    "optimal_plan",
    "plan_sample_size",
    "residual_distribution",
    "sample_categorical",
    "speedup",
    "token_joint_law",
    "token_output_law",
    "tokens_per_step_moments",
    "verify_block",
    "verify_greedy",
    "verify_tokens",
    "verify_tokens_with_uniforms",
    "warp_logits",
    "warped_probs",
]
