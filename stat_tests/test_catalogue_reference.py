"""The reference verifiers pass the conformance engine on every case of the full catalogue, under
the run's error budget: token verification (F2-F4), block verification (F16-F19) and the
multi-draft verifiers (F11-F15)."""

import pytest

import specdec as sd
from specdec.conformance import catalogue, check_multidraft, check_verifier

TV = 0.05


@pytest.mark.parametrize("case", catalogue.token_cases("full"), ids=lambda c: c.name)
def test_token_verifier_passes_every_token_case(specdec_budget, case):
    report = check_verifier(sd.verify_tokens, cases=[case], chains=[], tv=TV, seed=9, budget=specdec_budget, device="cpu", name=f"verify_tokens on {case.name}")
    assert report.verdict == "PASS", report.format()


@pytest.mark.parametrize("verifier", [sd.verify_tokens, sd.verify_block], ids=["token", "block"])
def test_chain_verifiers_pass_every_chain(specdec_budget, verifier):
    report = check_verifier(verifier, cases=[], chains=catalogue.chain_cases("full"), tv=TV, seed=10, budget=specdec_budget, device="cpu")
    assert report.verdict == "PASS", report.format()


def test_block_verifier_passes_the_default_token_cases(specdec_budget):
    report = check_verifier(sd.verify_block, chains=[], tv=TV, seed=11, budget=specdec_budget, device="cpu")
    assert report.verdict == "PASS", report.format()


@pytest.mark.parametrize("verifier, children", [(sd.verify_kseq, ("iid",)), (sd.verify_mss, ("iid", "distinct"))], ids=["kseq", "mss"])
def test_multidraft_verifiers_pass_every_case(specdec_budget, verifier, children):
    report = check_multidraft(verifier, cases=catalogue.multidraft_cases("full", children=children), tv=TV, seed=12,
                              budget=specdec_budget, device="cpu")
    assert report.verdict == "PASS", report.format()
    assert report.suboptimal(), "K-SEQ and MSS sit below alpha*_k on docs/reference.md §3's pair (F10 vs F11-F14)"
