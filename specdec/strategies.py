"""Public Hypothesis strategies for probability vectors, (target, draft) pairs and verifier inputs.

Import from other projects' test suites::

    from specdec.strategies import probability_pairs, verifier_inputs

Values are float64 torch tensors (cast them as needed).  Large vectors are built
from a drawn seed with numpy rather than element by element, so V up to 50,000
stays fast; every kind is reachable at every size.

Vector kinds: ``dirichlet`` (concentration log-uniform in [1e-3, 1e3]: from near
one-hot to near uniform), ``one_hot``, ``uniform``, ``sparse`` (many exact
zeros), ``tiny`` (some masses around 1e-30).  Pair relations: ``independent``,
``equal`` (p == q, E2), ``disjoint`` (supports do not meet: beta = 0),
``one_hot`` (both one-hot), ``near`` (q a small perturbation of p).

This module needs ``hypothesis`` (the ``test`` extra); ``import specdec`` does not import it.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from ._validation import as_int

VECTOR_KINDS = ("dirichlet", "one_hot", "uniform", "sparse", "tiny")
PAIR_RELATIONS = ("independent", "equal", "disjoint", "one_hot", "near")
MAX_VOCAB = 50_000


def _check_sizes(min_size: int, max_size: int) -> None:
    min_size = as_int("min_size", min_size, minimum=1, maximum=MAX_VOCAB)
    max_size = as_int("max_size", max_size, minimum=1, maximum=MAX_VOCAB)
    if min_size > max_size:
        raise ValueError(f"need min_size <= max_size, got min_size={min_size!r}, max_size={max_size!r}")


def _check_choice(name: str, chosen, allowed) -> tuple:
    chosen = tuple(chosen)
    bad = [c for c in chosen if c not in allowed]
    if not chosen or bad:
        raise ValueError(f"{name} must be a non-empty subset of {allowed}, got {chosen!r}")
    return chosen


def _dirichlet(rng: np.random.Generator, size: int, concentration: float) -> np.ndarray:
    # log Gamma(a) = log Gamma(a+1) + log(U)/a: stable for tiny concentrations (no all-zero draw).
    log_w = np.log(rng.standard_gamma(concentration + 1, size)) + np.log(rng.random(size)) / concentration
    w = np.exp(log_w - log_w.max())
    return w / w.sum()


def _vector(kind: str, size: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "one_hot":
        w = np.zeros(size)
        w[rng.integers(size)] = 1.0
        return w
    if kind == "uniform":
        return np.full(size, 1.0 / size)
    w = _dirichlet(rng, size, 10 ** rng.uniform(-3, 3))
    if kind == "sparse":
        w[rng.random(size) < rng.uniform(0.3, 0.95)] = 0.0
        if w.sum() == 0:
            w[rng.integers(size)] = 1.0
    elif kind == "tiny":
        w[rng.random(size) < 0.5] = 10.0 ** rng.uniform(-32, -28)
    return w / w.sum()


def _to_tensor(w: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(w / w.sum())


@st.composite
def probability_vectors(draw, *, min_size: int = 1, max_size: int = 50, kinds=VECTOR_KINDS) -> torch.Tensor:
    """A float64 probability vector of length in [min_size, max_size] of one of ``kinds``."""
    _check_sizes(min_size, max_size)
    kinds = _check_choice("kinds", kinds, VECTOR_KINDS)
    size = draw(st.integers(min_size, max_size))
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _to_tensor(_vector(kind, size, rng))


def _pair(relation: str, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    kinds = VECTOR_KINDS
    if relation == "equal":
        p = _vector(str(rng.choice(kinds)), size, rng)
        return p, p.copy()
    if relation == "one_hot":
        return _vector("one_hot", size, rng), _vector("one_hot", size, rng)
    if relation == "disjoint" and size >= 2:
        side = rng.permutation(size) < rng.integers(1, size)  # two non-empty halves
        p = np.where(side, _vector(str(rng.choice(kinds)), size, rng) + 1e-300, 0.0)
        q = np.where(~side, _vector(str(rng.choice(kinds)), size, rng) + 1e-300, 0.0)
        return p / p.sum(), q / q.sum()
    if relation == "near":
        p = _vector(str(rng.choice(kinds)), size, rng)
        eps = 10 ** rng.uniform(-6, -1)
        return p, (1 - eps) * p + eps * _vector("dirichlet", size, rng)
    return _vector(str(rng.choice(kinds)), size, rng), _vector(str(rng.choice(kinds)), size, rng)


@st.composite
def probability_pairs(
    draw, *, min_size: int = 1, max_size: int = 50, relations=PAIR_RELATIONS
) -> tuple[torch.Tensor, torch.Tensor]:
    """A (target_probs, draft_probs) pair of float64 vectors of one length, related as one of ``relations``."""
    _check_sizes(min_size, max_size)
    relations = _check_choice("relations", relations, PAIR_RELATIONS)
    size = draw(st.integers(min_size, max_size))
    relation = draw(st.sampled_from(relations))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    target, draft = _pair(relation, size, rng)
    return _to_tensor(target), _to_tensor(draft)


@st.composite
def verifier_inputs(
    draw,
    *,
    max_batch: int = 4,
    max_draft: int = 4,
    min_size: int = 1,
    max_size: int = 50,
    relations=PAIR_RELATIONS,
    deterministic_draft: bool | None = None,
) -> dict:
    """Valid inputs of :func:`specdec.verify_tokens`, float64, as a dict:

    ``draft_tokens`` (B, K) int64 drawn from the draft rows, ``draft_probs`` (B, K, V)
    or None (deterministic drafter; drawn when ``deterministic_draft`` is None),
    ``target_probs`` (B, K+1, V).  B in [1, max_batch], K in [0, max_draft].
    """
    _check_sizes(min_size, max_size)
    relations = _check_choice("relations", relations, PAIR_RELATIONS)
    max_batch = as_int("max_batch", max_batch, minimum=1)
    max_draft = as_int("max_draft", max_draft, minimum=0)
    batch = draw(st.integers(1, max_batch))
    num_draft = draw(st.integers(0, max_draft))
    size = draw(st.integers(min_size, max_size))
    if deterministic_draft is None:
        deterministic_draft = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    target = np.empty((batch, num_draft + 1, size))
    draft = np.empty((batch, num_draft, size))
    for b in range(batch):
        for i in range(num_draft + 1):
            target[b, i], q = _pair(str(rng.choice(relations)), size, rng)
            if i < num_draft:
                draft[b, i] = q
    tokens = np.array([[rng.choice(size, p=draft[b, i]) for i in range(num_draft)] for b in range(batch)])
    return {
        "draft_tokens": torch.from_numpy(tokens.reshape(batch, num_draft)).long(),
        "draft_probs": None if deterministic_draft else torch.from_numpy(draft / draft.sum(-1, keepdims=True)),
        "target_probs": torch.from_numpy(target / target.sum(-1, keepdims=True)),
    }
