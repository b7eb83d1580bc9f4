"""The reference speculative decoding loop over transformers causal LMs (SPEC §1).

Each step, for every unfinished batch row:

1. the draft source proposes K tokens x_1..x_K with their laws q_1..q_K (E5: none
   for a deterministic drafter);
2. one target pass over [last token, x_1..x_K] gives p_1..p_{K+1}, warped with
   the same :class:`SamplingConfig` (E6);
3. the verifier (token-level F2-F4 by default, block verification F16-F19 as an
   option) accepts n of them and emits n + 1 tokens;
4. both KV caches are rolled back to the accepted length, row by row
   (:class:`specdec.kvcache.RaggedCache`), so rows that accept different
   lengths stay exact (PEERS B13);
5. output stops after the first EOS (E8) or at ``max_new_tokens`` exactly.

With K = 0 the same loop is the autoregressive sampler (one target token per
step), so speed ratios compare like with like.  K shrinks near the end so no
step drafts past ``max_new_tokens``.  Per-step statistics are returned as plain
data, so acceptance and tokens per step need no re-run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from .block import verify_block
from .drafts import DraftSource, ModelDraft, check_logits, model_device, model_vocab_size
from .kvcache import RaggedCache
from .verify import VerifyResult, verify_tokens
from .warpers import SamplingConfig, warped_probs

VERIFIERS: dict[str, Callable[..., VerifyResult]] = {"token": verify_tokens, "block": verify_block}


@dataclass(frozen=True)
class StepRecord:
    """One draft-then-verify step over the rows still running."""

    rows: tuple[int, ...]  # original batch indices of the rows in this step
    num_draft: int  # K used this step (0: autoregressive step)
    num_accepted: tuple[int, ...]  # per row, drafts accepted by the verifier
    num_emitted: tuple[int, ...]  # per row, tokens kept in the output (after EOS / max_new_tokens truncation)
    draft_seconds: float
    verify_seconds: float  # target pass + warpers + verifier


@dataclass
class GenerationResult:
    tokens: list[list[int]]  # new tokens per row (prompt excluded), EOS included when emitted
    finish_reasons: list[str]  # "eos" or "length" per row
    steps: list[StepRecord] = field(default_factory=list)

    def accepted_and_drafted(self) -> tuple[int, int]:
        """Pooled (accepted, drafted) over all steps and rows."""
        accepted = sum(sum(s.num_accepted) for s in self.steps)
        drafted = sum(s.num_draft * len(s.rows) for s in self.steps)
        return accepted, drafted

    def acceptance_rate(self) -> float:
        accepted, drafted = self.accepted_and_drafted()
        if drafted == 0:
            raise ValueError("no draft token was verified (K = 0 or nothing proposed)")
        return accepted / drafted

    def mean_tokens_per_step(self) -> float:
        """Mean of (accepted + 1) over row-steps: what one target pass produced per row (before truncation)."""
        counts = [a + 1 for s in self.steps for a in s.num_accepted]
        return sum(counts) / len(counts)


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_prompts(prompts, vocab: int) -> list[list[int]]:
    if isinstance(prompts, torch.Tensor):
        if prompts.ndim != 2 or prompts.is_floating_point():
            raise ValueError(f"prompts tensor must be 2-D integer (B, T), got {prompts.dtype} {tuple(prompts.shape)}")
        prompts = prompts.tolist()
    if not isinstance(prompts, Sequence) or isinstance(prompts, (str, bytes)) or len(prompts) == 0:
        raise ValueError("prompts must be a non-empty list of token-id lists (one per batch row)")
    rows = []
    for b, prompt in enumerate(prompts):
        if isinstance(prompt, torch.Tensor):
            prompt = prompt.tolist()
        if not isinstance(prompt, Sequence) or isinstance(prompt, (str, bytes)):
            raise TypeError(f"prompts[{b}] must be a list of token ids, got {type(prompt).__name__}")
        if len(prompt) == 0:
            raise ValueError(f"prompts[{b}] is empty: the target needs at least one token to condition on")
        for token in prompt:
            if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
                raise ValueError(f"prompts[{b}] holds token {token!r}, outside the vocabulary [0, {vocab})")
        rows.append(list(prompt))
    return rows


def _check_eos(eos_token_id, vocab: int) -> frozenset[int]:
    if eos_token_id is None:
        return frozenset()
    ids = [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)
    for token in ids:
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
            raise ValueError(f"eos_token_id {token!r} is not a token of the vocabulary [0, {vocab})")
    return frozenset(ids)


def _resolve_generator(generator, seed, device: torch.device) -> torch.Generator:
    if generator is not None and seed is not None:
        raise ValueError("pass either generator or seed, not both")
    if generator is None:
        if seed is None:
            raise ValueError("randomness is an argument: pass generator= (torch.Generator) or seed= (int)")
        _check_int("seed", seed, 0)
        return torch.Generator(device=device).manual_seed(seed)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def generate(
    target,
    draft: DraftSource | None,
    prompts,
    *,
    max_new_tokens: int,
    num_draft_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    eos_token_id: int | Sequence[int] | None = None,
    generator: torch.Generator | None = None,
    seed: int | None = None,
    verifier: str | Callable[..., VerifyResult] = "token",
    prob_dtype: torch.dtype = torch.float32,
) -> GenerationResult:
    """Speculative decoding of ``prompts`` (ragged list of token-id lists, or a (B, T) tensor).

    ``draft``: a :class:`DraftSource` (a transformers model is wrapped in
    :class:`ModelDraft`); may be None when ``num_draft_tokens`` is 0.
    ``verifier``: "token" (F2-F4), "block" (F16-F19), or any function with
    :func:`specdec.verify_tokens`' signature.  Randomness: ``generator`` on the
    target's device, or ``seed``.  The output law of every row is that of
    sampling the target autoregressively with ``sampling``'s warpers.
    """
    if not hasattr(target, "config") or not callable(target):
        raise TypeError(f"target must be a transformers causal LM, got {type(target).__name__}")
    device = model_device(target)
    vocab = model_vocab_size(target)
    _check_int("max_new_tokens", max_new_tokens, 1)
    _check_int("num_draft_tokens", num_draft_tokens, 0)
    if not isinstance(sampling, SamplingConfig):
        raise TypeError(f"sampling must be a SamplingConfig, got {type(sampling).__name__}")
    if prob_dtype not in (torch.float32, torch.float64):
        raise TypeError(f"prob_dtype must be torch.float32 or torch.float64, got {prob_dtype}")
    verify = VERIFIERS.get(verifier) if isinstance(verifier, str) else verifier
    if not callable(verify):
        raise ValueError(f"verifier must be one of {sorted(VERIFIERS)} or a callable, got {verifier!r}")
    if draft is not None and not isinstance(draft, DraftSource):
        draft = ModelDraft(draft)
    if draft is None and num_draft_tokens > 0:
        raise ValueError(f"num_draft_tokens={num_draft_tokens} needs a draft source (draft is None)")
    if draft is not None and draft.vocab_size is not None and draft.vocab_size != vocab:
        raise ValueError(f"draft vocabulary size {draft.vocab_size} differs from the target's {vocab}")
    contexts = _check_prompts(prompts, vocab)
    eos = _check_eos(eos_token_id, vocab)
    generator = _resolve_generator(generator, seed, device)

    batch = len(contexts)
    outputs: list[list[int]] = [[] for _ in range(batch)]
    reasons = ["length"] * batch
    active = list(range(batch))
    target_cache = RaggedCache(target, batch, device)
    prefix = [ctx[:-1] for ctx in contexts]  # the last prompt token is fed with the first drafts
    if any(prefix):
        check_logits(target_cache.feed(prefix), "target")
    use_draft = draft is not None and num_draft_tokens > 0
    if use_draft:
        draft.start(contexts, sampling=sampling, prob_dtype=prob_dtype, device=device)
    steps: list[StepRecord] = []

    while active:
        rows = [contexts[r] for r in active]
        remaining = [max_new_tokens - len(outputs[r]) for r in active]
        k = min(num_draft_tokens, max(remaining) - 1)
        _sync(device)
        started = time.perf_counter()
        draft_tokens = torch.empty((len(active), 0), dtype=torch.long, device=device)
        draft_probs = None
        if use_draft and k > 0:
            proposal = draft.propose(rows, k, generator)
            draft_tokens, draft_probs = proposal.tokens, proposal.probs
            k = draft_tokens.shape[1]
        _sync(device)
        drafted = time.perf_counter()
        last = torch.tensor([ctx[-1] for ctx in rows], dtype=torch.long, device=device)
        chunk = torch.cat([last.unsqueeze(-1), draft_tokens], dim=1)  # (B', k+1)
        logits = target_cache.feed_tensor(chunk, torch.full((len(active),), k + 1, device=device))
        target_probs = warped_probs(check_logits(logits, "target"), sampling, dtype=prob_dtype)
        result = verify(draft_tokens, draft_probs, target_probs, generator)
        accepted = result.num_accepted.tolist()
        emitted = result.tokens.tolist()
        verified = time.perf_counter()

        kept, finished = [], []
        for i, r in enumerate(active):
            new = emitted[i][: accepted[i] + 1]
            take = new[: remaining[i]]
            hit = next((j for j, token in enumerate(take) if token in eos), None)
            if hit is not None:
                take = take[: hit + 1]
                reasons[r] = "eos"
            outputs[r].extend(take)
            contexts[r].extend(new)
            kept.append(len(take))
            if hit is not None or len(outputs[r]) >= max_new_tokens:
                finished.append(i)
        steps.append(StepRecord(tuple(active), k, tuple(accepted), tuple(kept), drafted - started, verified - drafted))

        keep = torch.tensor([len(contexts[r]) - 1 for r in active], dtype=torch.long, device=device)
        target_cache.rollback(keep)
        if use_draft:
            draft.rollback(keep)
        if finished:
            gone = set(finished)
            stay = [i for i in range(len(active)) if i not in gone]
            active = [active[i] for i in stay]
            if active:
                index = torch.tensor(stay, dtype=torch.long, device=device)
                target_cache.select(index)
                if use_draft:
                    draft.select(index)
    return GenerationResult(tokens=outputs, finish_reasons=reasons, steps=steps)


def check_decoder_args(target, prompts, max_new_tokens, seed) -> list[list[int]]:
    """Validate the shared decoder call ``(prompts, max_new_tokens, seed)``; return the prompts as lists."""
    _check_int("max_new_tokens", max_new_tokens, 1)
    _check_int("seed", seed, 0)
    return _check_prompts(prompts, model_vocab_size(target))


@dataclass
class SpeculativeDecoder:
    """The reference loop as a decoder: ``decoder(prompts, max_new_tokens, seed) -> new-token lists``.

    The same call signature as the Hugging Face adapters (:mod:`specdec.hf_adapter`),
    so the conformance checks treat every decoder alike.  ``last_result`` keeps
    the per-step statistics of the latest call.
    """

    target: object
    draft: DraftSource | None = None
    num_draft_tokens: int = 4
    sampling: SamplingConfig = SamplingConfig()
    eos_token_id: int | Sequence[int] | None = None
    verifier: str | Callable[..., VerifyResult] = "token"
    prob_dtype: torch.dtype = torch.float32
    last_result: GenerationResult | None = field(default=None, repr=False)

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        self.last_result = generate(
            self.target,
            self.draft,
            prompts,
            max_new_tokens=max_new_tokens,
            num_draft_tokens=self.num_draft_tokens,
            sampling=self.sampling,
            eos_token_id=self.eos_token_id,
            seed=seed,
            verifier=self.verifier,
            prob_dtype=self.prob_dtype,
        )
        return self.last_result.tokens
