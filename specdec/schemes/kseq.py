"""SpecTr K-SEQ (F11-F13): k i.i.d. drafts, each accepted with min(1, p/(rho* q)), the first accepted
wins, else one token from norm((p - rho* q)+).  Exact law: :func:`specdec.laws.kseq_law`."""

from __future__ import annotations

import torch

from ..laws.multidraft import kseq_acceptance, kseq_law
from ..laws.transport import multidraft_optimum
from ..verify import verify_kseq
from .record import Scheme


def step_law(target_fn, draft_fn, num_drafts: int) -> dict:
    """{(token,): probability} of the emitted token at the context ``()``."""
    law, _ = kseq_law(torch.as_tensor(target_fn(()), dtype=torch.float64), torch.as_tensor(draft_fn(()), dtype=torch.float64), num_drafts)
    return {(x,): float(p) for x, p in enumerate(law.tolist()) if p > 0}


def compare(target: torch.Tensor, draft: torch.Tensor, max_drafts: int, num_draft_tokens: int) -> list[dict]:
    return [dict(scheme="K-SEQ", size=k, value=kseq_acceptance(target, draft, k), optimum=multidraft_optimum(target, draft, k))
            for k in range(2, max_drafts + 1)]


SCHEME = Scheme(
    name="kseq",
    shape="multidraft",
    verifier=verify_kseq,
    summary="SpecTr K-SEQ over k i.i.d. drafts (F11-F13)",
    step_law=step_law,
    cases=("multidraft-iid",),
    compare=compare,
)
