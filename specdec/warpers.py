"""Sampling warpers: logits -> warped logits -> probabilities, shared by draft and target.

E6 (docs/reference.md): the verifier must see the *warped* distributions p~ = W_t(target logits)
and q~ = W_d(draft logits), and the draft must really be drawn from q~.  Keeping
one implementation for both models removes B3/B4 (raw vs processed
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

from ._validation import as_float, as_int

_LOGIT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling configuration applied identically to draft and target logits.

    Numbers are accepted as numpy and torch accept them (numpy scalars included)
    and stored as Python numbers; bools are refused.
    """

    temperature: float = 1.0  # 0 means greedy (E4); finite and >= 0
    top_k: int | None = None  # None or 0: off (transformers treats 0 as off too)
    top_p: float | None = None  # in (0, 1]; None or 1.0: off
    min_p: float | None = None  # in [0, 1]; None: off
    min_tokens_to_keep: int = 1  # floor for top-k / top-p / min-p, as in transformers

    def __post_init__(self) -> None:
        fields = {
            "temperature": as_float("temperature", self.temperature, minimum=0.0),
            "top_k": None if self.top_k is None else as_int("top_k", self.top_k, minimum=0),
            "top_p": None if self.top_p is None else as_float("top_p", self.top_p, minimum=0.0, maximum=1.0, low_open=True),
            "min_p": None if self.min_p is None else as_float("min_p", self.min_p, minimum=0.0, maximum=1.0),
            "min_tokens_to_keep": as_int("min_tokens_to_keep", self.min_tokens_to_keep, minimum=1),
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _check_logits_metadata(logits) -> None:
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if logits.is_meta:
        raise ValueError("logits is a meta tensor (no values); pass a tensor on a real device")
    if logits.dtype not in _LOGIT_DTYPES:
        raise TypeError(f"logits must be a floating tensor, got dtype {logits.dtype}")
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits must have a non-empty last (vocabulary) dimension, got shape {tuple(logits.shape)}")


def _check_logits(logits) -> None:
    _check_logits_metadata(logits)
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


def _scale(logits: torch.Tensor, temperature: float, *, robust: bool) -> torch.Tensor:
    """logits / T as transformers computes it; ``robust``: (logits - row max) / T in float64,
    which cannot overflow (finite rows become <= 0, -inf stays -inf)."""
    if robust:
        shifted = logits.double()
        return (shifted - shifted.amax(-1, keepdim=True)) / temperature
    return logits / temperature


def _warp(logits: torch.Tensor, config: SamplingConfig, *, robust: bool = False) -> torch.Tensor:
    if config.greedy:
        return greedy_mask(logits)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()  # a legal temperature must not overflow a half-precision range
    keep = config.min_tokens_to_keep
    info = torch.finfo(logits.dtype)
    extreme = not (info.tiny <= config.temperature <= info.max)  # T itself not representable: 1e-300, 1e300
    if config.temperature != 1.0 or robust:
        logits = _scale(logits, config.temperature, robust=robust or extreme)
    if config.top_k:
        logits = top_k_mask(logits, config.top_k, keep)
    if config.top_p is not None and config.top_p < 1.0:
        logits = top_p_mask(logits, config.top_p, keep)
    if config.min_p is not None:
        logits = min_p_mask(logits, config.min_p, keep)
    return logits


def warp_logits(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Apply ``config`` to logits (..., V); filtered entries become -inf.

    Half-precision logits are warped in float32; a temperature outside the logits'
    dtype range (e.g. 1e-300) is applied in float64 after subtracting the row
    maximum.  +inf in the result marks a logit / temperature that overflowed:
    :func:`warped_probs` resolves it.
    """
    _check_logits(logits)
    if not isinstance(config, SamplingConfig):
        raise TypeError(f"config must be a SamplingConfig, got {type(config).__name__}")
    return _warp(logits, config)


def warped_probs(logits: torch.Tensor, config: SamplingConfig, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Probabilities (..., V) in ``dtype`` of the warped distribution; exact one-hot when greedy.

    Never NaN: +inf logits and rows that are -inf everywhere are a ValueError
    naming the entry or the row; a logit / temperature that overflows (to +inf, or a
    whole row to -inf) is recomputed in float64 from the row maximum (the limit
    distribution, not a NaN).  The
    softmax runs in float64 when either the logits or ``dtype`` is float64.
    One host synchronisation.
    """
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    _check_logits_metadata(logits)
    if not isinstance(config, SamplingConfig):
        raise TypeError(f"config must be a SamplingConfig, got {type(config).__name__}")
    greedy = config.greedy  # E4: the exact one-hot at the argmax, written directly (no mask, no softmax over V)
    warped = None if greedy else _warp(logits, config)
    if logits.numel():
        checks = [torch.isnan(logits).any(), torch.isposinf(logits).any(), (logits.amax(-1) == -math.inf).any()]
        if not greedy:
            checks.append(torch.isposinf(warped).any() | (warped.amax(-1) == -math.inf).any())  # logits / T overflowed
        flags = torch.stack(checks).tolist() + [False] * greedy  # the one host sync
        if flags[0]:
            raise ValueError("logits contain NaN")
        if flags[1]:
            index = tuple(int(i) for i in torch.nonzero(torch.isposinf(logits))[0])
            raise ValueError(f"logits contain +inf at index {index}; the warped distribution is undefined")
        if flags[2]:
            row = tuple(int(i) for i in torch.nonzero(logits.amax(-1) == -math.inf)[0])
            raise ValueError(f"logits row {row} is -inf everywhere: no token has positive probability")
        if flags[3]:  # logits / temperature overflowed (to +inf, or a whole row to -inf): recompute without overflow
            warped = _warp(logits, config, robust=True)
    if greedy:  # the lowest id among ties, as greedy_mask
        return torch.zeros(logits.shape, dtype=dtype, device=logits.device).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    compute = torch.float64 if torch.float64 in (warped.dtype, dtype) else torch.float32
    return warped.to(compute).softmax(-1).to(dtype)
