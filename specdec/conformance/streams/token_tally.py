"""What a per-token check counts (docs/reference.md §10, P1-P3 and P7): :class:`TokenTally` and :func:`score`.

Every emitted token adds one count to its rank cell (:mod:`specdec.stats.rank_cells`) and its law's cell
probabilities to the expectations, by position and by draft mark (P1, P3).  Every token that follows another
in its answer also adds to the *pair* table (P7): its cell, in the row of the previous token's rank group,
against its law's probabilities in that row.  The previous token is known before this one is drawn, so under
the null each row is a sum of martingale differences like the pooled counts; a decoder whose tokens depend on
each other beyond their prefixes - one uniform shared by a verification block (B7), a residual that reads the
previous step's acceptance - moves the rows apart while their sum, the pooled law, may hardly move.
A token of probability 0 is a support violation, kept with its prompt and prefix.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...laws.oracles import MAX_TOLERANCE, rank_cells
from ...stats.rank_cells import CELLS, previous_group, PREVIOUS_GROUPS
from ..tallies import saved_counts, saved_numbers

MARKS = ("undrafted", "drafted", "unknown")  # was a draft verified at the token's position: no (bonus, no draft), yes, not said

__all__ = ["MARKS", "TokenTally", "score"]


class TokenTally:
    """Observed counts and expectations per (position, mark, cell), per (previous rank group, cell) for the tokens
    that follow another (P7), and support violations by (prompt, prefix, token).  A chunk is a TokenTally too."""

    def __init__(self, length: int, prompts: int = 1) -> None:
        self.prompts = prompts  # answers per sample drawn: one per prompt
        self.observed = np.zeros((length, len(MARKS), CELLS), dtype=np.int64)
        self.expected = np.zeros((length, len(MARKS), CELLS), dtype=np.float64)
        self.pairs_observed = np.zeros((len(PREVIOUS_GROUPS), CELLS), dtype=np.int64)
        self.pairs_expected = np.zeros((len(PREVIOUS_GROUPS), CELLS), dtype=np.float64)
        self.violations: Counter = Counter()

    @property
    def tokens(self) -> int:
        return int(self.observed.sum())

    def add(self, chunk: "TokenTally") -> None:
        self.observed += chunk.observed
        self.expected += chunk.expected
        self.pairs_observed += chunk.pairs_observed
        self.pairs_expected += chunk.pairs_expected
        self.violations.update(chunk.violations)

    def state(self) -> dict:
        return {"observed": self.observed.tolist(), "expected": self.expected.tolist(),
                "pairs_observed": self.pairs_observed.tolist(), "pairs_expected": self.pairs_expected.tolist(),
                "violations": [[p, list(prefix), token, k] for (p, prefix, token), k in self.violations.items()]}

    def restore(self, state: dict, drawn: int) -> None:
        """Counts and expectations of this shape, one first token per answer drawn (``drawn`` x prompts), at most
        ``length`` tokens per answer, one pair per token after the first, expectations summing to the tokens
        counted (each law sums to 1); a ValueError names what is not a run's."""
        observed = saved_counts(state.get("observed"), self.observed.shape, "observed")
        expected = saved_numbers(state.get("expected"), self.expected.shape, "expected")
        pairs = saved_counts(state.get("pairs_observed"), self.pairs_observed.shape, "pairs_observed")
        pairs_expected = saved_numbers(state.get("pairs_expected"), self.pairs_expected.shape, "pairs_expected")
        answers, tokens = drawn * self.prompts, int(observed.sum())
        near = lambda total, count: abs(float(total) - count) <= MAX_TOLERANCE * count + 1e-6  # noqa: E731
        if int(observed[0].sum()) != answers or tokens > answers * len(observed) or int(pairs.sum()) != tokens - answers \
                or not near(expected.sum(), tokens) or not near(pairs_expected.sum(), tokens - answers):
            raise ValueError(f"resume: {tokens:,} tokens with {int(observed[0].sum()):,} first tokens, {int(pairs.sum()):,} pairs "
                             f"and expectations summing to {float(expected.sum()):,.1f} are not the counts of {answers:,} "
                             "answers (an edited or damaged checkpoint)")
        violations = Counter()
        for item in state.get("violations") if isinstance(state.get("violations"), list) else [None]:
            if not (isinstance(item, list) and len(item) == 4 and isinstance(item[1], list)
                    and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in [item[0], item[2], item[3], *item[1]])):
                raise ValueError(f"resume: violations must be [prompt, prefix, token, count] entries, got {str(item)[:60]}")
            violations[(item[0], tuple(item[1]), item[2])] += item[3]
        self.observed, self.expected, self.violations = observed, expected, violations
        self.pairs_observed, self.pairs_expected = pairs, pairs_expected


def score(rows_prompt: list[int], tested, laws, marks, length: int) -> TokenTally:
    """One piece's tally from its answers, their laws and draft marks."""
    flat_laws, tokens, positions, kinds, owners = [], [], [], [], []
    for row, (answer, answer_laws) in enumerate(zip(tested, laws)):
        for t, (token, law) in enumerate(zip(answer, answer_laws)):
            flat_laws.append(law)
            tokens.append(token)
            positions.append(t)
            kinds.append(2 if marks is None else int(marks[row][t]))
            owners.append(row)
    tally = TokenTally(length)
    if not flat_laws:
        return tally
    cells, probs, chance = rank_cells(flat_laws, tokens)
    np.add.at(tally.observed, (positions, kinds, cells), 1)
    np.add.at(tally.expected, (positions, kinds), probs)
    following = np.flatnonzero(np.asarray(positions) > 0)  # tokens after another of their answer: the one before is i - 1
    groups = previous_group(cells[following - 1])
    np.add.at(tally.pairs_observed, (groups, cells[following]), 1)
    np.add.at(tally.pairs_expected, groups, probs[following])
    for i in np.flatnonzero(chance <= 0):
        row, t = owners[i], positions[i]
        tally.violations[(rows_prompt[row], tuple(tested[row][:t]), int(tokens[i]))] += 1
    return tally
