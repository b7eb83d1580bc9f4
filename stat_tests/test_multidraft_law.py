"""The vectorised multi-draft verifiers (SPEC §3) against their exact laws: planned
chi-square tests of the emitted token (vs the target, lossless) and of the
accept/reject split (vs the closed-form acceptance), seeded."""

import pytest
import torch

from specdec import multidraft as md

TV = 0.02
SPEC_TARGET = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
SPEC_DRAFT = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
_g = torch.Generator().manual_seed(42)
PEAKED_TARGET = (2.5 * torch.randn(6, generator=_g, dtype=torch.float64)).softmax(-1)
PEAKED_DRAFT = (2.5 * torch.randn(6, generator=_g, dtype=torch.float64)).softmax(-1)
CASES = {"spec3": (SPEC_TARGET, SPEC_DRAFT), "peaked6": (PEAKED_TARGET, PEAKED_DRAFT)}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("scheme", ["kseq", "mss", "mss_distinct"])
def test_sampler_follows_exact_law(stat_checks, case, k, scheme):
    target, draft = CASES[case]
    vocab = target.shape[0]
    n = stat_checks.plan(num_cells=vocab, tv=TV)
    g = torch.Generator().manual_seed(1000 * k + vocab)
    if scheme == "mss_distinct":
        children = draft.argsort(descending=True)[:k]  # a top-k tree: distinct deterministic children
        tokens = children.expand(n, k)
        result = md.verify_mss(tokens, None, target.expand(n, vocab), g)
        acceptance = md.distinct_children_law(target, children.tolist())[1]
    else:
        tokens = torch.multinomial(draft, n * k, replacement=True, generator=g).reshape(n, k)
        verifier = md.verify_kseq if scheme == "kseq" else md.verify_mss
        result = verifier(tokens, draft.expand(n, vocab), target.expand(n, vocab), g)
        acceptance = (md.kseq_acceptance if scheme == "kseq" else md.mss_acceptance)(target, draft, k)
    label = f"{scheme} k={k} {case}"
    stat_checks.assert_follows(result.token, target, label=f"{label}: emitted token vs target")
    stat_checks.assert_follows(
        (result.accepted_index < 0).long(), [acceptance, 1 - acceptance], label=f"{label}: accept rate {acceptance:.4f}"
    )
