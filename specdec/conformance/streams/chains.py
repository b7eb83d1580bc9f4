"""A decoder driven by a token-level verifier on a :class:`ChainCase`'s tables: its first L tokens vs
the chain law (F35), located by F36.  :class:`Emission` and :func:`sequence_check` serve the tree
verifier's stream too (:mod:`.trees`).  Only count vectors leave the device.
"""

from __future__ import annotations

import numpy as np
import torch

from ...laws.chain import prefix_offset
from ...stats.localize import prefix_decomposition
from ...verify.result import read_verification
from ..calls import CallGuard
from ..cases import SEES_CHAIN, ChainCase, exact_law
from ..checks import Check, gof_check
from ..engine import ChunkKey, Stream, count_stream, outcome_counts

_DIRECT = CallGuard(None)  # no timeout: the subject runs in the calling thread



def chain_stream(verifier, case: ChainCase, device: torch.device, *, guard: CallGuard = _DIRECT) -> Stream:
    """The first L tokens of a decoder that uses ``verifier`` on the chain's tables, vs the chain law."""
    vocab, k, length = case.vocab, case.num_draft_tokens, case.length
    target_t = case.tables("target").to(device)  # (prefixes, V), the case's dtype
    draft_t = case.tables("draft").to(device)
    sampler = exact_law(case.tables("draft")).to(device)
    law = case.sequence_law()

    def draw(m: int, key: ChunkKey):
        g = key.generator()
        emission = Emission(m, length, k, vocab, device)
        for _ in range(length):  # every step emits at least one token
            start, codes = emission.contexts()
            target_rows, draft_rows, tokens = [], [], []
            for i in range(k + 1):
                index = prefix_offset(vocab, start + i) + codes
                target_rows.append(target_t[index])
                if i < k:
                    draft_rows.append(draft_t[index])
                    token = torch.multinomial(sampler[index], 1, generator=g).squeeze(-1)
                    tokens.append(token)
                    codes = codes * vocab + token
            drafts = torch.stack(tokens, 1) if tokens else torch.zeros((m, 0), dtype=torch.long, device=device)
            if case.drafter == "point_mass":
                probs = None
            else:
                probs = torch.stack(draft_rows, 1) if k else target_t.new_zeros((m, 0, vocab))
            describe = lambda: f"chain {case.name} (batch {m:,}, K={k}, V={vocab}, L={length}, {case.dtype}, {case.drafter} drafts)"  # noqa: E731
            result = guard.call(verifier, (drafts, probs, torch.stack(target_rows, 1), g), describe)
            emitted, accepted = guard.read(lambda: read_verification(result, m, k), describe)
            emission.add(emitted, accepted)
        return [emission.counts()]

    def evaluate(counts, alpha):
        return [sequence_check(case, "chain", SEES_CHAIN, counts[0], law, alpha)]

    return count_stream(case.name, [law], 1, (k + 1) * (2 * vocab + 4) * length, [vocab**length + 1], draw, evaluate)


class Emission:
    """The first L tokens that a decoder driven by a verifier on a case's tables emits, per row, with
    the base-V code of each row's emitted prefix (which picks its next table rows)."""

    def __init__(self, rows: int, length: int, width: int, vocab: int, device) -> None:
        self.length, self.vocab = length, vocab
        self.out = torch.full((rows, length + width + 1), -1, dtype=torch.long, device=device)
        self.size = torch.zeros(rows, dtype=torch.long, device=device)  # tokens emitted per row
        self.code = torch.zeros(rows, dtype=torch.long, device=device)  # base-V code of the emitted prefix
        self.rows = torch.arange(rows, device=device)
        self.powers = torch.tensor([vocab ** (length - 1 - t) for t in range(length)], device=device)

    @property
    def live(self) -> torch.Tensor:
        return self.size < self.length

    def contexts(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(prefix length, prefix code) per row; finished rows re-read the root rows (their output is ignored)."""
        return torch.where(self.live, self.size, 0), torch.where(self.live, self.code, 0)

    def add(self, emitted: torch.Tensor, accepted: torch.Tensor) -> None:
        """Append each live row's accepted tokens and its one more token, up to L."""
        live = self.live
        for j in range(emitted.shape[1]):
            take = live & (j <= accepted) & (self.size < self.length)
            self.out[self.rows[take], self.size[take]] = emitted[take, j]
            self.code = torch.where(take, self.code * self.vocab + emitted[:, j].clamp(0, self.vocab - 1), self.code)
            self.size = self.size + take.long()

    def counts(self) -> torch.Tensor:
        """Counts of the first-L-token codes (V^L,), plus one last cell for rows with an invalid id."""
        cells = self.vocab**self.length
        tokens = self.out[:, : self.length]
        invalid = ((tokens < 0) | (tokens >= self.vocab)).any(1)
        codes = (tokens.clamp(0, self.vocab - 1) * self.powers).sum(1)
        return outcome_counts(torch.where(invalid, cells, codes), cells)


def sequence_check(case, kind: str, sees: str, counts, law, alpha: float) -> Check:
    """The first L tokens vs the case's chain law (F35), located by F36."""
    vocab, length = case.vocab, case.length
    cells = vocab**length
    label = lambda code: "invalid" if code == cells else str(_digits(code, vocab, length))  # noqa: E731
    check = gof_check(f"{case.name}: first {length} tokens vs chain law (F35)", kind, sees, counts, law, alpha=alpha, labels=label)
    observed = {_digits(c, vocab, length): int(counts[c]) for c in np.flatnonzero(counts[:cells])}
    check.location = prefix_decomposition(observed, case.conditional).describe()
    return check


def _digits(code: int, vocab: int, length: int) -> tuple[int, ...]:
    out = []
    for _ in range(length):
        code, digit = divmod(int(code), vocab)
        out.append(digit)
    return tuple(reversed(out))


