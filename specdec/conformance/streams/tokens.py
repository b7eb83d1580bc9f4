"""Every emitted token against the reference's law of it: the stream of :func:`specdec.conformance.check_tokens`.

A chunk asks the subject (a :class:`specdec.protocols.Decoder`) for answers of ``length`` tokens to the
prompts (interleaved, in up to four calls whose seeds derive from the chunk's), reads them by the decoder
contract, and asks the law oracle for the law of every emitted token given its prefix - each piece while
the subject answers the next (a server and its oracle, or two engines, work side by side).  Each token adds one count to its
rank cell (:mod:`specdec.stats.rank_cells`) and its law's cell probabilities to the expectations, by
position and by whether a draft was verified at its position (a :class:`specdec.protocols.DraftMarker` says; else
unknown).  A token of probability 0 is a support violation, kept with its prompt and prefix.  No law is
known before sampling, so n (answers per prompt) is re-planned after every chunk from the pooled law of
the cells so far, as two samples re-plan from their combined counts.
"""

from __future__ import annotations

import math
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...laws.oracles import check_laws, rank_cells
from ...protocols import DraftMarker
from ...stats.rank_cells import CELLS
from ..calls import CallGuard
from ..checks import planned_sample_size
from ..decoder_output import read_rows
from ..engine import ChunkKey, Stream

PIECES = 4  # a chunk is asked in up to this many calls, each scored by the oracle while the subject answers the next
MARKS = ("undrafted", "drafted", "unknown")  # was a draft verified at the token's position: no (bonus, no draft), yes, not said

__all__ = ["MARKS", "TokenTally", "token_stream"]


class TokenTally:
    """Observed counts and expectations per (position, mark, cell); support violations by (prompt, prefix, token)."""

    def __init__(self, length: int) -> None:
        self.observed = np.zeros((length, len(MARKS), CELLS), dtype=np.int64)
        self.expected = np.zeros((length, len(MARKS), CELLS), dtype=np.float64)
        self.violations: Counter = Counter()

    @property
    def tokens(self) -> int:
        return int(self.observed.sum())

    def add(self, chunk) -> None:
        observed, expected, violations = chunk
        self.observed += observed
        self.expected += expected
        self.violations.update(violations)

    def state(self) -> dict:
        return {"observed": self.observed.tolist(), "expected": self.expected.tolist(),
                "violations": [[p, list(prefix), token, k] for (p, prefix, token), k in self.violations.items()]}

    def restore(self, state: dict) -> None:
        self.observed = np.asarray(state["observed"], dtype=np.int64)
        self.expected = np.asarray(state["expected"], dtype=np.float64)
        self.violations = Counter({(int(p), tuple(prefix), int(token)): int(k) for p, prefix, token, k in state["violations"]})


def _marks(subject, rows: int) -> list[list[bool]] | None:
    if not isinstance(subject, DraftMarker):
        return None
    marks = subject.last_drafted()
    return marks if isinstance(marks, list) and len(marks) == rows else None


def score(rows_prompt: list[int], prompts, tested, laws, marks, length: int):
    """One chunk's (observed, expected, violations) from its answers, their laws and draft marks."""
    flat_laws, tokens, positions, kinds, owners = [], [], [], [], []
    for row, (answer, answer_laws) in enumerate(zip(tested, laws)):
        for t, (token, law) in enumerate(zip(answer, answer_laws)):
            flat_laws.append(law)
            tokens.append(token)
            positions.append(t)
            kinds.append(2 if marks is None else int(bool(marks[row][t])) if t < len(marks[row]) else 2)
            owners.append(row)
    observed = np.zeros((length, len(MARKS), CELLS), dtype=np.int64)
    expected = np.zeros((length, len(MARKS), CELLS), dtype=np.float64)
    violations: Counter = Counter()
    if not flat_laws:
        return observed, expected, violations
    cells, probs, chance = rank_cells(flat_laws, tokens)
    np.add.at(observed, (positions, kinds, cells), 1)
    np.add.at(expected, (positions, kinds), probs)
    for i in np.flatnonzero(chance <= 0):
        row, t = owners[i], positions[i]
        violations[(rows_prompt[row], tuple(tested[row][:t]), int(tokens[i]))] += 1
    return observed, expected, violations


def token_stream(subject, oracle, prompts: list[list[int]], *, length: int, eos: frozenset, vocab: int | None, tv: float | None,
                 max_n: int, per_call: int, guard: CallGuard, oracle_guard: CallGuard) -> Stream:
    """Answers of ``length`` tokens to ``prompts``, ``per_call`` per prompt and call, each token scored by ``oracle``."""
    from ..token_evaluation import evaluate_tokens

    def piece(groups: int, seed: int):
        """Ask the subject for ``groups`` answers per prompt; returns what the oracle needs to score them."""
        rows = [p for _ in range(groups) for p in prompts]
        describe = lambda: f"a call of {len(rows):,} rows ({groups:,} per prompt x {len(prompts)}), max_new_tokens={length}, seed={seed}"  # noqa: E731
        outputs = guard.call(subject, (rows, length, seed), describe)
        tested = guard.read(lambda: read_rows(outputs, len(rows), length, eos, asked=length, vocab=vocab), describe)
        return rows, tested, _marks(subject, len(rows)), seed

    def scored(rows, tested, marks, seed):
        rows_prompt = [i % len(prompts) for i in range(len(rows))]
        oracle_call = lambda: f"token_laws of {len(rows):,} answers of up to {length} tokens (seed {seed})"  # noqa: E731
        laws = oracle_guard.call(oracle.token_laws, (rows, [list(a) for a in tested]), oracle_call)
        oracle_guard.read(lambda: check_laws(laws, tested, oracle.tolerance, "the law oracle"), oracle_call)
        return score(rows_prompt, prompts, tested, laws, marks, length)

    def draw(m: int, key: ChunkKey):
        """The chunk's answers in up to PIECES calls; the oracle scores each piece while the subject answers the next."""
        seed = key.int_seed()
        sizes = [len(part) for part in np.array_split(np.arange(m), min(PIECES, m))]
        seeds = [seed] if len(sizes) == 1 else [int(s) & (2**63 - 1) for s in np.random.SeedSequence([seed, m]).generate_state(len(sizes), np.uint64)]
        observed, expected, violations = 0, 0, Counter()
        with ThreadPoolExecutor(1, thread_name_prefix="specdec-oracle") as pool:
            pending = []
            for groups, piece_seed in zip(sizes, seeds):
                pending.append(pool.submit(scored, *piece(groups, piece_seed)))
            for future in pending:
                o, e, v = future.result()
                observed, expected = observed + o, expected + e
                violations.update(v)
        return observed, expected, violations

    marked = isinstance(subject, DraftMarker)

    def evaluate(tally: TokenTally, alpha):
        return evaluate_tokens(tally, prompts, alpha, oracle.floor, strata(length), marked)

    def needed(tally: TokenTally, drawn: int, alpha):
        if drawn == 0 or tally.tokens == 0:
            return min(per_call, max_n)
        pooled = tally.expected.sum((0, 1))
        tokens = planned_sample_size(pooled / pooled.sum(), max(tv - oracle.floor, tv / 2), alpha,
                                     max_n=max_n * length * len(prompts))
        if tokens <= tally.tokens:
            return drawn
        per_answer = tally.tokens / (drawn * len(prompts))
        return min(max_n, max(drawn + 1, math.ceil(tokens / (per_answer * len(prompts)))))

    checks = 1 + len(strata(length)) + (2 if marked else 0)
    return Stream(f"per-token, {len(prompts)} prompt(s), {length} tokens each", [], checks, 1, lambda: TokenTally(length), draw,
                  evaluate, needed=needed if tv is not None else None, pilot=False, samples_per_draw=len(prompts), chunk=per_call)


def strata(length: int) -> list[tuple[int, int]]:
    """Position groups [start, stop) of the localising checks: 1, 2, 3-4, 5-8, ... (0-based starts), at most length."""
    out, start = [], 0
    while start < length:
        stop = 1 if start == 0 else min(2 * start, length)
        out.append((start, stop))
        start = stop
    return out
