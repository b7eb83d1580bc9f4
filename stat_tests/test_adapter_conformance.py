"""Peers' verifiers through the engine: the adapters over fakes with the exact signatures (CI), and
the real FlashInfer kernel on a GPU (marked gpu)."""

import sys
import types

import pytest

from fixtures.fakes import fake_flashinfer_sampling
from specdec.adapters import flashinfer as fi
from specdec.conformance import catalogue, check_verifier


@pytest.fixture
def fake_flashinfer(monkeypatch):
    package = types.ModuleType("flashinfer")
    package.sampling = fake_flashinfer_sampling()
    monkeypatch.setitem(sys.modules, "flashinfer", package)
    monkeypatch.setitem(sys.modules, "flashinfer.sampling", package.sampling)


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
