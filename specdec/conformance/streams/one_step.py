"""One verification step of a token-level or a multi-draft verifier (docs/verifier.md).

* :func:`token_stream` (a :class:`TokenCase`): the first emitted token of a step with K positions vs
  the target (F4), and the acceptance at position 1 vs its optimum (F1; E5 for point-mass drafts);
* :func:`multidraft_stream` (a :class:`MultiDraftCase`): the emitted token vs the target, and the
  acceptance vs alpha*_k (F7-F10) or p(children) (F15).

Only count vectors leave the device.
"""

from __future__ import annotations

import torch

from ...errors import ContractError
from ...verify.result import read_verification
from ..calls import CallGuard
from ..cases import SEES_ACCEPTANCE, SEES_FIRST_TOKEN, SEES_MULTIDRAFT, SEES_MULTIDRAFT_ACCEPTANCE, MultiDraftCase, TokenCase, exact_law
from ..checks import acceptance_check, gof_check
from ..engine import ChunkKey, Stream, count_stream, outcome_counts

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
    return count_stream(case.name, [law], 2, 4 * vocab + 8 * (k + 1), [vocab + 1, 3], draw, evaluate)


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
    return count_stream(case.name, [law], 2, 4 * vocab + 4 * k, [vocab + 1, 3], draw, evaluate)
