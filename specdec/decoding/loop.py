"""The reference speculative decoding loop over transformers causal LMs (docs/reference.md §1).

Each step, for every unfinished batch row:

1. the draft source proposes K tokens x_1..x_K with their laws q_1..q_K (E5: none
   for a deterministic drafter);
2. one target pass over [last token, x_1..x_K] gives p_1..p_{K+1}, warped with the
   same :class:`SamplingConfig` (E6); the first step's pass also carries the prompts (no
   separate prefill pass);
3. the verifier (token-level F2-F4 by default, block verification F16-F19, or any
   :class:`specdec.protocols.TokenVerifier`) accepts n of them and emits n + 1 tokens;
4. both KV caches are rolled back to the accepted length, row by row
   (:class:`RaggedCache`), so rows that accept different lengths stay exact (B13);
5. output stops after the first EOS (E8) or at ``max_new_tokens`` exactly.

With K = 0 the same loop is the autoregressive sampler (one target token per step),
so speed ratios compare like with like.  K shrinks near the end so no step drafts
past ``max_new_tokens``.  Per-step counts are returned as plain data; the loop reads no
clock unless the caller passes a :class:`~specdec.decoding.phases.PhaseTimer` (where a step's
time goes, phase by phase).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from .. import metrics
from .._validation import as_int, as_seed
from .._hf import check_causal_lm, check_logits, model_device, model_vocab_size
from ..laws.sequence import eos_ids
from ..laws.target import as_token_ids
from ..protocols import DraftLengthPolicy, DraftSource
from ..warpers import SamplingConfig, warped_probs
from .draft_length import FixedDraftLength
from .drafts import ModelDraft
from .kvcache import RaggedCache
from .phases import NO_TIMER, PhaseTimer
from .static_cache import static_cache_for_call
from .verifying import check_outcome, select_verifier

@dataclass(frozen=True)
class StepRecord:
    """One draft-then-verify step over the rows still running."""

    rows: tuple[int, ...]  # original batch indices of the rows in this step
    num_draft_tokens: int  # K used this step (0: autoregressive step)
    num_accepted: tuple[int, ...]  # per row, drafts accepted by the verifier
    num_emitted: tuple[int, ...]  # per row, tokens kept in the output (after EOS / max_new_tokens truncation)
    start: tuple[int, ...]  # per row, new tokens emitted before this step (the step's context is prompt + those)


@dataclass
class GenerationResult:
    tokens: list[list[int]]  # new tokens per row (prompt excluded), EOS included when emitted
    finish_reasons: list[str]  # "eos" or "length" per row
    steps: list[StepRecord] = field(default_factory=list)

    def _counts(self) -> tuple[list[int], list[int]]:
        accepted = [a for s in self.steps for a in s.num_accepted]
        drafted = [s.num_draft_tokens for s in self.steps for _ in s.num_accepted]
        return accepted, drafted

    def acceptance_rate(self) -> float:
        """Pooled accepted / verified draft tokens (docs/reference.md §6; :func:`specdec.metrics.acceptance_rate`)."""
        return metrics.acceptance_rate(*self._counts())

    def draft_utilisation(self) -> float:
        """Pooled accepted / drafted tokens (:func:`specdec.metrics.draft_utilisation`)."""
        return metrics.draft_utilisation(*self._counts())

    def mean_tokens_per_step(self) -> float:
        """Mean of (accepted + 1) over row-steps: what one target pass produced per row (before truncation)."""
        return metrics.mean_tokens_per_step([a + 1 for a in self._counts()[0]])


def check_prompts(prompts, vocab: int) -> list[list[int]]:
    """Prompts as lists of int ids in [0, V) (numpy and tensor ids accepted), one per batch row."""
    if isinstance(prompts, torch.Tensor):
        if prompts.ndim != 2 or prompts.is_floating_point() or prompts.is_complex():
            raise ValueError(f"prompts tensor must be 2-D integer (B, T), got {prompts.dtype} {tuple(prompts.shape)}")
        prompts = prompts.tolist()
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or len(prompts) == 0:
        raise ValueError("prompts must be a non-empty list of token-id lists (one per batch row)")
    return [list(as_token_ids(f"prompts[{b}]", prompt, vocab)) for b, prompt in enumerate(prompts)]  # the one prompt rule


def _resolve_generator(generator, seed, device: torch.device) -> torch.Generator:
    if generator is not None and seed is not None:
        raise ValueError("pass either generator or seed, not both")
    if generator is None:
        if seed is None:
            raise ValueError("randomness is an argument: pass generator= (torch.Generator) or seed= (int)")
        return torch.Generator(device=device).manual_seed(as_seed(seed))
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


@torch.no_grad()
def generate(
    target,
    draft: DraftSource | None,
    prompts,
    *,
    max_new_tokens: int,
    num_draft_tokens: int | DraftLengthPolicy,
    sampling: SamplingConfig = SamplingConfig(),
    eos_token_id=None,
    generator: torch.Generator | None = None,
    seed: int | None = None,
    verifier: str | Callable = "token",
    prob_dtype: torch.dtype = torch.float32,
    fused: bool | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
    target_cache="dynamic",
    cuda_graphs: bool = False,
    phase_timer: PhaseTimer | None = None,
) -> GenerationResult:
    """Speculative decoding of ``prompts`` (ragged list of token-id lists, or a (B, T) tensor).

    ``draft``: a :class:`DraftSource` (a transformers model is wrapped in
    :class:`ModelDraft`); may be None when ``num_draft_tokens`` is 0.
    ``verifier``: the name of a registered chain scheme ("token": F2-F4, "block": F16-F19;
    :mod:`specdec.schemes`), or any TokenVerifier; what it returns is checked every step.  ``fused``: with "token" on CUDA, use the fused Triton
    kernel (:mod:`specdec.verify.fused`, the same tokens on the same uniforms) when Triton is
    there (None, the default), always (True: an error without it) or never (False).
    ``num_draft_tokens``: K, or a :class:`DraftLengthPolicy` choosing K before every step
    (e.g. :class:`AdaptiveDraftLength`).  ``on_step``: called with each step's
    :class:`StepRecord` once its tokens are in the output (a streaming or timing hook; on CUDA
    the hook must synchronise itself if it reads a clock).  ``target_cache``: "dynamic" (transformers'
    ``DynamicCache``, any causal LM), "static" (:class:`StaticKVCache`: preallocated K/V for
    Llama-style targets; with ``cuda_graphs=True`` on CUDA each step's query shape is a replayed
    graph) or a :class:`StaticKVCache` to reuse (reset here; its graphs are kept across calls).
    ``phase_timer``: a :class:`PhaseTimer` accumulating each step's seconds per phase (draft,
    prefill, target, warp, verify, rollback, the rest as bookkeeping; :mod:`.phases`); None (the default)
    reads no clock and adds no host synchronisation.  The tokens are the same either way.
    Randomness: ``generator`` on the target's device, or ``seed``.  The output law of every
    row is that of sampling the target autoregressively with ``sampling``'s warpers.
    """
    if phase_timer is not None and not isinstance(phase_timer, PhaseTimer):
        raise TypeError(f"phase_timer must be a PhaseTimer or None, got {type(phase_timer).__name__}")
    run = _Run.start(target, draft, prompts, max_new_tokens=max_new_tokens, num_draft_tokens=num_draft_tokens, sampling=sampling,
                     eos_token_id=eos_token_id, generator=generator, seed=seed, verifier=verifier, prob_dtype=prob_dtype,
                     fused=fused, on_step=on_step, target_cache=target_cache, cuda_graphs=cuda_graphs)
    timer = NO_TIMER if phase_timer is None else phase_timer
    timer.bind(run.device)
    run.timer = timer
    while run.active:
        with timer.step():
            run.step()
    return GenerationResult(tokens=run.outputs, finish_reasons=run.reasons, steps=run.steps)


@dataclass
class _Run:
    """The state of one ``generate`` call: the rows still running, their contexts and outputs, the caches."""

    contexts: list[list[int]]
    outputs: list[list[int]]
    reasons: list[str]
    active: list[int]
    max_new_tokens: int
    eos: frozenset
    policy: DraftLengthPolicy
    draft: DraftSource | None  # None when no step drafts (K = 0)
    verify: Callable
    sampling: SamplingConfig
    prob_dtype: torch.dtype
    generator: torch.Generator
    target_cache: object
    vocab: int
    device: torch.device
    on_step: Callable | None
    steps: list[StepRecord] = field(default_factory=list)
    timer: PhaseTimer = NO_TIMER  # clocks the phases of each step (:mod:`.phases`); NO_TIMER reads none
    prompts: list[list[int]] | None = None  # each row's prompt but its last token, until the first pass feeds them

    @classmethod
    def start(cls, target, draft, prompts, *, max_new_tokens, num_draft_tokens, sampling, eos_token_id, generator, seed, verifier,
              prob_dtype, fused, on_step, target_cache, cuda_graphs) -> "_Run":
        """Every argument checked, the caches built and the prompts fed (all but their last token)."""
        check_causal_lm("target", target)
        device, vocab = model_device(target), model_vocab_size(target)
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
        policy = draft_length_policy(num_draft_tokens)
        if on_step is not None and not callable(on_step):
            raise TypeError(f"on_step must be callable or None, got {type(on_step).__name__}")
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig, got {type(sampling).__name__}")
        if prob_dtype not in (torch.float32, torch.float64):
            raise TypeError(f"prob_dtype must be torch.float32 or torch.float64, got {prob_dtype}")
        verify = select_verifier(verifier, device, fused)
        if draft is not None and not isinstance(draft, DraftSource):
            draft = ModelDraft(draft)
        never_drafts = isinstance(policy, FixedDraftLength) and policy.num_draft_tokens == 0
        if draft is None and not never_drafts:
            raise ValueError(f"num_draft_tokens={num_draft_tokens!r} needs a draft source (draft is None)")
        if draft is not None and draft.vocab_size is not None and draft.vocab_size != vocab:
            raise ValueError(f"draft vocabulary size {draft.vocab_size} differs from the target's {vocab}")
        contexts = check_prompts(prompts, vocab)
        eos = eos_ids(eos_token_id, vocab)
        generator = _resolve_generator(generator, seed, device)
        batch = len(contexts)
        if isinstance(target_cache, str) and target_cache == "dynamic":
            if cuda_graphs:
                raise ValueError("cuda_graphs=True needs target_cache='static'")
            target_cache = RaggedCache(target, batch, device)
        else:
            length = max(len(c) for c in contexts) + max_new_tokens + policy.max_draft_tokens + 1
            target_cache = static_cache_for_call(target_cache, target, batch, device, length, cuda_graphs)
        policy.reset()
        draft = None if never_drafts else draft
        if draft is not None:
            draft.start(contexts, sampling=sampling, prob_dtype=prob_dtype, device=device)
        prompts = [ctx[:-1] for ctx in contexts]  # fed with the first step's chunk: no pass of their own
        return cls(contexts, [[] for _ in range(batch)], ["length"] * batch, list(range(batch)), max_new_tokens, eos, policy, draft,
                   verify, sampling, prob_dtype, generator, target_cache, vocab, device, on_step, prompts=prompts)

    def step(self) -> None:
        """One draft-then-verify step over the running rows (the module docstring's steps 1-5)."""
        rows = [self.contexts[r] for r in self.active]
        remaining = [self.max_new_tokens - len(self.outputs[r]) for r in self.active]
        k = min(as_int("the draft length policy's choice", self.policy.choose(), minimum=0), max(remaining) - 1)
        draft_tokens = torch.empty((len(rows), 0), dtype=torch.long, device=self.device)
        draft_probs = None
        if self.draft is not None and k > 0:  # 1. propose
            with self.timer.phase("draft"):
                proposal = self.draft.propose(rows, k, self.generator)
            draft_tokens, draft_probs = proposal.tokens, proposal.probs
            k = draft_tokens.shape[1]
        last = torch.tensor([ctx[-1] for ctx in rows], dtype=torch.long, device=self.device)
        chunk = torch.cat([last.unsqueeze(-1), draft_tokens], dim=1)  # (B', k+1)  2. one target pass
        if self.prompts is None:
            with self.timer.phase("target"):
                logits = self.target_cache.feed_tensor(chunk, torch.full((len(rows),), k + 1, device=self.device))
        else:
            with self.timer.phase("prefill"):
                logits = self._first_pass(chunk)
        with self.timer.phase("warp"):
            target_probs = warped_probs(check_logits(logits, "target"), self.sampling, dtype=self.prob_dtype)
        with self.timer.phase("verify"):  # 3. verify
            result = self.verify(draft_tokens, draft_probs, target_probs, self.generator)
            accepted, emitted = check_outcome(result, draft_tokens, self.vocab)
        kept, finished, starts = self._emit(accepted, emitted, remaining)  # 5. output, EOS, max_new_tokens
        record = StepRecord(tuple(self.active), k, tuple(accepted), tuple(kept), tuple(starts))
        self.steps.append(record)
        self.policy.observe(k, accepted)
        if self.on_step is not None:
            self.on_step(record)
        with self.timer.phase("rollback"):
            self._roll_back(finished)  # 4. both caches to the accepted length; finished rows leave

    def _first_pass(self, chunk: torch.Tensor) -> torch.Tensor:
        """The first step's target pass carries the prompts too: [prompt, drafts] in one forward (as
        transformers' assisted generation does), logits (B, k+1, V) for the chunk's columns only.  A
        separate prefill pass would cost a whole target pass more on both sides of every speed ratio."""
        prompts, self.prompts = self.prompts, None
        return self.target_cache.feed([p + c for p, c in zip(prompts, chunk.tolist())], last=chunk.shape[1])

    def _emit(self, accepted, emitted, remaining):
        kept, finished, starts = [], [], []
        for i, r in enumerate(self.active):
            starts.append(len(self.outputs[r]))
            new = emitted[i][: accepted[i] + 1]
            take = new[: remaining[i]]
            hit = next((j for j, token in enumerate(take) if token in self.eos), None)
            if hit is not None:
                take = take[: hit + 1]
                self.reasons[r] = "eos"
            self.outputs[r].extend(take)
            self.contexts[r].extend(new)
            kept.append(len(take))
            if hit is not None or len(self.outputs[r]) >= self.max_new_tokens:
                finished.append(i)
        return kept, finished, starts

    def _roll_back(self, finished: list[int]) -> None:
        keep = torch.tensor([len(self.contexts[r]) - 1 for r in self.active], dtype=torch.long, device=self.device)
        self.target_cache.rollback(keep)
        if self.draft is not None:
            self.draft.rollback(keep)
        if finished:
            gone = set(finished)
            stay = [i for i in range(len(self.active)) if i not in gone]
            self.active = [self.active[i] for i in stay]
            if self.active:
                index = torch.tensor(stay, dtype=torch.long, device=self.device)
                self.target_cache.select(index)
                if self.draft is not None:
                    self.draft.select(index)


def draft_length_policy(num_draft_tokens) -> DraftLengthPolicy:
    """An int K as :class:`FixedDraftLength`, or the :class:`DraftLengthPolicy` given."""
    if isinstance(num_draft_tokens, DraftLengthPolicy) and not isinstance(num_draft_tokens, type):
        return num_draft_tokens
    return FixedDraftLength(as_int("num_draft_tokens", num_draft_tokens, minimum=0))
