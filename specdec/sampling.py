"""Categorical sampling by inverse CDF from explicit uniforms.

Every sampler in ``specdec`` draws through :func:`inverse_cdf`, so randomness is
always an explicit tensor of uniforms in [0, 1) (or a ``torch.Generator`` that
produces them) and never the global RNG.

Weights need not be normalised: the threshold is ``u * total``.  Cumulative
sums run in float64, and the threshold is kept strictly
below the total, so the returned id always has positive weight and is always
``< V`` (B6: a recovered id equal to the vocabulary size).
"""

from __future__ import annotations

import torch

from . import _validation as c
from ._validation import PROB_DTYPES, DeferredChecks, add_probability_checks, check_generator, check_tensor, sum_tolerance


_BLOCK = 256  # block width of the two-level search; rows no longer than 4 blocks use one level


def _search(cdf: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
    """First index i with cdf[i] > threshold, threshold kept strictly below cdf[-1]. (R, N), (R,) -> (R,)."""
    total = cdf[:, -1:]
    # u < 1 already, but u * total may round up to total; stay strictly below it.
    threshold = torch.minimum(threshold.unsqueeze(-1), torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, threshold, right=True).squeeze(-1)


WEIGHT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _check_inverse_cdf(weights, uniforms, values: bool) -> None:
    """Types and shapes always; with ``values`` (one host sync) finite non-negative weights of positive
    finite row totals and uniforms in [0, 1): anything else has no answer (a zero row gave id V, B6)."""
    c.check_tensor("weights", weights, dtypes=WEIGHT_DTYPES, ndim=weights.ndim if isinstance(weights, torch.Tensor) else 1)
    if weights.ndim < 1 or weights.shape[-1] < 1:
        raise ValueError(f"weights must have a non-empty last (vocabulary) dimension, got shape {tuple(weights.shape)}")
    c.check_tensor("uniforms", uniforms, dtypes=c.PROB_DTYPES, ndim=uniforms.ndim if isinstance(uniforms, torch.Tensor) else 0)
    c.check_shape("uniforms", uniforms, weights.shape[:-1], "the weights' rows")
    c.check_same_device(weights=weights, uniforms=uniforms)
    if not values or weights.numel() == 0:
        return
    checks = c.DeferredChecks()
    totals = weights.sum(-1, dtype=torch.float64)
    checks.add(weights.amin() >= 0, lambda: c.describe_bad_entry("weights", weights, "entry"))  # NaN fails too
    checks.add(((totals > 0) & torch.isfinite(totals)).all(), lambda: _describe_bad_total(weights, totals))
    checks.add(((uniforms >= 0) & (uniforms < 1)).all(), lambda: _describe_bad_uniform(uniforms))
    checks.raise_if_failed()


def _describe_bad_total(weights, totals) -> str:
    if not bool(torch.isfinite(weights).all()):
        return c.describe_bad_entry("weights", weights, "entry")
    idx = c.first_index(~((totals > 0) & torch.isfinite(totals)))
    return f"weights row {idx} has total {totals[idx].item()!r}; every row needs a positive, finite total"


def _describe_bad_uniform(uniforms) -> str:
    idx = c.first_index(~((uniforms >= 0) & (uniforms < 1)))
    return f"uniforms must lie in [0, 1), got {uniforms[idx].item()!r} at index {idx}"


def inverse_cdf(weights: torch.Tensor, uniforms: torch.Tensor, *, validate: bool = True) -> torch.Tensor:
    """Index i with cdf[i-1] <= u * total < cdf[i], per row.

    weights: (..., V) float, finite, non-negative, each row with a positive total (need not sum to 1).
    uniforms: (...) float32/float64 in [0, 1), one per row: exactly ``weights.shape[:-1]`` (no broadcast).
    Returns (...) int64, an id of positive weight (< V).  No host synchronisation in the search;
    ``validate=True`` (default) checks the values first at the cost of one sync, ``validate=False``
    (the verifiers' inner step, on rows they built) skips it and never the type and shape checks.

    Long rows are searched in two levels: sums of 256-wide blocks (accumulated in
    float64, without a float64 copy of the row) locate the block, then a float64
    cumulative sum inside that block locates the id.
    """
    _check_inverse_cdf(weights, uniforms, values=validate)
    lead, vocab = weights.shape[:-1], weights.shape[-1]
    rows = weights.reshape(-1, vocab)  # (R, V)
    u = uniforms.reshape(-1).to(torch.float64)  # (R,)
    if rows.shape[0] == 0:  # B = 0: nothing to search (the block view below cannot infer its width)
        return torch.zeros(lead, dtype=torch.int64, device=weights.device)
    if vocab <= 4 * _BLOCK:
        cdf = rows.to(torch.float64).cumsum(-1)  # (R, V)
        return _search(cdf, u * cdf[:, -1]).reshape(lead)
    if vocab % _BLOCK:
        rows = torch.nn.functional.pad(rows, (0, (-vocab) % _BLOCK))
    blocks = rows.view(rows.shape[0], -1, _BLOCK)  # (R, NB, C)
    block_cdf = blocks.sum(-1, dtype=torch.float64).cumsum(-1)  # (R, NB); sums accumulated in float64
    threshold = u * block_cdf[:, -1]
    block = _search(block_cdf, threshold)  # (R,) a block of positive mass
    before = torch.where(block > 0, block_cdf.gather(1, (block - 1).clamp_min(0).unsqueeze(-1)).squeeze(-1), 0.0)
    inner = blocks[torch.arange(rows.shape[0], device=rows.device), block].to(torch.float64).cumsum(-1)  # (R, C)
    offset = _search(inner, threshold - before)  # threshold - before >= 0 by the search above
    return (block * _BLOCK + offset).reshape(lead)


def inverse_cdf_rows(weights: torch.Tensor, row: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """:func:`inverse_cdf` of ``weights[row[b]]`` with ``uniforms[b]``, without forming (B, V).

    weights: (R, V) a small table of rows, each of positive total; row, uniforms: (B,).
    Every sample is searched in every row's float64 CDF ((R, B) thresholds, R is
    small), then its own row's answer is kept: the same thresholds as
    :func:`inverse_cdf`'s one-level search, so the same ids.  No host synchronisation.
    """
    cdf = weights.to(torch.float64).cumsum(-1)  # (R, V)
    total = cdf[:, -1:]  # (R, 1)
    threshold = uniforms.to(torch.float64).unsqueeze(0) * total  # (R, B)
    threshold = torch.minimum(threshold, torch.nextafter(total, torch.zeros_like(total)))
    every = torch.searchsorted(cdf, threshold, right=True)  # (R, B)
    return every.gather(0, row.unsqueeze(0)).squeeze(0)


def sample_categorical(probs: torch.Tensor, generator: torch.Generator, *, validate: bool = True) -> torch.Tensor:
    """Draw one id per row of ``probs`` (..., V) with ``generator``; returns (...) int64."""
    if not isinstance(probs, torch.Tensor):
        raise TypeError(f"probs must be a torch.Tensor, got {type(probs).__name__}")
    check_tensor("probs", probs, dtypes=PROB_DTYPES, ndim=probs.ndim)
    if probs.ndim < 1 or probs.shape[-1] < 1:
        raise ValueError(f"probs must have a non-empty last (vocabulary) dimension, got shape {tuple(probs.shape)}")
    check_generator(generator, probs.device)
    if validate:
        checks = DeferredChecks()
        add_probability_checks(checks, "probs", probs, sum_tolerance(probs.dtype))
        checks.raise_if_failed()
    uniforms = torch.rand(probs.shape[:-1], dtype=torch.float64, device=probs.device, generator=generator)
    return inverse_cdf(probs, uniforms, validate=False)  # probs checked above (or on request, not)
