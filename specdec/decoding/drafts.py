"""Draft sources for the decoding loop (docs/reference.md §1), behind :class:`specdec.protocols.DraftSource`.

A draft source proposes up to K tokens per batch row and says how they were drawn:
``Proposal.probs`` is the (B, K, V) distribution each token was really sampled
from (warped with the same :class:`SamplingConfig` as the target, E6), or ``None``
for a deterministic drafter, whose q is the point mass on its token (E5).  Any
deterministic proposal is lossless under the verifier, so a row with nothing to
propose may be padded with any token.

* :class:`ModelDraft` - a causal LM with the target's vocabulary and its own ragged
  KV cache; ``greedy=True`` proposes argmax tokens as point masses.
* :class:`NgramDraft` - prompt lookup: the continuation of the earliest earlier
  occurrence of the context's last n-gram (n from ``max_ngram_size`` down to
  ``min_ngram_size``), as transformers' ``prompt_lookup_num_tokens`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._validation import as_int
from .._hf import check_causal_lm, check_logits, model_device, model_vocab_size
from ..laws.target import ModelLaw
from ..sampling import sample_categorical
from ..warpers import SamplingConfig, warped_probs
from .kvcache import RaggedCache

GREEDY = SamplingConfig(temperature=0)


@dataclass(frozen=True)
class Proposal:
    tokens: torch.Tensor  # (B, K') int64, K' <= the K asked for
    probs: torch.Tensor | None  # (B, K', V) the law each token was drawn from; None = point masses (E5)


class ModelDraft:
    """Draft tokens sampled from a causal LM (q = its warped distribution), or its argmax when ``greedy``.

    ``sampling`` overrides the loop's config for the draft only (the verifier then
    compares the target's warped law with this draft's warped law, E6).
    """

    def __init__(self, model, *, greedy: bool = False, sampling: SamplingConfig | None = None) -> None:
        check_causal_lm("model", model)
        if not isinstance(greedy, bool):
            raise TypeError(f"greedy must be a bool, got {type(greedy).__name__}")
        if sampling is not None and not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig or None, got {type(sampling).__name__}")
        self.model = model
        self.greedy = greedy
        self.own_sampling = sampling
        self.vocab_size = model_vocab_size(model)
        self._cache: RaggedCache | None = None

    def proposal_law(self, sampling: SamplingConfig) -> ModelLaw:
        """The law a draft token is drawn from after a context, under the loop's ``sampling``."""
        return ModelLaw(self.model, GREEDY if self.greedy else (self.own_sampling or sampling))

    def start(self, contexts, *, sampling, prob_dtype, device) -> None:
        if model_device(self.model) != torch.device(device):
            raise ValueError(f"draft model is on {model_device(self.model)} but the target is on {device}")
        self._sampling = self.own_sampling or sampling
        self._prob_dtype = prob_dtype
        self._cache = RaggedCache(self.model, len(contexts), device)

    @torch.no_grad()
    def propose(self, contexts, num_tokens, generator) -> Proposal:
        cache = self._cache
        fed = cache.fed.tolist()
        logits = check_logits(cache.feed([ctx[start:] for ctx, start in zip(contexts, fed)])[:, -1], "draft")
        tokens, probs = [], []
        for i in range(num_tokens):
            token, q = self._draw(logits, generator)
            tokens.append(token)
            probs.append(q)
            if i + 1 < num_tokens:
                logits = check_logits(cache.feed_tensor(token.unsqueeze(-1), torch.ones_like(token))[:, -1], "draft")
        return Proposal(torch.stack(tokens, 1), None if probs[0] is None else torch.stack(probs, 1))

    def _draw(self, logits: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One drafted token per row and the law it was drawn from (None: a point mass, E5)."""
        if self.greedy:
            return logits.argmax(-1), None  # lowest id among ties (E4)
        q = warped_probs(logits, self._sampling, dtype=self._prob_dtype)
        return sample_categorical(q, generator, validate=False), q

    def rollback(self, keep) -> None:
        self._cache.rollback(keep)

    def select(self, rows) -> None:
        self._cache.select(rows)


class NgramDraft:
    """Prompt-lookup drafting (deterministic: q = point mass, E5).

    For n = max_ngram_size .. min_ngram_size, find the earliest earlier occurrence of
    the context's last n tokens and propose the up to K tokens that followed it.
    Rows without a match, or with a shorter continuation, are padded by repeating
    their last token (any deterministic padding is lossless); when no row matches,
    nothing is proposed and the step is autoregressive.
    """

    vocab_size = None  # proposes ids from the context only

    def __init__(self, max_ngram_size: int = 3, min_ngram_size: int = 1) -> None:
        self.max_ngram_size = as_int("max_ngram_size", max_ngram_size, minimum=1)
        self.min_ngram_size = as_int("min_ngram_size", min_ngram_size, minimum=1)
        if self.min_ngram_size > self.max_ngram_size:
            raise ValueError(f"min_ngram_size {self.min_ngram_size} exceeds max_ngram_size {self.max_ngram_size}")

    def proposal_law(self, sampling) -> None:
        """None: the i-th proposed token is a lookup of the whole context, not a per-prefix law."""
        return None

    def start(self, contexts, *, sampling, prob_dtype, device) -> None:
        self._device = torch.device(device)

    def lookup(self, context: list[int], num_tokens: int) -> list[int]:
        """The continuation proposed for one context (possibly empty).  Plain list scans:
        contexts are short and this runs once per row and step."""
        size = len(context)
        for n in range(min(self.max_ngram_size, size - 1), self.min_ngram_size - 1, -1):
            pattern = context[size - n :]
            start = 0
            while True:
                try:  # earlier occurrences only: start + n <= size - 1, so a continuation exists
                    start = context.index(pattern[0], start, size - n)
                except ValueError:
                    break
                if context[start : start + n] == pattern:
                    return context[start + n : start + n + num_tokens]
                start += 1
        return []

    def propose(self, contexts, num_tokens, generator) -> Proposal:
        found = [self.lookup(ctx, num_tokens) for ctx in contexts]
        width = max((len(f) for f in found), default=0)
        rows = [f + [(f or ctx)[-1]] * (width - len(f)) for f, ctx in zip(found, contexts)]
        tokens = torch.tensor(rows, dtype=torch.long).reshape(len(contexts), width)
        return Proposal(tokens.to(self._device), None)

    def rollback(self, keep) -> None:
        """Nothing to roll back: the lookup reads the contexts."""

    def select(self, rows) -> None:
        """Nothing to select: the lookup reads the contexts."""
