"""Peers' verifiers through the engine: the adapters over fakes with the exact signatures (CI), and
the real kernels on a GPU when their packages are importable (marked gpu)."""


import pytest

from fixtures.fakes import fake_sglang_tree_kernel, fake_vllm_rejection_sample
from specdec.adapters import flashinfer as fi
from specdec.adapters import sglang
from specdec.adapters import vllm as vllm_adapter
from specdec.conformance import catalogue, check_tree, check_verifier


def test_flashinfer_adapter_passes_the_engine_through_the_fake(fake_flashinfer, specdec_budget):
    report = check_verifier(fi.flashinfer_chain_speculative_sampling, cases=catalogue.token_cases()[:4], chains=catalogue.chain_cases()[:1],
                            tv=0.05, seed=2, device="cpu", budget=specdec_budget, name="FlashInfer adapter (fake)")
    assert report.verdict == "PASS", report.format()


@pytest.mark.gpu
def test_real_flashinfer_passes_the_default_campaign(specdec_budget):
    pytest.importorskip("flashinfer")
    report = check_verifier(fi.flashinfer_chain_speculative_sampling, tv=0.01, seed=3, device="cuda", budget=specdec_budget,
                            name=f"FlashInfer {fi.TESTED_FLASHINFER} chain_speculative_sampling")
    print(report.format())
    assert report.verdict == "PASS", report.format()


def vllm_through_fake(draft_tokens, draft_probs, target_probs, generator):
    return vllm_adapter.vllm_rejection_sample(draft_tokens, draft_probs, target_probs, generator, rejection_sample=fake_vllm_rejection_sample)


def test_vllm_adapter_passes_the_engine_through_the_fake(specdec_budget):
    cases = [c for c in catalogue.token_cases() if c.name.startswith(("spec_section3", "peaked_v16"))]
    report = check_verifier(vllm_through_fake, cases=cases, chains=catalogue.chain_cases()[:1], tv=0.1, seed=4, device="cpu",
                            budget=specdec_budget, name="vLLM adapter (fake)")  # the real engine: make peers
    assert report.verdict == "PASS", report.format()


def test_sglang_adapters_pass_the_engine_through_the_fake(specdec_budget):
    def chain(draft_tokens, draft_probs, target_probs, generator):
        return sglang.sglang_chain_target_only(draft_tokens, draft_probs, target_probs, generator, kernel=fake_sglang_tree_kernel)

    def tree(tree_tokens, parents, draft_probs, target_probs, generator):
        return sglang.sglang_tree_target_only(tree_tokens, parents, draft_probs, target_probs, generator, kernel=fake_sglang_tree_kernel)

    point_mass = [c for c in catalogue.token_cases() if c.drafter == "point_mass"]
    point_mass_chains = [c for c in catalogue.chain_cases() if c.drafter == "point_mass"]
    report = check_verifier(chain, cases=point_mass, chains=point_mass_chains, tv=0.05, seed=5, device="cpu",
                            budget=specdec_budget, name="SGLang chain adapter (fake)")
    assert report.verdict == "PASS", report.format()
    report = check_tree(tree, children=("distinct",), tv=0.05, seed=6, device="cpu", budget=specdec_budget,
                        name="SGLang tree adapter (fake), at its real shape")
    assert report.verdict == "PASS" and not report.suboptimal(), report.format()


@pytest.mark.gpu
def test_real_sglang_passes_the_point_mass_campaign(specdec_budget):
    pytest.importorskip("sgl_kernel")
    cases = [c for c in catalogue.token_cases() if c.drafter == "point_mass"]
    chains = [c for c in catalogue.chain_cases() if c.drafter == "point_mass"]
    report = check_verifier(sglang.sglang_chain_target_only, cases=cases, chains=chains, tv=0.01, seed=8, device="cuda",
                            budget=specdec_budget, name=f"sgl-kernel {sglang.TESTED_SGL_KERNEL} tree_speculative_sampling_target_only")
    assert report.verdict == "PASS", report.format()


@pytest.mark.gpu
def test_real_sglang_tree_kernel_at_its_real_shape(specdec_budget):
    pytest.importorskip("sgl_kernel")
    report = check_tree(sglang.sglang_tree_target_only, children=("distinct",), tv=0.01, seed=9, device="cuda", budget=specdec_budget,
                        name=f"sgl-kernel {sglang.TESTED_SGL_KERNEL} tree_speculative_sampling_target_only (trees)")
    assert report.verdict == "PASS", report.format()
