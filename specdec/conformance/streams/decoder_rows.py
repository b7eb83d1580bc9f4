"""A whole decoder: its first L tokens after each prompt vs the exact law (F35), located by F36.

Prompts are interleaved in every call, so rows of different lengths share every batch (B13).  A
call's answer is read by the decoder contract (:mod:`..decoder_output`: after a row's first EOS,
anything).  Outcomes outside the law's support are counted in one cell (the check fails at once)
and kept by value, so a failure names them and F36 locates the prefix where they left the support.

**Independence within a call** (a diagnostic beside the law check, not a check): rows of one call
must be independent draws.  Under that null, for m rows of one prompt the number of equal pairs
X = sum_s C(count_s, 2) has mean C(m,2) c2 and variance C(m,2) (c2 - c2^2) + m(m-1)(m-2)(c3 - c2^2),
with c2 = sum P(s)^2 and c3 = sum P(s)^3 from the exact law; summed over calls it gives a z-score.
Rows that are copies of one random stream (one seed reused for every row) show as a large z.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ...stats.localize import prefix_decomposition
from ..calls import CallGuard
from ..checks import gof_check
from ..decoder_output import read_rows
from ..engine import ChunkKey, Stream
from ..sampling_plan import CHUNK_ELEMENTS
from ..tallies import CountTally, saved_sequences

SEES_SEQUENCE = (
    "the whole decoding loop: warpers on both models (E6; B3, B4, B9), the draft's law (B2, B3), KV-cache rollback "
    "and ragged batches (B13), EOS handling (E8) (F35, located by F36)"
)
DEPENDENT_Z = 6.0  # the diagnostic flags rows of one call as copies above this z
INDEPENDENCE_STATE = ("pairs", "mean", "variance", "calls")  # what a checkpoint keeps of the diagnostic
SHOWN = 3  # out-of-support sequences named in a failure


class Independence:
    """Equal pairs of rows within calls, against their expectation under independent rows."""

    def __init__(self, probs: np.ndarray) -> None:
        self.c2, self.c3 = float((probs**2).sum()), float((probs**3).sum())
        self.pairs = self.mean = self.variance = 0.0
        self.calls = 0

    def add(self, rows: list[tuple[int, ...]]) -> None:
        m = len(rows)
        self.pairs += sum(c * (c - 1) / 2 for c in Counter(rows).values())
        self.mean += m * (m - 1) / 2 * self.c2
        self.variance += m * (m - 1) / 2 * (self.c2 - self.c2**2) + m * (m - 1) * (m - 2) * (self.c3 - self.c2**2)
        self.calls += 1

    def summary(self) -> dict:
        if self.variance > 0:
            z = (self.pairs - self.mean) / math.sqrt(self.variance)
        else:
            z = 0.0 if self.pairs <= self.mean else math.inf
        text = (f"rows within a call (diagnostic): {self.pairs:,.0f} equal pairs of rows over {self.calls} call(s), "
                f"{self.mean:,.1f} +- {math.sqrt(max(self.variance, 0.0)):,.1f} expected if rows are independent (z = {z:.3g})")
        if z > DEPENDENT_Z:
            text += "; rows of one call look like copies of one random stream (a seed reused across rows?)"
        return {"equal_pairs": self.pairs, "expected": self.mean, "sd": math.sqrt(max(self.variance, 0.0)), "z": z,
                "calls": self.calls, "dependent": z > DEPENDENT_Z, "text": text}


class DecoderTally(CountTally):
    """Per prompt: counts of the law's sequences (plus the outside cell), the outside sequences by
    value, and the independence diagnostic.  A chunk: (counts, outside, rows) per prompt."""

    def __init__(self, laws) -> None:
        super().__init__([len(law.sequences) + 1 for law in laws])
        self.outside = [Counter() for _ in laws]
        self.independence = [Independence(law.probs) for law in laws]

    def add(self, chunk) -> None:
        counts, outside, rows = chunk
        super().add(counts)
        for i, found in enumerate(outside):
            self.outside[i].update(found)
            self.independence[i].add(rows[i])

    def state(self) -> dict:
        state = super().state()
        state["outside"] = [[[list(s), k] for s, k in c.items()] for c in self.outside]
        state["independence"] = [{k: getattr(x, k) for k in INDEPENDENCE_STATE} for x in self.independence]
        return state

    def restore(self, state: dict, drawn: int) -> None:
        """The counts (:meth:`CountTally.restore`), the outside sequences summing to each prompt's outside cell,
        and the diagnostic's finite sums; a ValueError names what is not a run's."""
        super().restore(state, drawn)
        outside, independence = state.get("outside"), state.get("independence")
        if not isinstance(outside, list) or len(outside) != len(self.counts) or not isinstance(independence, list) \
                or len(independence) != len(self.counts):
            raise ValueError(f"resume: the tally's outside and independence must be lists of {len(self.counts)} entries")
        self.outside = [saved_sequences(c, f"outside[{i}]") for i, c in enumerate(outside)]
        for i, (found, counts) in enumerate(zip(self.outside, self.counts)):
            if sum(found.values()) != int(counts[-1]):
                raise ValueError(f"resume: outside[{i}] lists {sum(found.values()):,} sequences, its outside cell counts {int(counts[-1]):,}")
        for i, (diagnostic, saved) in enumerate(zip(self.independence, independence)):
            values = [saved.get(key) if isinstance(saved, dict) else None for key in INDEPENDENCE_STATE]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in values):
                raise ValueError(f"resume: independence[{i}] must hold finite non-negative {', '.join(INDEPENDENCE_STATE)}")
            for key, value in zip(INDEPENDENCE_STATE, values):
                setattr(diagnostic, key, value)



def decoder_stream(decoder, prompts: list[list[int]], laws, length: int, vocab: int, eos: frozenset, *,
                   max_new_tokens: int | None = None, guard: CallGuard | None = None) -> Stream:
    """The first ``length`` tokens after each prompt (of ``max_new_tokens`` asked, default
    ``length``) vs the exact laws (F35); see the module docstring."""
    guard = guard or CallGuard(None)
    asked = max_new_tokens or length

    def draw(m: int, key: ChunkKey):
        rows = [p for _ in range(m) for p in prompts]
        seed = key.int_seed()
        describe = lambda: f"a call of {len(rows):,} rows ({m:,} per prompt x {len(prompts)}), max_new_tokens={asked}, seed={seed}"  # noqa: E731
        outputs = guard.call(decoder, (rows, asked, seed), describe)
        tested = guard.read(lambda: read_rows(outputs, len(rows), length, eos, asked=asked, vocab=vocab), describe)
        counts, outside, mine_all = [], [], []
        for i, law in enumerate(laws):
            mine = tested[i :: len(prompts)]
            ids = law.index(mine)
            outside.append(Counter(mine[j] for j in np.flatnonzero(ids < 0)))
            mine_all.append(mine)
            counts.append(np.bincount(np.where(ids < 0, len(law.sequences), ids), minlength=len(law.sequences) + 1))
        return counts, outside, mine_all

    def evaluate(tally: DecoderTally, alpha):
        return [_prompt_check(i, prompt, law, tally, length, asked, vocab, eos, alpha)
                for i, (prompt, law) in enumerate(zip(prompts, laws))]

    per_sample = CHUNK_ELEMENTS // max(1, 4096 // max(len(prompts), 1))  # chunks of about 4096 decoded rows
    return Stream(f"decoder, {len(prompts)} prompt(s)", [law.probs for law in laws], len(prompts), per_sample,
                  lambda: DecoderTally(laws), draw, evaluate)


def _prompt_check(i: int, prompt, law, tally: DecoderTally, length: int, asked: int, vocab: int, eos, alpha: float):
    """Prompt i's check: its sequences vs the law (F35), located by F36, with the outside sequences and the diagnostic."""
    c, outside = tally.counts[i], tally.outside[i]
    shown = ", ".join(f"{list(seq)} x{k}" for seq, k in outside.most_common(SHOWN))
    outside_label = "outside the support" + (f" (e.g. {shown})" if shown else "")
    label = lambda j: outside_label if j == len(law.sequences) else str(list(law.sequences[j]))  # noqa: E731
    tested_of = f"first {length} of {asked} tokens" if asked > length else f"first {length} tokens"
    check = gof_check(f"prompt {i} (len {len(prompt)}): {tested_of} (F35)", "sequence", SEES_SEQUENCE, c, law.probs,
                      alpha=alpha, labels=label)
    observed = {law.sequences[j]: int(c[j]) for j in np.flatnonzero(c[: len(law.sequences)])}
    observed.update(outside)  # out-of-support outcomes make F36 point at the prefix where they left it
    check.location = prefix_decomposition(observed, lambda u: law.conditional(u, vocab), terminal=eos).describe()
    if outside:
        check.details["outside_support"] = [[list(seq), k] for seq, k in outside.most_common(10)]
    check.details["independence"] = tally.independence[i].summary()
    return check
