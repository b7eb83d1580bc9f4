"""Exact laws of token-tree verification (docs/reference.md §3, F14-F15), enumerated in float64.

A tree step is given by the topology ``parents`` (as :func:`specdec.verify.tree.tree_shape` reads it),
``target_fn(path)`` and ``draft_fn(path)`` - the target's and the draft's next-token laws after the
path of tokens from the root - and how children are proposed: ``"iid"`` (the children of a node are
i.i.d. draws from its draft law, F14) or ``"distinct"`` (its m children are the draft's m most likely
tokens, lowest id first among ties, as point masses, F15).

* :func:`tree_shape` - the topology (children per node, depths), the one reader of ``parents``;
* :func:`tree_step_law` - the law of the tokens one step emits (accepted path, then one token);
* :func:`tree_decoder_law` - the law of the first L tokens of a decoder that repeats tree steps:
  for a lossless scheme, the target's own sequence law (F35);
* :func:`tree_step_moments` - E[T] and Var[T] of the tokens per step (F27's analogue for trees).

Everything is plain Python over float64 numpy rows, written from the rule and sharing nothing with
the verifier, so "sampler = law" tests compare two independent computations.  Enumeration visits
V^m assignments of a node's m i.i.d. children and follows accepted children only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .._validation import as_choice, as_int
from .token import residual_is_empty

CHILDREN = ("iid", "distinct")
MAX_ASSIGNMENTS = 200_000  # child assignments enumerated in one step at most


def _row(fn, name: str, path: tuple, vocab: int | None) -> np.ndarray:
    row = np.asarray(fn(path), dtype=np.float64)
    if row.ndim != 1 or (vocab is not None and row.shape[0] != vocab) or not np.all(np.isfinite(row)) or (row < 0).any() \
            or abs(row.sum() - 1) > 1e-9:
        raise ValueError(f"{name}({path}) must return a probability vector{'' if vocab is None else f' of length {vocab}'}, got {row!r}")
    return row


@dataclass(frozen=True)
class TreeShape:
    """The topology of a draft tree: children per node (-1 padded), depth of every node, max depth D
    (the accepted tokens a step can emit before its final token) and max width W."""

    parents: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    depth: tuple[int, ...]

    @property
    def num_nodes(self) -> int:
        return len(self.parents)

    @property
    def max_depth(self) -> int:
        return max(self.depth)

    @property
    def width(self) -> int:
        return max((len(c) for c in self.children), default=0)

    def child_table(self, device) -> torch.Tensor:
        """(N, max(W, 1)) int64 child ids per node, -1 where there is none."""
        width = max(self.width, 1)
        return torch.tensor([list(c) + [-1] * (width - len(c)) for c in self.children], dtype=torch.int64, device=device)


def tree_shape(parents) -> TreeShape:
    """Check ``parents`` (a sequence or a CPU tensor of N ints: -1 for node 0, then p < n) and
    derive the topology.  The topology is metadata, like K: it is read on the host."""
    if isinstance(parents, torch.Tensor):
        if parents.device.type != "cpu" or parents.ndim != 1 or parents.is_floating_point():
            raise ValueError(f"parents must be a 1-D integer CPU tensor or a sequence of ints, got {parents.dtype} "
                             f"{tuple(parents.shape)} on {parents.device}")
        parents = parents.tolist()
    if isinstance(parents, (str, bytes)) or not hasattr(parents, "__len__") or len(parents) == 0:
        raise ValueError(f"parents must be a non-empty sequence of ints, got {parents!r}")
    values = [as_int(f"parents[{n}]", p, minimum=-1) for n, p in enumerate(parents)]
    if values[0] != -1:
        raise ValueError(f"parents[0] must be -1 (node 0 is the root), got {values[0]}")
    children: list[list[int]] = [[] for _ in values]
    depth = [0] * len(values)
    for n, p in enumerate(values[1:], start=1):
        if not 0 <= p < n:
            raise ValueError(f"parents[{n}] = {p}: every node's parent must come before it (0 <= parent < {n})")
        children[p].append(n)
        depth[n] = depth[p] + 1
    return TreeShape(tuple(values), tuple(tuple(c) for c in children), tuple(depth))


def tree_step_law(parents, target_fn: Callable, draft_fn: Callable, *, children: str = "iid",
                  update_residual: bool = True, dtype=None) -> dict[tuple[int, ...], float]:
    """Exact law {emitted tokens: probability} of one tree step (see the module docstring).

    ``update_residual=False`` keeps r = p after a rejected sibling (the lossy L6); ``dtype``: the
    precision the rows are given in, for E2's rule (default float64).
    """
    as_choice("children", children, CHILDREN)
    kids_of = tree_shape(parents).children
    dtype = dtype or torch.float64
    law: dict[tuple[int, ...], float] = {}
    budget = [MAX_ASSIGNMENTS]

    def emit(path: tuple, row: np.ndarray, weight: float) -> None:
        for y in np.flatnonzero(row > 0):
            key = path + (int(y),)
            law[key] = law.get(key, 0.0) + weight * float(row[y])

    def walk(node: int, path: tuple, weight: float) -> None:
        p = _row(target_fn, "target_fn", path, None)
        kids = kids_of[node]
        if not kids:
            emit(path, p, weight)  # a leaf: the bonus row
            return
        q = _row(draft_fn, "draft_fn", path, p.shape[0])
        if children == "distinct":
            order = sorted(range(q.shape[0]), key=lambda x: (-q[x], x))[: len(kids)]
            assignments = [(tuple(order), 1.0)]
        else:
            support = [int(x) for x in np.flatnonzero(q > 0)]
            budget[0] -= len(support) ** len(kids)
            if budget[0] < 0:
                raise ValueError(f"tree_step_law: more than {MAX_ASSIGNMENTS:,} child assignments to enumerate; use a smaller tree or V")
            assignments = [(xs, float(np.prod([q[x] for x in xs]))) for xs in _product(support, len(kids))]
        for xs, w in assignments:
            r, reach = p / p.sum(), 1.0
            for kid, x in zip(kids, xs):
                q_x = 1.0 if children == "distinct" else q[x]
                accept = min(1.0, r[x] / q_x)
                if accept > 0:
                    walk(kid, path + (x,), weight * w * reach * accept)
                reach *= 1 - accept
                if reach <= 0:
                    break
                point = np.zeros_like(q)
                point[x] = 1.0
                residual = np.clip(r - (point if children == "distinct" else q), 0, None) if update_residual else r
                if update_residual and not residual_is_empty(float(residual.sum()), dtype):
                    r = residual / residual.sum()
            if reach > 0:
                if not update_residual:  # L6: the final token from norm((p - q)+) of the last child
                    last = np.clip(p - (point if children == "distinct" else q), 0, None)
                    r = last / last.sum() if not residual_is_empty(float(last.sum()), dtype) else p
                emit(path, r, weight * w * reach)

    walk(0, (), 1.0)
    return law


def _product(values: list[int], repeat: int):
    if repeat == 0:
        yield ()
        return
    for head in values:
        for tail in _product(values, repeat - 1):
            yield (head,) + tail


def tree_decoder_law(parents, target_fn: Callable, draft_fn: Callable, length: int, *, children: str = "iid",
                     update_residual: bool = True) -> dict[tuple[int, ...], float]:
    """Exact law of the first ``length`` tokens of a decoder that repeats tree steps from the
    context ``()``: a step's emitted tokens are appended and the next step starts after them."""

    @functools.lru_cache(maxsize=None)
    def from_context(context: tuple, left: int) -> tuple[tuple[tuple[int, ...], float], ...]:
        shifted_target = lambda path: target_fn(context + path)  # noqa: E731
        shifted_draft = lambda path: draft_fn(context + path)  # noqa: E731
        out: dict[tuple[int, ...], float] = {}
        for emitted, mass in tree_step_law(parents, shifted_target, shifted_draft, children=children,
                                           update_residual=update_residual).items():
            if len(emitted) >= left:
                out[emitted[:left]] = out.get(emitted[:left], 0.0) + mass
                continue
            for rest, more in from_context(context + emitted, left - len(emitted)):
                key = emitted + rest
                out[key] = out.get(key, 0.0) + mass * more
        return tuple(out.items())

    return dict(from_context((), int(length)))


def tree_step_moments(parents, target_fn: Callable, draft_fn: Callable, *, children: str = "iid") -> tuple[float, float]:
    """(E[T], Var[T]) of the tokens one tree step emits (accepted path + 1)."""
    law = tree_step_law(parents, target_fn, draft_fn, children=children)
    mean = sum(len(e) * m for e, m in law.items())
    return mean, sum(len(e) ** 2 * m for e, m in law.items()) - mean * mean
