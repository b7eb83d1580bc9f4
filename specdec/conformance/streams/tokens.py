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
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...errors import ContractError
from ...laws.oracles import check_laws
from ...protocols import DraftMarker
from ..calls import CallGuard
from ..checks import planned_sample_size
from ..decoder_output import read_rows
from ..engine import ChunkKey, Stream
from .token_tally import MARKS, TokenTally, score

PIECES = 4  # a chunk is asked in up to this many calls, each scored by the oracle while the subject answers the next

__all__ = ["MARKS", "TokenTally", "read_marks", "token_stream"]


def read_marks(marks, tested) -> list[list[bool]]:
    """``last_drafted()``'s answer, read by its Protocol: one list per row of the call, of bools (or 0/1), one per
    emitted token at least; a ContractError otherwise (a string "no" is not False, and a mark cannot be guessed)."""
    if not isinstance(marks, (list, tuple)) or len(marks) != len(tested):
        got = f"{len(marks)} rows" if isinstance(marks, (list, tuple)) else type(marks).__name__
        raise ContractError(f"last_drafted() returned {got} for a call of {len(tested)} rows; a DraftMarker returns one "
                            "list of bools per row")
    out = []
    for row, (mark, answer) in enumerate(zip(marks, tested)):
        if hasattr(mark, "tolist") and not isinstance(mark, (list, tuple)):
            mark = mark.tolist()
        if not isinstance(mark, (list, tuple)) or len(mark) < len(answer) \
                or not all(isinstance(m, (bool, np.bool_)) or (isinstance(m, (int, np.integer)) and m in (0, 1)) for m in mark):
            raise ContractError(f"last_drafted() returned {str(mark)[:60]} for row {row} of {len(answer)} tested tokens; "
                                "a DraftMarker returns one bool per emitted token")
        out.append([bool(m) for m in mark])
    return out


def token_stream(subject, oracle, prompts: list[list[int]], *, length: int, eos: frozenset, vocab: int | None, tv: float | None,
                 max_n: int, per_call: int, guard: CallGuard, oracle_guard: CallGuard, terms: tuple[float, float]) -> Stream:
    """Answers of ``length`` tokens to ``prompts``, ``per_call`` per prompt and call, each token scored by ``oracle``
    (``terms``: its checked floor and tolerance)."""
    from ..token_evaluation import evaluate_tokens

    floor, tolerance = terms
    marked = marks_drafts(subject)

    def piece(groups: int, seed: int):
        """Ask the subject for ``groups`` answers per prompt; returns what the oracle needs to score them."""
        rows = [p for _ in range(groups) for p in prompts]
        describe = lambda: f"a call of {len(rows):,} rows ({groups:,} per prompt x {len(prompts)}), max_new_tokens={length}, seed={seed}"  # noqa: E731
        outputs = guard.call(subject, (rows, length, seed), describe)
        tested = guard.read(lambda: read_rows(outputs, len(rows), length, eos, asked=length, vocab=vocab), describe)
        if not marked:
            return rows, tested, None, seed
        marking = lambda: f"last_drafted() after {describe()}"  # noqa: E731
        marks = guard.call(subject.last_drafted, (), marking)
        return rows, tested, guard.read(lambda: read_marks(marks, tested), marking), seed

    def scored(rows, tested, marks, seed):
        rows_prompt = [i % len(prompts) for i in range(len(rows))]
        oracle_call = lambda: f"token_laws of {len(rows):,} answers of up to {length} tokens (seed {seed})"  # noqa: E731
        laws = oracle_guard.call(oracle.token_laws, (rows, [list(a) for a in tested]), oracle_call)
        oracle_guard.read(lambda: check_laws(laws, tested, tolerance, "the law oracle", vocab), oracle_call)
        return score(rows_prompt, tested, laws, marks, length)

    def draw(m: int, key: ChunkKey):
        """The chunk's answers in up to PIECES calls; the oracle scores each piece while the subject answers the next."""
        seed = key.int_seed()
        sizes = [len(part) for part in np.array_split(np.arange(m), min(PIECES, m))]
        seeds = [seed] if len(sizes) == 1 else [int(s) & (2**63 - 1) for s in np.random.SeedSequence([seed, m]).generate_state(len(sizes), np.uint64)]
        chunk = TokenTally(length, len(prompts))
        with ThreadPoolExecutor(1, thread_name_prefix="specdec-oracle") as pool:
            pending = []
            for groups, piece_seed in zip(sizes, seeds):
                pending.append(pool.submit(scored, *piece(groups, piece_seed)))
            for future in pending:
                chunk.add(future.result())
        return chunk

    def evaluate(tally: TokenTally, alpha):
        return evaluate_tokens(tally, prompts, alpha, floor, strata(length), marked, pairs=length > 1)

    def needed(tally: TokenTally, drawn: int, alpha):
        if drawn == 0 or tally.tokens == 0:
            return min(per_call, max_n)
        pooled = tally.expected.sum((0, 1))
        tokens = planned_sample_size(pooled / pooled.sum(), max(tv - floor, tv / 2), alpha,
                                     max_n=max_n * length * len(prompts))
        if tokens <= tally.tokens:
            return drawn
        per_answer = tally.tokens / (drawn * len(prompts))
        return min(max_n, max(drawn + 1, math.ceil(tokens / (per_answer * len(prompts)))))

    checks = 1 + len(strata(length)) + (2 if marked else 0) + (1 if length > 1 else 0)  # P1, P3, P7
    return Stream(f"per-token, {len(prompts)} prompt(s), {length} tokens each", [], checks, 1, lambda: TokenTally(length, len(prompts)), draw,
                  evaluate, needed=needed if tv is not None else None, pilot=False, samples_per_draw=len(prompts), chunk=per_call)


def marks_drafts(subject) -> bool:
    """Whether the per-token check tests ``subject``'s drafted and undrafted positions apart (P3): it marks its drafts
    (:class:`specdec.protocols.DraftMarker`) and does not state that it never drafts (``num_draft_tokens == 0``, e.g.
    an engine's control without speculation, whose drafted stratum would hold no token)."""
    return isinstance(subject, DraftMarker) and getattr(subject, "num_draft_tokens", None) != 0


def strata(length: int) -> list[tuple[int, int]]:
    """Position groups [start, stop) of the localising checks: 1, 2, 3-4, 5-8, ... (0-based starts), at most length."""
    out, start = [], 0
    while start < length:
        stop = 1 if start == 0 else min(2 * start, length)
        out.append((start, stop))
        start = stop
    return out
