"""What the engine feeds a subject: verifier cases, chain cases and multi-draft cases.

Each case says which fault classes its checks can see (``sees``; the ids are
defined in docs/reference.md).

* :class:`TokenCase` - one verification step with K >= 2 positions whose target and
  draft rows differ per position (the bonus row too), so a verifier that reads the
  wrong row changes the first emitted token's law.  Checks: the first emitted token
  vs p_1 (F4) and the acceptance at position 1 vs its optimum (F1; E5 for point masses).
* :class:`ChainCase` - random conditional tables p(. | prefix), q(. | prefix): a
  decoder driven by the verifier emits L tokens; their law is compared with the
  exact chain law (F35) and a deviation is located by position and prefix (F36).
* :class:`MultiDraftCase` - k drafts at one position: the emitted token vs p and the
  acceptance vs the optimum alpha*_k (F7-F10), or p(children) for distinct children.
* :class:`TreeCase` - a draft tree over random conditional tables: a decoder driven by a tree
  verifier emits L tokens (F35, located by F36); the acceptance at the root vs its optimum.

``drafter="point_mass"`` draws the drafts from the draft rows but passes
``draft_probs=None``: the deterministic-drafter path (E5), for which the emitted
law is still the target's and the optimum acceptance is sum_x q(x) p(x).
``dtype`` is the precision the subject receives (float32 or float64).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .._validation import PROB_DTYPES, as_choice, as_float, as_int, as_law
from ..laws.chain import prefix_offset, table_sequence_law
from ..laws.transport import multidraft_optimum

DRAFTERS = ("sampled", "point_mass")
SEES_FIRST_TOKEN = (
    "the acceptance rule and the residual at position 1 (F2-F4; B1, B3, B11, B12, B14, L1-L5), the empty-residual "
    "fallback (E2), ids outside the support or vocabulary (E3, B6), and which rows are read at position 1"
)
SEES_ACCEPTANCE = "acceptance above the optimum 1 - TV (F1; B1, B13, L1-L3), and an inefficient acceptance rule"
SEES_CHAIN = (
    "every position and context: which row is read at each position and prefix, the bonus row, the residual "
    "after earlier accepts, dependence between positions and rows (B13) (F35, located by F36)"
)
SEES_MULTIDRAFT = "the multi-draft rule's output law (F11-F15; L6: a missing residual update)"
SEES_MULTIDRAFT_ACCEPTANCE = "acceptance above the proven optimum alpha*_k (F7-F10) or p(children) (F15)"
SEES_TREE = (
    "every node of the tree and every context: the residual update between siblings (L6), which node's row a "
    "child reads, the bonus row at a leaf, the path kept after an accept (F14, F15; F35, located by F36)"
)


def _rows(name: str, values, ndim: int) -> torch.Tensor:
    return as_law(name, values, ndim=ndim)


def _check_dtype(dtype) -> None:
    if dtype not in PROB_DTYPES:
        raise TypeError(f"dtype must be one of {PROB_DTYPES}, got {dtype}")


def _in_dtype(rows: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Rows as the subject sees them in ``dtype`` (renormalised there)."""
    cast = rows.to(dtype)
    return cast / cast.sum(-1, keepdim=True)


def _positions(row: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` rows from one: rolls by 0, 1, ... places, then mixes of neighbouring rolls."""
    vocab = row.shape[0]
    rows = [row.roll(i) if i < vocab else (row.roll(i % vocab) + row.roll((i + 1) % vocab)) / 2 for i in range(count)]
    return torch.stack(rows)


def exact_law(rows: torch.Tensor) -> torch.Tensor:
    """The law the subject's rows define: their values in float64, renormalised in float64."""
    rows = rows.double()
    return rows / rows.sum(-1, keepdim=True)


@dataclass(frozen=True)
class TokenCase:
    """One verification step: target rows (K+1, V) with the bonus row last, draft rows (K, V)."""

    name: str
    target_rows: torch.Tensor
    draft_rows: torch.Tensor
    drafter: str = "sampled"
    dtype: torch.dtype = torch.float64
    note: str = ""

    def __post_init__(self) -> None:
        target = _rows(f"{self.name}: target_rows", self.target_rows, 2)
        draft = _rows(f"{self.name}: draft_rows", self.draft_rows, 2)
        if draft.shape[0] < 1 or target.shape != (draft.shape[0] + 1, draft.shape[1]):
            raise ValueError(f"{self.name}: target_rows must be (K+1, V) and draft_rows (K, V) with K >= 1, got "
                             f"{tuple(target.shape)} and {tuple(draft.shape)}")
        as_choice("drafter", self.drafter, DRAFTERS)
        _check_dtype(self.dtype)
        object.__setattr__(self, "target_rows", _in_dtype(target, self.dtype))  # what the subject receives
        object.__setattr__(self, "draft_rows", _in_dtype(draft, self.dtype))

    @classmethod
    def from_pair(cls, name, target_probs, draft_probs, *, num_draft_tokens: int = 2, **kwargs) -> "TokenCase":
        """The pair (p, q) at position 1; positions 2..K and the bonus row hold the pair rolled
        by 1..K places (half-and-half mixes of two rolls once the rolls run out, V <= K), so
        every position keeps the pair's character but has its own rows."""
        target = as_law("target_probs", target_probs, ndim=1)
        draft = as_law("draft_probs", draft_probs, ndim=1)
        k = as_int("num_draft_tokens", num_draft_tokens, minimum=1)
        return cls(name, _positions(target, k + 1), _positions(draft, k), **kwargs)

    @property
    def vocab(self) -> int:
        return self.target_rows.shape[1]

    @property
    def num_draft_tokens(self) -> int:
        return self.draft_rows.shape[0]

    def first_token_law(self) -> np.ndarray:
        return exact_law(self.target_rows[0]).numpy()

    def optimum(self) -> float:
        """The largest acceptance at position 1 of any lossless verifier (F1; E5 for point masses)."""
        p, q = exact_law(self.target_rows[0]), exact_law(self.draft_rows[0])
        if self.drafter == "point_mass":  # accept x with probability at most p(x); x ~ q
            return float((p * q).sum())
        return float(torch.minimum(p, q).sum())


@dataclass(frozen=True)
class ChainCase:
    """Random peaked conditional tables from a seed: p(. | prefix) and q(. | prefix) of vocabulary V."""

    name: str
    vocab: int
    num_draft_tokens: int
    length: int
    seed: int
    sharpness: float = 1.5
    drafter: str = "sampled"
    dtype: torch.dtype = torch.float64
    note: str = ""
    _tables: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "vocab", as_int("vocab", self.vocab, minimum=2, maximum=64))
        object.__setattr__(self, "num_draft_tokens", as_int("num_draft_tokens", self.num_draft_tokens, minimum=0, maximum=8))
        object.__setattr__(self, "length", as_int("length", self.length, minimum=1, maximum=8))
        object.__setattr__(self, "seed", as_int("seed", self.seed, minimum=0))
        object.__setattr__(self, "sharpness", as_float("sharpness", self.sharpness, minimum=0.0))
        as_choice("drafter", self.drafter, DRAFTERS)
        _check_dtype(self.dtype)
        if self.vocab ** (self.length + self.num_draft_tokens) > 2_000_000:
            raise ValueError(f"{self.name}: V^(L+K) = {self.vocab}^{self.length + self.num_draft_tokens} table rows is too many")

    @property
    def max_prefix(self) -> int:
        """Longest prefix a step looks up: it starts at most at L - 1 and reads K + 1 rows."""
        return self.length - 1 + self.num_draft_tokens

    def tables(self, role: str) -> torch.Tensor:
        """Rows in the case's dtype (what the subject receives) for every prefix of length 0..max_prefix;
        prefix u of length l, base-V code c, is row ``prefix_offset(V, l) + c``.  numpy's
        PCG64 makes the tables the same on every machine."""
        if role not in self._tables:
            rng = np.random.default_rng([self.seed, {"target": 0, "draft": 1}[role]])
            rows = prefix_offset(self.vocab, self.max_prefix + 1)
            logits = self.sharpness * rng.standard_normal((rows, self.vocab))
            weights = np.exp(logits - logits.max(-1, keepdims=True))
            self._tables[role] = _in_dtype(torch.from_numpy(weights / weights.sum(-1, keepdims=True)), self.dtype)
        return self._tables[role]

    def sequence_law(self) -> np.ndarray:
        """Exact law (V^L,) of the first L tokens (F35): what a lossless verifier's decoder emits."""
        return table_sequence_law(exact_law(self.tables("target")), self.vocab, self.length)

    def conditional(self, prefix: tuple[int, ...]) -> list[float]:
        code = 0
        for token in prefix:
            code = code * self.vocab + token
        return exact_law(self.tables("target")[prefix_offset(self.vocab, len(prefix)) + code]).tolist()


@dataclass(frozen=True)
class MultiDraftCase:
    """k drafts at one position: i.i.d. from q (``children="iid"``) or q's top-k tokens as distinct
    deterministic children (``children="distinct"``, draft_probs None: F15)."""

    name: str
    target_probs: torch.Tensor
    draft_probs: torch.Tensor
    num_drafts: int
    children: str = "iid"
    dtype: torch.dtype = torch.float64
    note: str = ""

    def __post_init__(self) -> None:
        target = _rows(f"{self.name}: target_probs", self.target_probs, 1)
        draft = _rows(f"{self.name}: draft_probs", self.draft_probs, 1)
        if target.shape != draft.shape:
            raise ValueError(f"{self.name}: target_probs and draft_probs differ in shape")
        object.__setattr__(self, "num_drafts", as_int("num_drafts", self.num_drafts, minimum=1, maximum=target.shape[0] if self.children == "distinct" else None))
        as_choice("children", self.children, ("iid", "distinct"))
        _check_dtype(self.dtype)
        object.__setattr__(self, "target_probs", _in_dtype(target, self.dtype))
        object.__setattr__(self, "draft_probs", _in_dtype(draft, self.dtype))

    @property
    def vocab(self) -> int:
        return self.target_probs.shape[0]

    def child_tokens(self) -> torch.Tensor:
        """The distinct children: the draft's k most likely tokens (lowest id first among ties)."""
        return torch.argsort(-self.draft_probs.double(), stable=True)[: self.num_drafts]

    def optimum(self) -> float:
        target, draft = exact_law(self.target_probs), exact_law(self.draft_probs)
        if self.children == "distinct":
            return float(target[self.child_tokens()].sum())
        return multidraft_optimum(target, draft, self.num_drafts)


@dataclass(frozen=True)
class TreeCase:
    """A draft tree (``parents``, as :func:`specdec.laws.tree.tree_shape` reads it) over random
    conditional tables from a seed, as :class:`ChainCase`'s; ``children`` "iid" (a node's children
    drawn i.i.d. from its draft row, F14) or "distinct" (its m children the draft row's m most likely
    tokens, lowest id first among ties, point masses, F15)."""

    name: str
    vocab: int
    parents: tuple[int, ...]
    length: int
    seed: int
    children: str = "iid"
    sharpness: float = 1.5
    dtype: torch.dtype = torch.float64
    note: str = ""

    def __post_init__(self) -> None:
        from ..laws.tree import tree_shape

        shape = tree_shape(self.parents)
        object.__setattr__(self, "parents", shape.parents)
        object.__setattr__(self, "vocab", as_int("vocab", self.vocab, minimum=2, maximum=64))
        object.__setattr__(self, "length", as_int("length", self.length, minimum=1, maximum=8))
        as_choice("children", self.children, ("iid", "distinct"))
        if self.children == "distinct" and shape.width > self.vocab:
            raise ValueError(f"{self.name}: a node has {shape.width} distinct children but V = {self.vocab}")
        _check_dtype(self.dtype)
        object.__setattr__(self, "_chain", ChainCase(self.name, self.vocab, min(shape.max_depth, 8), self.length, self.seed,
                                                     sharpness=self.sharpness, dtype=self.dtype))

    @property
    def depth(self) -> int:
        return max(self._shape().depth)

    def _shape(self):
        from ..laws.tree import tree_shape

        return tree_shape(self.parents)

    def tables(self, role: str) -> torch.Tensor:
        """The rows of every prefix of length 0..L-1+D, indexed as :meth:`ChainCase.tables`."""
        return self._chain.tables(role)

    def sequence_law(self) -> np.ndarray:
        return self._chain.sequence_law()

    def conditional(self, prefix: tuple[int, ...]) -> list[float]:
        return self._chain.conditional(prefix)

    def root_optimum(self) -> float:
        """The acceptance bound at the root (the first step's first accept): alpha*_m for m i.i.d.
        children (F9-F10), p(children) for distinct ones (F15)."""
        p, q = exact_law(self.tables("target")[0]), exact_law(self.tables("draft")[0])
        m = len(self._shape().children[0])
        if self.children == "distinct":
            return float(p[torch.argsort(-q, stable=True)[:m]].sum())
        return multidraft_optimum(p, q, m)
