"""Drivers: how the engine samples a subject, one stream per case (docs/reference.md).

Each driver draws a chunk of samples where the subject lives (drafts with torch's
own ``multinomial``, an implementation independent of ours; the subject's
randomness from the chunk's counter-based generator), reads what the subject
returned through its Protocol, and counts outcomes with ``bincount`` on the same
device: only count vectors leave it.  Outcomes a subject cannot legally produce
(ids outside the vocabulary, accepted counts outside [0, K]) are counted in a last
"invalid" cell, which makes the check fail at once.  A subject that returns the
wrong kind of object gets a :class:`ContractError` naming the Protocol.  Every call of the
subject goes through a :class:`CallGuard` (:mod:`.subject`): what the subject raises, a call
that hangs past the timeout, or a broken Protocol becomes a :class:`SubjectError` that names
the call, and the engine's report an ERROR.
"""

from __future__ import annotations

import numpy as np
import torch

from ..laws.chain import prefix_offset
from ..stats.localize import prefix_decomposition
from .cases import (
    SEES_ACCEPTANCE,
    SEES_CHAIN,
    SEES_FIRST_TOKEN,
    SEES_MULTIDRAFT,
    SEES_MULTIDRAFT_ACCEPTANCE,
    ChainCase,
    MultiDraftCase,
    TokenCase,
    exact_law,
)
from .checks import Check, acceptance_check, gof_check
from ..protocols import ContractError
from ..verify.result import read_verification
from .engine import ChunkKey, Stream, outcome_counts
from .subject import CallGuard

_DIRECT = CallGuard(None)  # no timeout: the subject runs in the calling thread

def read_multidraft(out, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(token (B,), accepted_index (B,)) of a MultiDraftVerifier's result."""
    token, index = getattr(out, "token", None), getattr(out, "accepted_index", None)
    if not isinstance(token, torch.Tensor) or not isinstance(index, torch.Tensor):
        raise ContractError(
            f"the verifier returned {type(out).__name__}; a MultiDraftVerifier (specdec.protocols.MultiDraftVerifier) "
            "returns an object with tensors .token (B,) and .accepted_index (B,), e.g. specdec.MultiDraftResult"
        )
    if tuple(token.shape) != (batch,) or tuple(index.shape) != (batch,) or token.is_floating_point() or index.is_floating_point():
        raise ContractError(
            f"the verifier returned token {tuple(token.shape)} {token.dtype} and accepted_index {tuple(index.shape)} "
            f"{index.dtype}; a MultiDraftVerifier returns integer tensors of shape ({batch},)"
        )
    return token.long(), index.long()


def _accept_counts(rejected: torch.Tensor, accepted: torch.Tensor, invalid: torch.Tensor) -> torch.Tensor:
    return torch.stack([rejected.sum(), accepted.sum(), invalid.sum()])


def _token_and_acceptance(token_check: tuple[str, str, str], acceptance_check_: tuple[str, str, str], law, vocab, optimum):
    """``evaluate`` of a stream that counts (emitted token (V+1,), [rejected, accepted, invalid]):
    the token's law vs ``law`` and the acceptance vs ``optimum()``.  Each check is (name, kind or
    what, sees)."""

    def evaluate(counts, alpha):
        tokens, acc = counts
        (name, kind, sees), (acc_name, what, acc_sees) = token_check, acceptance_check_
        return [
            gof_check(name, kind, sees, tokens, law, alpha=alpha),
            acceptance_check(acc_name, acc_sees, int(acc[1]), int(acc.sum()), int(acc[2]), optimum(), alpha=alpha, what=what),
        ]

    return evaluate


# ------------------------------------------------------------------ one verification step (TokenCase)


def token_stream(verifier, case: TokenCase, device: torch.device, *, guard: CallGuard = _DIRECT) -> Stream:
    """The first emitted token and the acceptance at position 1 of one step with K positions."""
    target = case.target_rows.to(device)  # (K+1, V) in the case's dtype
    draft = case.draft_rows.to(device)
    sampler = exact_law(case.draft_rows).to(device)  # float64 rows for torch.multinomial
    k, vocab = case.num_draft_tokens, case.vocab
    law = case.first_token_law()

    def draw(m: int, key: ChunkKey):
        g = key.generator()
        drafts = torch.multinomial(sampler, m, replacement=True, generator=g).T.contiguous()  # (m, K)
        probs = None if case.drafter == "point_mass" else draft.expand(m, k, vocab)
        describe = lambda: f"case {case.name} (batch {m:,}, K={k}, V={vocab}, {case.dtype}, {case.drafter} drafts)"  # noqa: E731
        result = guard.call(verifier, (drafts, probs, target.expand(m, k + 1, vocab), g), describe)
        tokens, accepted = guard.read(lambda: read_verification(result, m, k), describe)
        invalid = (accepted < 0) | (accepted > k)
        return [outcome_counts(tokens[:, 0], vocab), _accept_counts(accepted == 0, (accepted >= 1) & ~invalid, invalid)]

    evaluate = _token_and_acceptance(
        (f"{case.name}: first token vs target (F4)", "first token", SEES_FIRST_TOKEN),
        (f"{case.name}: acceptance at position 1 (F1)", "num_accepted", SEES_ACCEPTANCE),
        law, vocab, case.optimum,
    )
    return Stream(case.name, [law], 2, 4 * vocab + 8 * (k + 1), [vocab + 1, 3], draw, evaluate)


# ------------------------------------------------------------------ a decoder driven by the verifier (ChainCase)


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

    return Stream(case.name, [law], 1, (k + 1) * (2 * vocab + 4) * length, [vocab**length + 1], draw, evaluate)


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


# ------------------------------------------------------------------ multi-draft (MultiDraftCase)


def multidraft_stream(verifier, case: MultiDraftCase, device: torch.device, *, guard: CallGuard = _DIRECT) -> Stream:
    """The emitted token vs the target and the acceptance vs alpha*_k (or p(children))."""
    target = case.target_probs.to(device)
    draft = case.draft_probs.to(device)
    sampler = exact_law(case.draft_probs).to(device)
    children = case.child_tokens().to(device)
    k, vocab = case.num_drafts, case.vocab
    law = exact_law(case.target_probs).numpy()

    def draw(m: int, key: ChunkKey):
        g = key.generator()
        if case.children == "iid":
            drafts = torch.multinomial(sampler, m * k, replacement=True, generator=g).reshape(m, k)
            probs = draft.expand(m, vocab)
        else:
            drafts, probs = children.expand(m, k).contiguous(), None
        describe = lambda: f"case {case.name} (batch {m:,}, k={k} {case.children} drafts, V={vocab})"  # noqa: E731
        result = guard.call(verifier, (drafts, probs, target.expand(m, vocab), g), describe)
        token, index = guard.read(lambda: read_multidraft(result, m), describe)
        bad = (index < -1) | (index >= k)
        picked = drafts.gather(1, index.clamp(0, k - 1).unsqueeze(-1)).squeeze(-1)
        bad = bad | ((index >= 0) & (picked != token))  # the accepted draft must be the emitted token
        return [outcome_counts(token, vocab), _accept_counts(index == -1, (index >= 0) & ~bad, bad)]

    evaluate = _token_and_acceptance(
        (f"{case.name}: emitted token vs target", "multi-draft token", SEES_MULTIDRAFT),
        (f"{case.name}: acceptance vs optimum", "accepted_index (or an accepted draft that is not the emitted token)", SEES_MULTIDRAFT_ACCEPTANCE),
        law, vocab, case.optimum,
    )
    return Stream(case.name, [law], 2, 4 * vocab + 4 * k, [vocab + 1, 3], draw, evaluate)
