"""Law oracles: the reference's law of every next token of an answer, as the engine samples it (docs/reference.md §10).

A :class:`specdec.protocols.LawOracle` answers ``token_laws(prompts, continuations)``: for each answer,
one :class:`TokenLaw` per position - the law of ``continuation[t]`` given ``prompt + continuation[:t]``,
after the warpers the engine applies.  A law is a full row over the vocabulary, or the listed tokens
with their probabilities and one "rest" mass (an engine that reports its top log-probabilities and the
sampled token's).  ``floor``: the TV allowed between the law stated and the one the engine samples, on
average over the tokens of a position (rounding, batch shapes; docs/reference.md §10, P2); ``tolerance``: how far from 1 a
stated law may sum (its rounding) before it is a broken answer.

Oracles for specdec's own laws (exact) and transformers models live here; llama.cpp's and vLLM's server's
with their adapters (:mod:`specdec.adapters.llama_cpp.oracle`, :mod:`specdec.adapters.vllm.server_oracle`).
:func:`rank_cells` turns laws and the emitted tokens into the per-token test's cells (P1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from .._validation import as_float
from ..errors import ContractError
from ..stats.rank_cells import BEYOND, CELLS, OUTSIDE, RANKS
from .target import as_target_law

__all__ = ["MAX_FLOOR", "MAX_TOLERANCE", "TargetLawOracle", "TokenLaw", "TransformersOracle", "answer_batches", "check_laws", "oracle_terms",
           "rank_cells", "row_law"]


@dataclass(frozen=True)
class TokenLaw:
    """One next token's law: ``probs`` over the whole vocabulary (``ids`` None), or over the listed ``ids`` with
    ``rest`` the mass of every other token (an engine's top log-probabilities)."""

    probs: np.ndarray
    ids: np.ndarray | None = None
    rest: float = 0.0

    @classmethod
    def compact(cls, row, keep: int = RANKS, support: int = 256) -> "TokenLaw":
        """A full row (V,) as its tokens of positive probability when there are at most ``support`` of them, else its
        ``keep`` most likely and the rest's mass: what the rank cells need (P1), in little memory for a large
        vocabulary.  A token of probability 0 stays a support violation when the support is listed; beyond
        ``support`` tokens (no truncation) it is counted in the rest, as a partial oracle's would be."""
        row = np.asarray(row, dtype=np.float64)
        positive = np.flatnonzero(row > 0)
        if positive.size <= max(support, keep):
            return cls(row[positive], ids=positive, rest=0.0)
        value = -np.partition(-row, keep - 1)[keep - 1]  # the keep-th largest; its ties by the lower id, as ranks are
        above = np.flatnonzero(row > value)
        top = np.concatenate([above, np.flatnonzero(row == value)[: keep - above.size]])
        others = np.ones(row.size, dtype=bool)
        others[top] = False
        return cls(row[top], ids=top, rest=float(row[others].sum()))


FULL_ROWS_UP_TO = 4 * RANKS  # a vocabulary this small keeps full rows (vectorised cells); larger ones compact laws


def row_law(row) -> TokenLaw:
    """A full row as a TokenLaw: itself for a small vocabulary, else :meth:`TokenLaw.compact`."""
    row = np.asarray(row, dtype=np.float64)
    return TokenLaw(row) if row.size <= FULL_ROWS_UP_TO else TokenLaw.compact(row)


MAX_FLOOR = 0.5  # a floor at or above this allows any law: nothing could be tested
MAX_TOLERANCE = 0.01  # a stated law may sum to 1 within this (rounding of reported log-probabilities); more is a broken law
ROUNDING = 1e-9  # added to every tolerance: a float64 sum of a row is never exactly 1, and a tolerance of 0 means "exact"


def answer_batches(prompts, continuations, key, batch_size: int):
    """The indices of the non-empty answers, grouped by ``key(prompt, continuation)`` (what a forward pass can batch
    together: one prompt length and answer length, or one prompt) and cut into batches of at most ``batch_size``:
    yields ``(key, indices)``.  Oracles that evaluate answers on a model share it."""
    groups: dict = {}
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        if len(c):
            groups.setdefault(key(p, c), []).append(i)
    for group, rows in groups.items():
        for start in range(0, len(rows), batch_size):
            yield group, rows[start:start + batch_size]


def oracle_terms(oracle) -> tuple[float, float, int | None]:
    """A law oracle's ``floor``, ``tolerance`` and ``vocab_size`` (None when it states none), checked before any work:
    a ValueError/TypeError naming the attribute and its value (a floor below 0 or from MAX_FLOOR up, a tolerance
    beyond MAX_TOLERANCE, NaN, a string: a verdict held to such terms would mean nothing)."""
    from .._validation import as_float, as_int

    name = type(oracle).__name__
    floor = as_float(f"oracle.floor ({name})", getattr(oracle, "floor", None), minimum=0.0, maximum=MAX_FLOOR, high_open=True)
    tolerance = as_float(f"oracle.tolerance ({name})", getattr(oracle, "tolerance", None), minimum=0.0, maximum=MAX_TOLERANCE)
    vocab = getattr(oracle, "vocab_size", None)
    return floor, tolerance, None if vocab is None else as_int(f"oracle.vocab_size ({name})", vocab, minimum=1)


def check_laws(laws, continuations, tolerance: float, what: str, vocab: int | None = None) -> None:
    """A ContractError naming ``what`` unless ``laws`` has one list of TokenLaws per continuation, one law per
    position, each a 1-D finite, non-negative row summing to 1 within ``tolerance``: a full row of ``vocab``
    entries (of one length throughout when ``vocab`` is None), or listed ``ids`` - distinct integers in
    [0, ``vocab``), one per probability - with a ``rest`` mass in [0, 1]."""
    if not isinstance(laws, (list, tuple)) or len(laws) != len(continuations):
        raise ContractError(f"{what} returned {type(laws).__name__} of {len(laws) if hasattr(laws, '__len__') else '?'} "
                            f"answers for {len(continuations)}; a LawOracle returns one list of laws per answer")
    width = [vocab]
    for a, (answer, continuation) in enumerate(zip(laws, continuations)):
        if not isinstance(answer, (list, tuple)) or len(answer) != len(continuation):
            raise ContractError(f"{what} returned {len(answer) if hasattr(answer, '__len__') else type(answer).__name__} laws for "
                                f"answer {a} of {len(continuation)} tokens")
        for t, law in enumerate(answer):
            why = _broken(law, tolerance, width)
            if why:
                raise ContractError(f"{what}: answer {a}, position {t}: {why}; a LawOracle returns TokenLaws "
                                    "(docs/reference.md §10)")


def _broken(law, tolerance: float, width: list) -> str | None:
    """Why ``law`` is not a TokenLaw its Protocol allows (None when it is); ``width[0]``: the full rows' length."""
    if not isinstance(law, TokenLaw):
        return f"a {type(law).__name__}, not a TokenLaw"
    try:
        probs = np.asarray(law.probs, dtype=np.float64)
        rest = float(law.rest)
    except (TypeError, ValueError):
        return "probs or rest are not numbers"
    if probs.ndim != 1 or not np.all(np.isfinite(probs)) or (probs < 0).any() or not (0 <= rest <= 1 + tolerance):
        return f"the law is not finite and non-negative, or not 1-D (probs of shape {probs.shape}, rest {rest!r})"
    total = float(probs.sum()) + rest
    if abs(total - 1) > tolerance + ROUNDING:
        return f"the law sums to {total:.12g} (allowed: 1 +- {tolerance:g})"
    if law.ids is None:
        if width[0] is None:
            width[0] = probs.size
        if probs.size != width[0] or rest:
            return f"a full row of {probs.size} entries (and rest {rest:g}) where the vocabulary has {width[0]}"
        return None
    ids = np.asarray(law.ids)
    if ids.shape != probs.shape or (ids.size and ids.dtype.kind not in "iu"):
        return f"ids of shape {ids.shape} and dtype {ids.dtype} for probs of shape {probs.shape} (one integer id per probability)"
    if ids.size and (ids.min() < 0 or (width[0] is not None and ids.max() >= width[0]) or np.unique(ids).size != ids.size):
        return f"listed ids must be distinct and in [0, {width[0] if width[0] is not None else 'V'}), got {ids.tolist()[:8]}"
    return None


def rank_cells(laws: Sequence[TokenLaw], tokens: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cell of each token (T,), the laws' probabilities of every cell (T, CELLS), each token's probability (T,)).

    Ranks order a law's tokens by probability, ties by the lower id; cells are ranks 1..RANKS, "beyond" and
    "outside the listed tokens" (the rest mass of a partial law)."""
    cells = np.empty(len(laws), dtype=np.int64)
    expected = np.zeros((len(laws), CELLS), dtype=np.float64)
    chance = np.empty(len(laws), dtype=np.float64)
    full = [i for i, law in enumerate(laws) if law.ids is None]
    if full:
        _full_rows(np.stack([laws[i].probs for i in full]), np.asarray([tokens[i] for i in full]), full, cells, expected, chance)
    for i, law in enumerate(laws):
        if law.ids is not None:
            cells[i], expected[i], chance[i] = _listed(law, int(tokens[i]))
    return cells, expected, chance


def _full_rows(rows: np.ndarray, tokens: np.ndarray, where: list[int], cells, expected, chance) -> None:
    """Full rows (B, V), vectorised: the top RANKS by partition, each token's rank by counting."""
    batch, vocab = rows.shape
    top = min(RANKS, vocab)
    part = np.argpartition(-rows, top - 1, axis=1)[:, :top] if top < vocab else np.tile(np.arange(vocab), (batch, 1))
    part_probs = np.take_along_axis(rows, part, axis=1)
    order = np.lexsort((part, -part_probs), axis=1)  # by probability, then id
    top_probs = np.take_along_axis(part_probs, order, axis=1)
    p = rows[np.arange(batch), tokens]
    ids = np.arange(vocab)[None, :]
    rank = (rows > p[:, None]).sum(1) + ((rows == p[:, None]) & (ids < tokens[:, None])).sum(1)
    for j, i in enumerate(where):
        cells[i] = min(int(rank[j]), BEYOND)
        expected[i, :top] = top_probs[j]
        expected[i, BEYOND] = max(1.0 - float(top_probs[j].sum()), 0.0)
        chance[i] = p[j]


def _listed(law: TokenLaw, token: int) -> tuple[int, np.ndarray, float]:
    order = np.lexsort((law.ids, -law.probs))
    ids, probs = law.ids[order], law.probs[order]
    row = np.zeros(CELLS)
    row[: min(RANKS, len(probs))] = probs[:RANKS]
    row[BEYOND] = float(probs[RANKS:].sum())
    row[OUTSIDE] = law.rest
    found = np.flatnonzero(ids == token)
    if found.size:
        return min(int(found[0]), BEYOND), row, float(probs[found[0]])
    return OUTSIDE, row, (law.rest if law.rest > 0 else 0.0)


class TargetLawOracle:
    """specdec's own :class:`~specdec.protocols.TargetLaw` (or a transformers model warped with ``sampling``) as an
    oracle: full rows, exact (floor 0 unless given: a subject that samples in float32 from it, say)."""

    def __init__(self, target, sampling=None, *, floor: float = 0.0) -> None:
        self.law = as_target_law(target, sampling)
        self.vocab_size = self.law.vocab_size
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-9

    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        contexts = [tuple(p) + tuple(c[:t]) for p, c in zip(prompts, continuations) for t in range(len(c))]
        rows = self.law.next_token_probs(contexts) if contexts else np.zeros((0, self.vocab_size))
        out, at = [], 0
        for c in continuations:
            out.append([row_law(rows[at + t]) for t in range(len(c))])
            at += len(c)
        return out


class TransformersOracle(TargetLawOracle):
    """A transformers causal LM warped with ``sampling`` (:class:`specdec.SamplingConfig`): every position of an
    answer from one forward pass over prompt + answer (answers of one length batched), warped in float64."""

    def __init__(self, model, sampling=None, *, floor: float = 1e-6, batch_size: int = 64) -> None:
        super().__init__(model, sampling, floor=floor)
        self.model, self.batch_size = model, batch_size

    @torch.no_grad()
    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        from .._hf import model_device
        from ..warpers import warped_probs

        out: list = [None] * len(continuations)
        groups: dict = {}
        for i, (p, c) in enumerate(zip(prompts, continuations)):
            groups.setdefault((len(p), len(c)), []).append(i)
        device = model_device(self.model)
        for (lp, lc), rows in groups.items():
            for start in range(0, len(rows), self.batch_size):
                part = rows[start:start + self.batch_size]
                ids = torch.tensor([list(prompts[i]) + list(continuations[i])[: max(lc - 1, 0)] for i in part], device=device)
                if lc == 0:
                    for i in part:
                        out[i] = []
                    continue
                logits = self.model(input_ids=ids).logits[:, lp - 1 : lp - 1 + lc].double()  # (B, lc, V)
                probs = warped_probs(logits.reshape(-1, logits.shape[-1]), self.law.sampling, dtype=torch.float64)
                probs = probs.reshape(len(part), lc, -1).cpu().numpy()
                for j, i in enumerate(part):
                    out[i] = [row_law(probs[j, t]) for t in range(lc)]
        return out
