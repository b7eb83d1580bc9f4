"""The vectorised multi-draft verifiers (docs/reference.md §3) against laws computed without their
helpers: planned checks of the emitted token (vs the target, lossless) and of the accept/reject
split (vs an acceptance written here from the rule in plain Python: rho* by its own bisection, the
residual updates inline), seeded, under the run's error budget."""

import itertools

import pytest
import torch

import specdec as sd
from specdec.conformance import catalogue, check_law


def kseq_acceptance_from_the_rule(p, q, k):
    """F11-F12 written out: beta(rho) = sum min(q, p / rho); rho* in [1, k] solves 1 - (1 - beta)^k = rho beta."""
    p, q = p.tolist(), q.tolist()
    beta = lambda rho: sum(min(qx, px / rho) for px, qx in zip(p, q))  # noqa: E731
    gap = lambda rho: 1 - (1 - beta(rho)) ** k - rho * beta(rho)  # noqa: E731, decreasing in rho
    lo, hi = 1.0, float(k)
    if gap(lo) <= 0:
        return 1 - (1 - beta(lo)) ** k
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    return 1 - (1 - beta(lo)) ** k


def mss_acceptance_from_the_rule(p, q, k):
    """F14 by enumeration of the k i.i.d. children, the residual r <- norm((r - q)+) updated inline."""
    p, q = p.tolist(), q.tolist()
    accepted = 0.0
    for children in itertools.product(range(len(p)), repeat=k):
        weight = 1.0
        for x in children:
            weight *= q[x]
        if weight == 0:
            continue
        r, still = list(p), 1.0
        for x in children:
            a = min(1.0, r[x] / q[x])
            accepted += weight * still * a
            still *= 1 - a
            residual = [max(rx - qx, 0.0) for rx, qx in zip(r, q)]
            total = sum(residual)
            if total > 0:
                r = [v / total for v in residual]
    return accepted


def distinct_acceptance_from_the_rule(p, children):
    """F15: the children are tried in turn as point masses; the mass accepted is p(children)."""
    return float(sum(p.tolist()[x] for x in children))

TV = 0.02
CASES = {"spec3": catalogue.pair("spec_section3"), "peaked6": catalogue.pair("peaked_v6")}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("scheme", ["kseq", "mss", "mss_distinct"])
def test_sampler_follows_exact_law(specdec_budget, case, k, scheme):
    target, draft = CASES[case]
    vocab = target.shape[0]
    n = specdec_budget.sample_size(target, TV)
    g = torch.Generator().manual_seed(1000 * k + vocab)
    if scheme == "mss_distinct":
        children = draft.argsort(descending=True, stable=True)[:k]  # a top-k tree: distinct deterministic children
        result = sd.verify_mss(children.expand(n, k), None, target.expand(n, vocab), g)
        acceptance = distinct_acceptance_from_the_rule(target, children.tolist())
    else:
        tokens = torch.multinomial(draft, n * k, replacement=True, generator=g).reshape(n, k)
        verifier = sd.verify_kseq if scheme == "kseq" else sd.verify_mss
        result = verifier(tokens, draft.expand(n, vocab), target.expand(n, vocab), g)
        acceptance = (kseq_acceptance_from_the_rule if scheme == "kseq" else mss_acceptance_from_the_rule)(target, draft, k)
    label = f"{scheme} k={k} {case}"
    for check in (
        check_law(result.token, target, name=f"{label}: emitted token vs target", budget=specdec_budget),
        check_law((result.accepted_index < 0).long(), [acceptance, 1 - acceptance], name=f"{label}: accept rate {acceptance:.4f}", budget=specdec_budget),
    ):
        assert check.passed, check.describe()
