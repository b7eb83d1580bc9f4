"""Exact laws of token verification on a chain of conditional tables (docs/reference.md §6, F26-F27).

A chain is given by ``target_fn(prefix)`` and ``draft_fn(prefix)``: the target's and
the draft's next-token probabilities after the drafted ``prefix`` (a tuple of ids,
``()`` at the context).  Everything is enumerated in float64:

* :func:`acceptance_profile` - A_i, the probability of accepting at least i drafts (F26);
* :func:`tokens_per_step_moments` - E[T], E[T^2], Var[T] of the tokens per step (F27);
* :func:`emitted_block_law` - the exact law of the whole emitted block;
* :func:`table_sequence_law` - the law of the first L tokens of a table-driven target,
  the reference a decoder driven by any lossless verifier must follow (F35).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from .._validation import as_int, as_law

ProbFn = Callable[[tuple], "torch.Tensor | np.ndarray | Sequence[float]"]
MAX_ENUMERATED_DRAFT_TOKENS = 32  # enumeration over up to V^K prefixes: K beyond this is out of reach
# Draft prefixes of positive acceptance mass visited at most (each calls both functions once: about
# 2 s at the cap on a 2-core CPU); the count is what pruning leaves, so point-mass drafts reach any K.
MAX_ENUMERATED_PREFIXES = 20_000


def _call(fn: ProbFn, name: str, prefix: tuple, vocab: int | None) -> torch.Tensor:
    if not callable(fn):
        raise TypeError(f"{name} must be callable (prefix -> probabilities), got {type(fn).__name__}")
    probs = as_law(f"{name}({prefix})", fn(prefix), ndim=1)
    if vocab is not None and probs.shape[0] != vocab:
        raise ValueError(f"{name}({prefix}) must return a vector of length {vocab}, got shape {tuple(probs.shape)}")
    return probs


def _accepted_prefixes(target_fn: ProbFn, draft_fn: ProbFn, num_draft_tokens: int, caller: str):
    """Yield (prefix, prod_j min(p_j, q_j)(x_j), target row, draft row or None) for every
    draft prefix of length 0..K with positive acceptance mass (F26); a ValueError past
    :data:`MAX_ENUMERATED_PREFIXES` of them."""
    vocab = None
    stack = [((), 1.0)]
    visited = 0
    while stack:
        prefix, mass = stack.pop()
        visited += 1
        if visited > MAX_ENUMERATED_PREFIXES:
            raise ValueError(
                f"{caller}: more than {MAX_ENUMERATED_PREFIXES:,} draft prefixes of positive acceptance mass to enumerate "
                f"(V = {vocab}, num_draft_tokens={num_draft_tokens}: up to V^K); use a smaller num_draft_tokens"
            )
        target = _call(target_fn, "target_fn", prefix, vocab)
        vocab = target.shape[0]
        if len(prefix) == num_draft_tokens:
            yield prefix, mass, target, None
            continue
        draft = _call(draft_fn, "draft_fn", prefix, vocab)
        yield prefix, mass, target, draft
        kept = torch.minimum(target, draft).tolist()
        for token in range(vocab - 1, -1, -1):
            if kept[token] > 0:
                stack.append((prefix + (token,), mass * kept[token]))


def acceptance_profile(target_fn: ProbFn, draft_fn: ProbFn, num_draft_tokens: int) -> torch.Tensor:
    """(F26) A_i = sum over x_1..x_i of prod_{j<=i} min(p_j(x_j), q_j(x_j)), i = 0..K; float64 (K+1,).

    Cost: one call of each function per draft prefix of positive acceptance mass, up to V^K of them;
    K <= 32 and at most :data:`MAX_ENUMERATED_PREFIXES` (20,000) prefixes, else a ValueError.
    """
    num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=0, maximum=MAX_ENUMERATED_DRAFT_TOKENS)
    profile = torch.zeros(num_draft_tokens + 1, dtype=torch.float64)
    for prefix, mass, _, _ in _accepted_prefixes(target_fn, draft_fn, num_draft_tokens, "acceptance_profile"):
        profile[len(prefix)] += mass
    return profile


def tokens_per_step_moments(profile) -> tuple[float, float, float]:
    """(F27) From A_0..A_K: E[T] = sum A_i, E[T^2] = sum (2i+1) A_i, Var = E[T^2] - E[T]^2.

    ``profile`` must be a profile: A_0 = 1 and 1 >= A_1 >= ... >= A_K >= 0 (to 1e-12).
    """
    if isinstance(profile, torch.Tensor) and profile.is_complex():
        raise TypeError(f"profile must be real, got dtype {profile.dtype}")
    a = torch.as_tensor(np.asarray(profile.cpu() if isinstance(profile, torch.Tensor) else profile))
    if a.is_complex() or a.dtype == torch.bool:
        raise TypeError(f"profile must be real numbers, got dtype {a.dtype}")
    a = a.to(torch.float64)
    if a.ndim != 1 or a.numel() < 1:
        raise ValueError(f"profile must be a non-empty vector A_0..A_K, got shape {tuple(a.shape)}")
    if not bool(torch.isfinite(a).all()) or abs(float(a[0]) - 1) > 1e-12 or bool((a < -1e-12).any()):
        raise ValueError(f"profile must start at A_0 = 1 with entries in [0, 1], got {a.tolist()}")
    if bool((a[1:] > a[:-1] + 1e-12).any()):
        raise ValueError(f"profile must be non-increasing (A_i = P(at least i accepted)), got {a.tolist()}")
    i = torch.arange(a.numel(), dtype=torch.float64)
    mean = float(a.sum())
    second = float(((2 * i + 1) * a).sum())
    return mean, second, max(second - mean * mean, 0.0)


def emitted_block_law(target_fn: ProbFn, draft_fn: ProbFn, num_draft_tokens: int) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted block (x_1..x_n, y) of one token-verification step.

    P(x_1..x_n, y) = prod_{j<=n} min(p_j, q_j)(x_j) * (p_{n+1} - q_{n+1})+(y)   for n < K,
    P(x_1..x_K, y) = prod_{j<=K} min(p_j, q_j)(x_j) * p_{K+1}(y)               (bonus).
    (The rejection at n+1 has probability 1 - beta, and the residual is (p-q)+/(1-beta).)
    The same enumeration and limits as :func:`acceptance_profile`.
    """
    num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=0, maximum=MAX_ENUMERATED_DRAFT_TOKENS)
    law: dict[tuple[int, ...], float] = {}
    for prefix, mass, target, draft in _accepted_prefixes(target_fn, draft_fn, num_draft_tokens, "emitted_block_law"):
        last = target if draft is None else (target - draft).clamp_min(0)
        for token, weight in enumerate(last.tolist()):
            if weight > 0:
                law[prefix + (token,)] = mass * weight
    return law


def prefix_offset(vocab: int, length):
    """Rows before the prefixes of ``length`` in a flat table of all prefixes: sum_{j<length} V^j."""
    return length if vocab == 1 else (vocab**length - 1) // (vocab - 1)


def table_sequence_law(target_table: torch.Tensor, vocab: int, length: int) -> np.ndarray:
    """Exact law (V^L,) of the first L tokens sampled from a table-driven target (index = base-V code).

    ``target_table`` (rows, V): the row of prefix u (|u| = l, base-V code c) is at
    ``prefix_offset(V, l) + c``.
    """
    law = torch.ones(1, dtype=torch.float64)
    for t in range(length):
        start = prefix_offset(vocab, t)
        rows = target_table[start : start + vocab**t].to(torch.float64)  # (V^t, V)
        law = (law.unsqueeze(-1) * rows).reshape(-1)
    return law.numpy()
