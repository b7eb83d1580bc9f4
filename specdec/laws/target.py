"""Target laws: the next-token distribution after a context (:class:`specdec.protocols.TargetLaw`).

* :class:`ModelLaw` - a transformers causal LM with the sampling warpers applied (E6),
  scored without a KV cache (nothing a decoder under test relies on is shared with
  the reference), in float64.
* :class:`FunctionLaw` - any function ``context -> probabilities``: a table, a
  closed form, a user's model.
* :func:`as_target_law` - turns what a user passes into one of these.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

import numpy as np
import torch

from .._validation import as_int, as_law
from .._hf import check_logits, is_causal_lm, model_device, model_vocab_size
from ..protocols import TargetLaw
from ..warpers import SamplingConfig, warped_probs


def as_token_ids(name: str, value, vocab_size: int) -> tuple[int, ...]:
    """One prompt or context: a non-empty 1-D sequence of ids in [0, V) as a tuple of ints.

    Lists and tuples of integers, 1-D numpy arrays and 1-D torch tensors of an integer dtype;
    strings, bools, floats (even integral ones) and anything not 1-D are refused.  The one rule
    for prompts: :func:`specdec.generate`, :func:`specdec.sequence_law` and every TargetLaw use it.
    """
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.ndim != 1:
            raise TypeError(f"{name} must be a 1-D sequence of token ids, got an array of shape {tuple(value.shape)}")
        value = value.tolist()  # Python ints (floats stay floats and are refused below)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of token ids, got {type(value).__name__}")
    if len(value) == 0:
        raise ValueError(f"{name} is empty: the target needs at least one token to condition on")
    return tuple(as_int(f"{name} token", t, minimum=0, maximum=vocab_size - 1) for t in value)


def check_contexts(contexts, vocab_size: int) -> list[tuple[int, ...]]:
    """Contexts as tuples of ints in [0, V), each by :func:`as_token_ids` (the prompt rule)."""
    if isinstance(contexts, (str, bytes)) or not isinstance(contexts, Sequence):
        raise TypeError(f"contexts must be a sequence of token-id sequences, got {type(contexts).__name__}")
    return [as_token_ids(f"contexts[{i}]", context, vocab_size) for i, context in enumerate(contexts)]  # the prompt rule


class ModelLaw:
    """p(. | context) of a transformers causal LM after ``sampling``'s warpers, float64."""

    def __init__(self, model, sampling: SamplingConfig | None = None, *, batch_size: int = 4096) -> None:
        if not is_causal_lm(model):
            raise TypeError(f"model must be a transformers causal LM, got {type(model).__name__}")
        if sampling is not None and not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a SamplingConfig, got {type(sampling).__name__}")
        self.model = model
        self.sampling = sampling or SamplingConfig()
        self.vocab_size = model_vocab_size(model)
        self.batch_size = as_int("batch_size", batch_size, minimum=1)

    @torch.no_grad()
    def next_token_probs(self, contexts) -> np.ndarray:
        contexts = check_contexts(contexts, self.vocab_size)
        out = np.empty((len(contexts), self.vocab_size), dtype=np.float64)
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, context in enumerate(contexts):
            by_length[len(context)].append(i)
        device = model_device(self.model)
        for rows in by_length.values():
            for start in range(0, len(rows), self.batch_size):
                part = rows[start : start + self.batch_size]
                ids = torch.tensor([contexts[i] for i in part], dtype=torch.long, device=device)
                logits = check_logits(self.model(input_ids=ids).logits[:, -1], "target")
                out[part] = warped_probs(logits.double(), self.sampling, dtype=torch.float64).cpu().numpy()
        return out


class FunctionLaw:
    """A target law from ``fn(context: tuple[int, ...]) -> probabilities (V,)``, checked on every call."""

    def __init__(self, fn: Callable, vocab_size: int) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable (context -> probabilities), got {type(fn).__name__}")
        self.fn = fn
        self.vocab_size = as_int("vocab_size", vocab_size, minimum=1)

    def next_token_probs(self, contexts) -> np.ndarray:
        contexts = check_contexts(contexts, self.vocab_size)
        values = [self.fn(context) for context in contexts]
        if not values:
            return np.empty((0, self.vocab_size))
        stacked = _stacked(values, self.vocab_size)
        if stacked is not None:
            try:  # every row checked at once: a per-row check costs more than most functions do
                return as_law("fn(contexts)", stacked, ndim=2).numpy()
            except (TypeError, ValueError):
                pass  # the row at fault is named below
        return np.stack([self._row(context, value).numpy() for context, value in zip(contexts, values)])

    def _row(self, context: tuple[int, ...], value) -> torch.Tensor:
        row = as_law(f"fn({context})", value, ndim=1)
        if row.shape[0] != self.vocab_size:
            raise ValueError(f"fn({context}) returned {row.shape[0]} probabilities, expected vocab_size={self.vocab_size}")
        return row


def _stacked(values: list, vocab_size: int) -> np.ndarray | None:
    """``values`` as one (n, V) array when every one is a plain array or sequence of V numbers of one dtype (the rows
    then share the tolerance each would have alone); None otherwise (tensors, ragged or mixed rows: checked one by
    one)."""
    arrays = []
    for value in values:
        if isinstance(value, torch.Tensor):
            return None
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            return None
        if array.shape != (vocab_size,) or (arrays and array.dtype != arrays[0].dtype):
            return None
        arrays.append(array)
    return np.stack(arrays)


def as_target_law(target, sampling: SamplingConfig | None = None) -> TargetLaw:
    """A :class:`TargetLaw` from a TargetLaw (``sampling`` must then be None: it is already
    warped) or a transformers causal LM (warped with ``sampling``, default: none)."""
    if isinstance(target, TargetLaw):
        if sampling is not None:
            raise ValueError("sampling applies to a model target; a TargetLaw already is the warped law (pass sampling=None)")
        return target
    if is_causal_lm(target):
        return ModelLaw(target, sampling)
    raise TypeError(
        f"target must be a TargetLaw (vocab_size and next_token_probs(contexts); specdec.protocols.TargetLaw) "
        f"or a transformers causal LM, got {type(target).__name__}"
    )
