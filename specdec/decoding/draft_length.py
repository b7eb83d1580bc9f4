"""How many tokens to draft each step: a fixed K, or K chosen from recent acceptance by F24.

:class:`AdaptiveDraftLength` keeps an exponentially decayed count of accepted and
verified draft tokens (the pooled acceptance rate of docs/reference.md §6, weighted towards recent
steps) and drafts K* = argmax_K of F23, found by F24's scan, using the draft's cost
per token rho and the measured cost of verifying K + 1 tokens.  A prior of
``prior_weight`` verified tokens at ``prior_acceptance`` starts it, and the decay
pulls the estimate back to the prior while K* = 0, so a draft that stopped helping
is tried again.  The policy changes speed only: every K gives the target's law.
"""

from __future__ import annotations

from typing import Sequence

from .._validation import as_float, as_int, as_probability
from ..laws.speedup import optimal_draft_length


class FixedDraftLength:
    """K every step (what an int ``num_draft_tokens`` means)."""

    def __init__(self, num_draft_tokens: int) -> None:
        self.num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=0)

    def reset(self) -> None:
        """Nothing to forget."""

    def choose(self) -> int:
        return self.num_draft_tokens

    def observe(self, num_draft_tokens: int, num_accepted: Sequence[int]) -> None:
        """A fixed K ignores what was accepted."""

    @property
    def max_draft_tokens(self) -> int:
        return self.num_draft_tokens

    def __repr__(self) -> str:
        return f"FixedDraftLength({self.num_draft_tokens})"


class AdaptiveDraftLength:
    """K* by F24 from the recent pooled acceptance, between ``min_draft_tokens`` and ``max_draft_tokens``.

    ``draft_step_ratio``: rho = T_draft / T_target per drafted token (0 for prompt lookup
    is optimistic: measure it).  ``verify_cost_ratios``: v(K) = T_verify(K + 1) / T_target(1)
    for K = 0..max_draft_tokens; None takes F23's 1 (then with rho = 0 the longest K
    always wins).  ``decay`` in (0, 1]: weight of the past per step (1: never forget).
    """

    def __init__(
        self,
        max_draft_tokens: int = 8,
        *,
        draft_step_ratio: float = 0.0,
        verify_cost_ratios=None,
        min_draft_tokens: int = 0,
        decay: float = 0.8,
        prior_acceptance: float = 0.6,
        prior_weight: float = 2.0,
    ) -> None:
        self.max_draft_tokens = as_int("max_draft_tokens", max_draft_tokens, minimum=0)
        self.min_draft_tokens = as_int("min_draft_tokens", min_draft_tokens, minimum=0, maximum=self.max_draft_tokens)
        self.draft_step_ratio = as_float("draft_step_ratio", draft_step_ratio, minimum=0.0)
        self.decay = as_float("decay", decay, minimum=0.0, maximum=1.0, low_open=True)
        self.prior_acceptance = as_probability("prior_acceptance", prior_acceptance)
        self.prior_weight = as_float("prior_weight", prior_weight, minimum=0.0, low_open=True)
        self.verify_cost_ratios = verify_cost_ratios
        optimal_draft_length(  # validates the costs once, here, not in the middle of a generation
            self.prior_acceptance, self.draft_step_ratio, max_draft_tokens=self.max_draft_tokens,
            verify_cost_ratios=verify_cost_ratios,
        )
        self.reset()

    def reset(self) -> None:
        self._accepted = 0.0  # decayed counts beyond the prior
        self._verified = 0.0

    @property
    def acceptance_estimate(self) -> float:
        """The decayed pooled acceptance rate, with the prior mixed in."""
        weight = self.prior_weight
        return (self._accepted + weight * self.prior_acceptance) / (self._verified + weight)

    def choose(self) -> int:
        k, _ = optimal_draft_length(
            self.acceptance_estimate, self.draft_step_ratio, max_draft_tokens=self.max_draft_tokens,
            verify_cost_ratios=self.verify_cost_ratios,
        )
        return max(k, self.min_draft_tokens)

    def observe(self, num_draft_tokens: int, num_accepted: Sequence[int]) -> None:
        """Decay the counts by one step and add this step's accepted / verified drafts (docs/reference.md §6)."""
        self._accepted *= self.decay
        self._verified *= self.decay
        for accepted in num_accepted:
            self._accepted += accepted
            self._verified += accepted + (accepted < num_draft_tokens)

    def __repr__(self) -> str:
        return (f"AdaptiveDraftLength(max_draft_tokens={self.max_draft_tokens}, draft_step_ratio={self.draft_step_ratio:.3g}, "
                f"decay={self.decay}, prior_acceptance={self.prior_acceptance})")
