"""Sampling warpers: logits -> warped logits -> probabilities, shared by draft and target.

SPEC E6: the verifier must see the *warped* distributions p~ = W_t(target logits)
and q~ = W_d(draft logits), and the draft must really be drawn from q~.  Keeping
one implementation for both models removes PEERS B3/B4 (raw vs processed
distributions) by construction.

Semantics follow transformers' logits warpers exactly (checked against them in
``properties/test_warpers.py``), applied in transformers' order:
temperature -> top-k -> top-p -> min-p.

* temperature T: logits / T.  T = 0 is greedy (E4): only the argmax stays finite,
  lowest id wins ties, so the probabilities are an exact one-hot.
* top-k: drop every logit strictly below the k-th largest (ties with the k-th
  are all kept, so more than k may survive); k = max(top_k, min_tokens_to_keep).
* top-p: sort ascending with the same ``torch.sort`` call as transformers, drop
  tokens whose cumulative probability is <= 1 - top_p, always keep the last
  ``min_tokens_to_keep``.  Ties at the boundary follow torch.sort's order, as in
  transformers.
* min-p: drop tokens with probability < min_p * max probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_LOGIT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling configuration applied identically to draft and target logits."""

    temperature: float = 1.0  # 0 means greedy (E4); must be finite and >= 0
    top_k: int | None = None  # None or 0: off (transformers treats 0 as off too)
    top_p: float | None = None  # in (0, 1]; None or 1.0: off
    min_p: float | None = None  # in [0, 1]; None: off
    min_tokens_to_keep: int = 1  # floor for top-k / top-p / min-p, as in transformers

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {t!r}")
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0):
            raise ValueError(f"top_k must be None or an integer >= 0, got {self.top_k!r}")
        if self.top_p is not None and not (isinstance(self.top_p, (int, float)) and 0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be None or in (0, 1], got {self.top_p!r}")
        if self.min_p is not None and not (isinstance(self.min_p, (int, float)) and 0.0 <= self.min_p <= 1.0):
            raise ValueError(f"min_p must be None or in [0, 1], got {self.min_p!r}")
        if isinstance(self.min_tokens_to_keep, bool) or not isinstance(self.min_tokens_to_keep, int) or self.min_tokens_to_keep < 1:
            raise ValueError(f"min_tokens_to_keep must be an integer >= 1, got {self.min_tokens_to_keep!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _check_logits(logits) -> None:
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if logits.dtype not in _LOGIT_DTYPES:
        raise TypeError(f"logits must be a floating tensor, got dtype {logits.dtype}")
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits must have a non-empty last (vocabulary) dimension, got shape {tuple(logits.shape)}")
    if logits.numel() and bool(torch.isnan(logits).any()):
        raise ValueError("logits contain NaN")


def greedy_mask(logits: torch.Tensor) -> torch.Tensor:
    """(E4) -inf everywhere except the argmax; torch.argmax returns the lowest id among ties."""
    keep = torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).bool()
    return logits.masked_fill(~keep, -math.inf)


def top_k_mask(logits: torch.Tensor, top_k: int, min_tokens_to_keep: int = 1) -> torch.Tensor:
    k = min(max(top_k, min_tokens_to_keep), logits.shape[-1])
    kth_largest = torch.topk(logits, k).values[..., -1:]
    return logits.masked_fill(logits < kth_largest, -math.inf)


def top_p_mask(logits: torch.Tensor, top_p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    sorted_logits, order = torch.sort(logits, descending=False)  # same call as transformers (tie order)
    cumulative = sorted_logits.softmax(-1).cumsum(-1)
    remove_sorted = cumulative <= (1 - top_p)
    remove_sorted[..., -min_tokens_to_keep:] = False
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, -math.inf)


def min_p_mask(logits: torch.Tensor, min_p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    probs = logits.softmax(-1)
    remove = probs < min_p * probs.amax(-1, keepdim=True)
    keep_idx = torch.topk(probs, min(min_tokens_to_keep, probs.shape[-1]), dim=-1).indices
    remove = remove.scatter(-1, keep_idx, False)
    return logits.masked_fill(remove, -math.inf)


def warp_logits(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Apply ``config`` to logits (..., V); filtered entries become -inf."""
    _check_logits(logits)
    if not isinstance(config, SamplingConfig):
        raise TypeError(f"config must be a SamplingConfig, got {type(config).__name__}")
    if config.greedy:
        return greedy_mask(logits)
    keep = config.min_tokens_to_keep
    if config.temperature != 1.0:
        logits = logits / config.temperature
    if config.top_k:
        logits = top_k_mask(logits, config.top_k, keep)
    if config.top_p is not None and config.top_p < 1.0:
        logits = top_p_mask(logits, config.top_p, keep)
    if config.min_p is not None:
        logits = min_p_mask(logits, config.min_p, keep)
    return logits


def warped_probs(logits: torch.Tensor, config: SamplingConfig, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Probabilities (..., V) in ``dtype`` of the warped distribution; exact one-hot when greedy."""
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    warped = warp_logits(logits, config)
    if bool(torch.isposinf(warped).any()):
        raise ValueError("logits contain +inf; the warped distribution is undefined")
    return warped.to(dtype).softmax(-1)
