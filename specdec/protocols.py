"""The seams of specdec: what a verifier, a decoder, a draft source and a target law must provide.

These are ``typing.Protocol``s: nothing has to inherit from them.  The
conformance engine checks any object that satisfies one, and says which
Protocol an object fails when it does not (a one-line ``TypeError``).

Token-level verification (docs/reference.md §1) and multi-draft verification (docs/reference.md §3) are
functions; decoding (docs/reference.md §1's loop) is a callable object; the law a decoder
must follow is a :class:`TargetLaw`.  Shapes use B (batch rows), K (draft
tokens per row), k (drafts per position, multi-draft), V (vocabulary).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from .errors import ContractError  # noqa: F401 - re-exported: its home before specdec.errors

if TYPE_CHECKING:  # pragma: no cover
    import torch


@runtime_checkable
class VerificationOutcome(Protocol):
    """What a token-level verifier returns; the engine reads these two fields only.

    ``num_accepted``: (B,) integer, accepted draft tokens per row, in [0, K].
    ``tokens``: (B, K+1) integer, the accepted drafts, then one token drawn by the
    verifier (residual or bonus), then padding.  :class:`specdec.VerifyResult` is one.
    """

    num_accepted: "torch.Tensor"
    tokens: "torch.Tensor"


class TokenVerifier(Protocol):
    """``verifier(draft_tokens, draft_probs, target_probs, generator) -> VerificationOutcome``.

    draft_tokens (B, K) int; draft_probs (B, K, V) float or None (point-mass drafts,
    E5); target_probs (B, K+1, V), row K the bonus row; all randomness from
    ``generator``.  Lossless means: the emitted tokens follow the target (F4).
    :func:`specdec.verify_tokens` and :func:`specdec.verify_block` are two.
    """

    def __call__(
        self,
        draft_tokens: "torch.Tensor",
        draft_probs: "torch.Tensor | None",
        target_probs: "torch.Tensor",
        generator: "torch.Generator",
    ) -> VerificationOutcome: ...


@runtime_checkable
class MultiDraftOutcome(Protocol):
    """What a multi-draft verifier returns: ``token`` (B,) the emitted token and
    ``accepted_index`` (B,) the index of the accepted draft, -1 when none was."""

    token: "torch.Tensor"
    accepted_index: "torch.Tensor"


class MultiDraftVerifier(Protocol):
    """``verifier(draft_tokens, draft_probs, target_probs, generator) -> MultiDraftOutcome``.

    draft_tokens (B, k): k i.i.d. drafts from draft_probs (B, V), or k distinct
    deterministic children when draft_probs is None; target_probs (B, V).
    :func:`specdec.verify_kseq` and :func:`specdec.verify_mss` are two.
    """

    def __call__(
        self,
        draft_tokens: "torch.Tensor",
        draft_probs: "torch.Tensor | None",
        target_probs: "torch.Tensor",
        generator: "torch.Generator",
    ) -> MultiDraftOutcome: ...


class TreeVerifier(Protocol):
    """``verifier(tree_tokens, parents, draft_probs, target_probs, generator) -> VerificationOutcome``.

    A draft tree per row: ``parents`` (N,) ints, -1 for node 0 (the root, the current context),
    then each node's parent, before it; ``tree_tokens`` (B, N) int, the token of every node;
    ``draft_probs`` (B, N, V): row n the law node n's children were drawn from, i.i.d., or None:
    every node's children are distinct deterministic tokens (point masses, F15); ``target_probs``
    (B, N, V): row n the target's law after the path to node n.  Returns ``tokens`` (B, D+1): the
    accepted path's tokens, then one more token, then padding (D the tree's depth), and
    ``num_accepted`` (B,).  Lossless means: repeated steps emit the target's law (F35).
    A chain is a tree of width 1; one node's children a tree of depth 1.
    """

    def __call__(
        self,
        tree_tokens: "torch.Tensor",
        parents: Sequence[int],
        draft_probs: "torch.Tensor | None",
        target_probs: "torch.Tensor",
        generator: "torch.Generator",
    ) -> VerificationOutcome: ...


class Decoder(Protocol):
    """``decoder(prompts, max_new_tokens, seed) -> new-token lists``, one list per prompt.

    All randomness comes from the int ``seed``.  Lossless means: the first L
    tokens after each prompt follow the target law of L tokens (F35).
    """

    def __call__(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, seed: int) -> list[list[int]]: ...


@runtime_checkable
class TargetLaw(Protocol):
    """The next-token distribution after a context: the law a lossless decoder must follow.

    ``next_token_probs(contexts)`` returns a (len(contexts), V) array of float64
    rows summing to one, the distribution *after* every sampling warper (E6).
    A transformers model with a :class:`specdec.SamplingConfig`
    (:class:`specdec.laws.ModelLaw`), a table or a user's function
    (:class:`specdec.laws.FunctionLaw`) all qualify.
    """

    vocab_size: int

    def next_token_probs(self, contexts: Sequence[Sequence[int]]) -> Any: ...


@runtime_checkable
class DraftSource(Protocol):
    """Proposes up to K tokens per row for the decoding loop (:mod:`specdec.decoding`).

    ``propose`` returns a :class:`specdec.decoding.Proposal`: tokens (B, K') and the
    (B, K', V) law each token was really drawn from, or None for point masses (E5).
    ``proposal_law`` is the law the draft samples from after a context, as a
    :class:`TargetLaw` (None when the draft cannot state it, e.g. prompt lookup):
    with it a decoder's measured acceptance can be compared with its exact
    expectation (F26-F28).
    """

    vocab_size: int | None

    def start(self, contexts: list[list[int]], *, sampling: Any, prob_dtype: Any, device: Any) -> None: ...

    def propose(self, contexts: list[list[int]], num_tokens: int, generator: "torch.Generator") -> Any: ...

    def rollback(self, keep: "torch.Tensor") -> None: ...

    def select(self, rows: "torch.Tensor") -> None: ...

    def proposal_law(self, sampling: Any) -> TargetLaw | None: ...


@runtime_checkable
class DraftLengthPolicy(Protocol):
    """Chooses K, the number of tokens to draft, before every step of the decoding loop.

    ``reset()`` at the start of a generation; ``choose()`` returns K >= 0 for the next
    step (0: an autoregressive step); ``observe(K, num_accepted)`` reports what the
    verifier accepted in each running row.  The loop may draft fewer than ``choose()``
    near ``max_new_tokens``; it reports the K it used.  ``max_draft_tokens``: the largest K it
    ever chooses (what a preallocated cache is sized for).  Whatever K is chosen, the output law is
    the target's: the policy changes speed, never the distribution.
    """

    max_draft_tokens: int

    def reset(self) -> None: ...

    def choose(self) -> int: ...

    def observe(self, num_draft_tokens: int, num_accepted: Sequence[int]) -> None: ...


@runtime_checkable
class StepRecorder(Protocol):
    """A decoder whose last call can be replayed step by step (for F28).

    ``last_steps()``: one record per (row, step) with the context before the step
    (prompt + tokens emitted so far), the number of drafted tokens and the number
    accepted.  ``draft_law``: the law the drafts were drawn from (a TargetLaw), or
    None.  ``acceptance_rule``: the name of the registered chain scheme the verifier implements
    (:mod:`specdec.schemes`: its ``moments`` give F28's expectation), or None when unknown.
    """

    def last_steps(self) -> list[tuple[tuple[int, ...], int, int]]: ...

    @property
    def draft_law(self) -> TargetLaw | None: ...

    @property
    def acceptance_rule(self) -> str | None: ...


@runtime_checkable
class SpeculationCounter(Protocol):
    """A decoder that counts the speculation it did (an engine's own statistics).

    ``speculation_counts()`` returns cumulative counts ``{"drafts", "draft_tokens",
    "accepted_tokens"}`` since the decoder was built, or None when it does not speculate.  A check
    reads them before and after it samples and reports the difference: a check during which no
    draft was verified says nothing about speculation (its verdict says so).
    """

    def speculation_counts(self) -> Any: ...


@runtime_checkable
class LawOracle(Protocol):
    """The reference's law of every next token of an answer, as the engine samples it (docs/reference.md §10).

    ``token_laws(prompts, continuations)`` returns, for each answer, one
    :class:`specdec.laws.oracles.TokenLaw` per position: the law of ``continuation[t]`` given
    ``prompt + continuation[:t]``, after the engine's warpers - a full row, or its listed tokens and one
    "rest" mass.  ``floor``: the TV between a stated law and the engine's sampled one that is rounding, not a
    bug - a bound on its mean over the tokens of any one position (P2); ``tolerance``: how far from 1 a stated law may sum.  specdec's own
    laws, a transformers model, llama.cpp and vLLM's server have oracles.
    """

    floor: float
    tolerance: float

    def token_laws(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]) -> Any: ...


@runtime_checkable
class DraftMarker(Protocol):
    """A decoder that says at which positions of its last call a draft was proposed: ``last_drafted()``
    returns, per row of the last call, one bool per emitted token (True: a draft was verified there - kept,
    or rejected and replaced by a residual draw; False: a bonus token, or a step without drafts).  This is
    known before the token is drawn, so the per-token check may test the two groups apart (P3); whether a
    draft was *kept* is not (it depends on the token itself: a correct decoder's kept drafts do not follow p)."""

    def last_drafted(self) -> list[list[bool]]: ...
