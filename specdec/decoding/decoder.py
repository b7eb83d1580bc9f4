"""The reference loop as a Decoder, a StepRecorder and a user's object (:class:`SpeculativeDecoder`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from .._validation import as_int, as_seed
from .._hf import check_causal_lm, model_device, model_vocab_size
from ..protocols import DraftLengthPolicy, DraftSource, TargetLaw
from ..schemes import get as get_scheme
from ..schemes import scheme_of
from ..warpers import SamplingConfig
from .drafts import ModelDraft
from .loop import GenerationResult, check_prompts, generate


def check_decoder_args(target, prompts, max_new_tokens, seed) -> tuple[list[list[int]], int, int]:
    """Validate the shared decoder call ``(prompts, max_new_tokens, seed)``."""
    max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
    seed = as_seed(seed)
    return check_prompts(prompts, model_vocab_size(target)), max_new_tokens, seed


@dataclass
class SpeculativeDecoder:
    """The reference loop as a :class:`specdec.protocols.Decoder`:
    ``decoder(prompts, max_new_tokens, seed) -> new-token lists``.

    It is also a :class:`specdec.protocols.StepRecorder`, so the conformance engine can
    compare its measured tokens per step with their exact expectation (F28), and a
    :class:`specdec.protocols.SpeculationCounter` (drafts, draft tokens and accepted tokens over
    every call, from its own steps; None when it has no draft).
    ``last_result`` keeps the per-step counts of the latest call.
    """

    target: object
    draft: DraftSource | None = None
    num_draft_tokens: int | DraftLengthPolicy = 4
    sampling: SamplingConfig = SamplingConfig()
    eos_token_id: object = None
    verifier: str | Callable = "token"
    prob_dtype: torch.dtype = torch.float32
    fused: bool | None = None
    last_result: GenerationResult | None = field(default=None, repr=False)
    _prompts: list[list[int]] = field(default_factory=list, repr=False)
    _counts: dict = field(default_factory=lambda: {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}, repr=False)

    def __post_init__(self) -> None:
        check_causal_lm("target", self.target)
        if self.draft is not None and not isinstance(self.draft, DraftSource):
            self.draft = ModelDraft(self.draft)

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        prompts, max_new_tokens, seed = check_decoder_args(self.target, prompts, max_new_tokens, seed)
        self._prompts = [list(p) for p in prompts]
        self.last_result = generate(
            self.target,
            self.draft,
            prompts,
            max_new_tokens=max_new_tokens,
            num_draft_tokens=self.num_draft_tokens,
            sampling=self.sampling,
            eos_token_id=self.eos_token_id,
            generator=torch.Generator(device=model_device(self.target)).manual_seed(seed),  # the seed checked once, above
            verifier=self.verifier,
            prob_dtype=self.prob_dtype,
            fused=self.fused,
        )
        for step in self.last_result.steps:
            if step.num_draft_tokens:
                self._counts["drafts"] += len(step.rows)
                self._counts["draft_tokens"] += step.num_draft_tokens * len(step.rows)
                self._counts["accepted_tokens"] += int(sum(step.num_accepted))
        return self.last_result.tokens

    def speculation_counts(self) -> dict | None:
        """Cumulative {"drafts", "draft_tokens", "accepted_tokens"} over every call (row-steps that
        drafted, tokens drafted, drafts kept); None without a draft (the autoregressive baseline)."""
        if self.draft is None or (isinstance(self.num_draft_tokens, int) and self.num_draft_tokens == 0):
            return None
        return dict(self._counts)

    def last_steps(self) -> list[tuple[tuple[int, ...], int, int]]:
        """(context before the step, K, accepted) for every row-step of the last call."""
        if self.last_result is None:
            return []
        tokens = self.last_result.tokens
        return [
            (tuple(self._prompts[row]) + tuple(tokens[row][:start]), step.num_draft_tokens, accepted)
            for step in self.last_result.steps
            for row, start, accepted in zip(step.rows, step.start, step.num_accepted)
        ]

    def last_drafted(self) -> list[list[bool]]:
        """Per row of the last call, per emitted token: whether a draft was proposed at its position (a verified
        position: a kept draft, or the residual drawn where the draft was rejected) or not (a bonus token, a step
        without drafts).  :class:`specdec.protocols.DraftMarker`: known before the token is drawn."""
        if self.last_result is None:
            return []
        marks = [[False] * len(row) for row in self.last_result.tokens]
        for step in self.last_result.steps:
            for row, start, accepted in zip(step.rows, step.start, step.num_accepted):
                for j in range(min(int(accepted) + 1, step.num_draft_tokens)):
                    if start + j < len(marks[row]):
                        marks[row][start + j] = True
        return marks

    @property
    def draft_law(self) -> TargetLaw | None:
        return None if self.draft is None else self.draft.proposal_law(self.sampling)

    @property
    def timing_only(self) -> bool:
        """True when the verifier is a timing-only stand-in (``specdec.bench.synthetic``): no check takes this decoder."""
        return bool(getattr(self.verifier, "timing_only", False))

    @property
    def timing_only_why(self) -> str:
        return f"its verifier {self.verifier!r} is timing-only"

    @property
    def acceptance_rule(self) -> str | None:
        """The registered scheme the verifier implements (its name), or None when nothing says."""
        if isinstance(self.verifier, str):
            return get_scheme(self.verifier, shape="chain").name
        scheme = scheme_of(self.verifier)
        return None if scheme is None else scheme.name
