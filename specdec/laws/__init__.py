"""Exact laws and closed forms, in float64 or exact rationals (docs/reference.md).

token (F1, F3, F4, F6 joint) - transport (F6, F9-F10) - lp (F5, F7, F8 with dual
certificates) - chain (F26, F27, table sequence laws) - block (F16-F20) -
multidraft (F11-F15) - speedup (F22-F25) - static_batch (P5-P6) - target (target laws) - sequence (F35) -
oracles (per-token laws for check_tokens, P1-P2).
"""

from .block import accepted_count_law, block_law, expected_accepted_block, joint_min_ideal
from .chain import acceptance_profile, emitted_block_law, tokens_per_step_moments
from .multidraft import distinct_children_law, kseq_acceptance, kseq_law, kseq_rho, mss_acceptance, mss_law
from .oracles import TargetLawOracle, TokenLaw, TransformersOracle
from .sequence import SequenceLaw, sequence_law
from .speedup import (
    end_to_end_speedup,
    expected_tokens_iid,
    expected_tokens_positional,
    optimal_draft_length,
    positional_acceptance,
    predicted_speedup,
    speedup,
    speedup_with_costs,
)
from .static_batch import expected_batch_steps, static_batch_factor, steps_law
from .target import FunctionLaw, ModelLaw, as_target_law
from .token import acceptance_probability, residual_distribution, token_joint_law, token_output_law
from .transport import multidraft_optimum, optimal_plan

__all__ = [
    "FunctionLaw",
    "ModelLaw",
    "SequenceLaw",
    "TargetLawOracle",
    "TokenLaw",
    "TransformersOracle",
    "acceptance_probability",
    "acceptance_profile",
    "accepted_count_law",
    "as_target_law",
    "block_law",
    "distinct_children_law",
    "emitted_block_law",
    "expected_accepted_block",
    "expected_tokens_iid",
    "expected_tokens_positional",
    "joint_min_ideal",
    "kseq_acceptance",
    "kseq_law",
    "kseq_rho",
    "mss_acceptance",
    "mss_law",
    "multidraft_optimum",
    "optimal_draft_length",
    "optimal_plan",
    "positional_acceptance",
    "residual_distribution",
    "sequence_law",
    "speedup",
    "speedup_with_costs",
    "predicted_speedup",
    "end_to_end_speedup",
    "expected_batch_steps",
    "static_batch_factor",
    "steps_law",
    "token_joint_law",
    "token_output_law",
    "tokens_per_step_moments",
]
