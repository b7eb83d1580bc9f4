"""The driver of a whole decoder: its first L tokens after each prompt vs the exact law (F35).

Prompts are interleaved in every call, so rows of different lengths share every batch (B13).
What a decoder returns is read by one contract (docs/decoder.md):

* a list of new token ids per prompt row (ints, or a 1-D integer tensor or array);
* **after the first EOS, anything**: padding with EOS up to ``max_new_tokens`` (as batched
  ``generate`` calls do), truncation at EOS, or any token - tokens after the first EOS carry no
  information and are ignored (E8);
* the decoder may be asked for more tokens than are tested (``max_new_tokens`` >= L): the first
  L tokens' law does not depend on what follows, and asking for more makes a decoder that shrinks
  its drafts near the end verify full blocks at the tested positions.

Outcomes outside the law's support are counted in one cell (the check fails at once) and kept by
value, so a failure names them and F36 locates the prefix where they left the support.

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

from ..protocols import ContractError
from ..stats.localize import prefix_decomposition
from .checks import gof_check
from .engine import CHUNK_ELEMENTS, ChunkKey, Stream
from .plan import PILOT_STREAM
from .subject import CallGuard

SEES_SEQUENCE = (
    "the whole decoding loop: warpers on both models (E6; B3, B4, B9), the draft's law (B2, B3), KV-cache rollback "
    "and ragged batches (B13), EOS handling (E8) (F35, located by F36)"
)
DEPENDENT_Z = 6.0  # the diagnostic flags rows of one call as copies above this z
SHOWN = 3  # out-of-support sequences named in a failure


def tested_tokens(output, length: int, eos: frozenset) -> tuple[int, ...]:
    """The first ``length`` tokens of one output row, cut after its first EOS; a ContractError if
    the row is not a sequence of integer token ids."""
    if hasattr(output, "tolist") and not isinstance(output, (list, tuple)):
        output = output.tolist()
    if isinstance(output, (str, bytes)) or not hasattr(output, "__len__"):
        raise ContractError(f"the decoder returned a row of type {type(output).__name__}; a Decoder returns lists of token ids")
    tokens = []
    for token in list(output)[:length]:
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)):
            raise ContractError(f"the decoder returned a token {token!r} of type {type(token).__name__}; token ids are integers")
        tokens.append(int(token))
        if tokens[-1] in eos:
            break
    return tuple(tokens)


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


def decoder_stream(decoder, prompts: list[list[int]], laws, length: int, vocab: int, eos: frozenset, *,
                   max_new_tokens: int | None = None, guard: CallGuard | None = None) -> Stream:
    """The first ``length`` tokens after each prompt (of ``max_new_tokens`` asked, default
    ``length``) vs the exact laws (F35); see the module docstring."""
    guard = guard or CallGuard(None)
    asked = max_new_tokens or length
    outside = [Counter() for _ in prompts]  # out-of-support outcomes by value, per prompt (this process's)
    independence = [Independence(law.probs) for law in laws]

    def draw(m: int, key: ChunkKey):
        rows = [p for _ in range(m) for p in prompts]
        seed = key.int_seed()
        describe = lambda: f"a call of {len(rows):,} rows ({m:,} per prompt x {len(prompts)}), max_new_tokens={asked}, seed={seed}"  # noqa: E731
        outputs = guard.call(decoder, (rows, asked, seed), describe)
        tested = guard.read(lambda: read_rows(outputs, len(rows), length, eos), describe)
        counts = []
        for i, law in enumerate(laws):
            mine = tested[i :: len(prompts)]
            ids = law.index(mine)
            if key.stream < PILOT_STREAM:  # the pilot's samples are not counted, nor kept
                for j in np.flatnonzero(ids < 0):
                    outside[i][mine[j]] += 1
                independence[i].add(mine)
            counts.append(np.bincount(np.where(ids < 0, len(law.sequences), ids), minlength=len(law.sequences) + 1))
        return counts

    def evaluate(counts, alpha):
        checks = []
        for i, (prompt, law) in enumerate(zip(prompts, laws)):
            c = counts[i]
            shown = ", ".join(f"{list(seq)} x{k}" for seq, k in outside[i].most_common(SHOWN))
            outside_label = "outside the support" + (f" (e.g. {shown})" if shown else "")
            label = lambda j, law=law, text=outside_label: text if j == len(law.sequences) else str(list(law.sequences[j]))  # noqa: E731
            tested_of = f"first {length} of {asked} tokens" if asked > length else f"first {length} tokens"
            check = gof_check(f"prompt {i} (len {len(prompt)}): {tested_of} (F35)", "sequence", SEES_SEQUENCE, c, law.probs,
                              alpha=alpha, labels=label)
            observed = {law.sequences[j]: int(c[j]) for j in np.flatnonzero(c[: len(law.sequences)])}
            observed.update(outside[i])  # out-of-support outcomes make F36 point at the prefix where they left it
            check.location = prefix_decomposition(observed, lambda u, law=law: law.conditional(u, vocab), terminal=eos).describe()
            if outside[i]:
                check.details["outside_support"] = [[list(seq), k] for seq, k in outside[i].most_common(10)]
            check.details["independence"] = independence[i].summary()
            checks.append(check)
        return checks

    per_sample = CHUNK_ELEMENTS // max(1, 4096 // max(len(prompts), 1))  # chunks of about 4096 decoded rows
    shapes = [len(law.sequences) + 1 for law in laws]
    return Stream(f"decoder, {len(prompts)} prompt(s)", [law.probs for law in laws], len(prompts), per_sample, shapes, draw, evaluate)


def read_rows(outputs, rows: int, length: int, eos: frozenset) -> list[tuple[int, ...]]:
    """A decoder's answer to a call of ``rows`` rows, read by the contract: each row's tested tokens."""
    if not isinstance(outputs, (list, tuple)) or len(outputs) != rows:
        got = len(outputs) if isinstance(outputs, (list, tuple)) else type(outputs).__name__
        raise ContractError(
            f"the decoder returned {got} for {rows} prompts; a Decoder (specdec.protocols.Decoder) returns "
            "one list of new token ids per prompt"
        )
    return [tested_tokens(o, length, eos) for o in outputs]
