"""SpecInfer multi-step speculative sampling at one node (F14, F15): siblings tested in turn against
r, r <- norm((r - q)+) after each rejection, else one token from r.  Exact laws:
:func:`specdec.laws.mss_law` (i.i.d. children), :func:`specdec.laws.distinct_children_law` (F15)."""

from __future__ import annotations

import torch

from ..laws.multidraft import distinct_children_law, mss_acceptance, mss_law
from ..laws.transport import multidraft_optimum
from ..verify import verify_mss
from .record import Scheme


def step_law(target_fn, draft_fn, num_drafts: int) -> dict:
    """{(token,): probability} of the emitted token with k i.i.d. children at the context ``()``."""
    law, _ = mss_law(torch.as_tensor(target_fn(()), dtype=torch.float64), torch.as_tensor(draft_fn(()), dtype=torch.float64), num_drafts)
    return {(x,): float(p) for x, p in enumerate(law.tolist()) if p > 0}


def compare(target: torch.Tensor, draft: torch.Tensor, max_drafts: int, num_draft_tokens: int) -> list[dict]:
    rows = []
    for k in range(2, max_drafts + 1):
        rows.append(dict(scheme="MSS iid", size=k, value=mss_acceptance(target, draft, k), optimum=multidraft_optimum(target, draft, k)))
        if k <= target.shape[0]:
            children = draft.argsort(descending=True, stable=True)[:k].tolist()
            rows.append(dict(scheme="MSS top-k", size=k, value=distinct_children_law(target, children)[1], optimum=None))
    return rows


SCHEME = Scheme(
    name="mss",
    shape="multidraft",
    verifier=verify_mss,
    summary="SpecInfer multi-step speculative sampling over k siblings (F14, F15)",
    step_law=step_law,
    cases=("multidraft-iid", "multidraft-distinct"),
    compare=compare,
)
