"""The vectorised multi-draft verifiers (SPEC §3) against their exact laws: planned checks of the
emitted token (vs the target, lossless) and of the accept/reject split (vs the closed-form
acceptance), seeded, under the run's error budget."""

import pytest
import torch

import specdec as sd
from specdec.conformance import catalogue, check_law
from specdec.laws import multidraft as md

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
        acceptance = md.distinct_children_law(target, children.tolist())[1]
    else:
        tokens = torch.multinomial(draft, n * k, replacement=True, generator=g).reshape(n, k)
        verifier = sd.verify_kseq if scheme == "kseq" else sd.verify_mss
        result = verifier(tokens, draft.expand(n, vocab), target.expand(n, vocab), g)
        acceptance = (md.kseq_acceptance if scheme == "kseq" else md.mss_acceptance)(target, draft, k)
    label = f"{scheme} k={k} {case}"
    for check in (
        check_law(result.token, target, name=f"{label}: emitted token vs target", budget=specdec_budget),
        check_law((result.accepted_index < 0).long(), [acceptance, 1 - acceptance], name=f"{label}: accept rate {acceptance:.4f}", budget=specdec_budget),
    ):
        assert check.passed, check.describe()
