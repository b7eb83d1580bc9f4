"""Verifiers: token-level (F2-F4), greedy (E4), block (F16-F19) and multi-draft (F11-F15).

One module per scheme over one private chain core (:mod:`._chain`); each takes its
randomness as a ``torch.Generator`` and is vectorised over batch and positions.
"""

from ._chain import check_inputs as _check_inputs
from ._chain import emit_block
from .block import verify_block
from .greedy import verify_greedy
from .multidraft import verify_kseq, verify_mss
from .result import MultiDraftResult, VerifyResult
from .token import verify_tokens, verify_tokens_with_uniforms



def validate_token_inputs(draft_tokens, draft_probs, target_probs, *, sum_tol=None, values: bool = True) -> None:
    """The checks :func:`verify_tokens` makes, for adapters that wrap another verifier:
    types, dtypes and shapes always; values (one host sync) when ``values``."""
    _check_inputs(draft_tokens, draft_probs, target_probs, sum_tol, values=values)


__all__ = [
    "emit_block",
    "validate_token_inputs",
    "MultiDraftResult",
    "VerifyResult",
    "verify_block",
    "verify_greedy",
    "verify_kseq",
    "verify_mss",
    "verify_tokens",
    "verify_tokens_with_uniforms",
]
