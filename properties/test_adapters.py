"""Adapters for peers' verifiers: their plumbing against fakes with the exact signatures (CI), and
the real packages when they are importable (their tests are marked gpu where they need CUDA)."""

import sys
import types

import pytest
import torch

import specdec as sd
from fixtures.fakes import fake_flashinfer_sampling
from specdec.adapters import flashinfer as fi


@pytest.fixture
def fake_flashinfer(monkeypatch):
    package = types.ModuleType("flashinfer")
    package.sampling = fake_flashinfer_sampling()
    monkeypatch.setitem(sys.modules, "flashinfer", package)
    monkeypatch.setitem(sys.modules, "flashinfer.sampling", package.sampling)


def inputs(batch=6, k=3, vocab=11, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    target = torch.rand(batch, k + 1, vocab, generator=g, dtype=torch.float64).softmax(-1).to(dtype)
    draft = torch.rand(batch, k, vocab, generator=g, dtype=torch.float64).softmax(-1).to(dtype)
    tokens = torch.multinomial(draft.reshape(-1, vocab).double(), 1, generator=g).reshape(batch, k)
    return tokens, draft, target


def test_flashinfer_plumbing_matches_the_reference_on_the_same_generator(fake_flashinfer):
    tokens, draft, target = inputs(dtype=torch.float32)
    ours = sd.verify_tokens(tokens, draft, target, torch.Generator().manual_seed(3))
    theirs = fi.flashinfer_chain_speculative_sampling(tokens, draft, target, torch.Generator().manual_seed(3))
    assert torch.equal(ours.tokens, theirs.tokens) and torch.equal(ours.num_accepted, theirs.num_accepted)
    assert theirs.tokens.dtype == torch.int64 and theirs.num_accepted.dtype == torch.int64
    again = fi.flashinfer_chain_speculative_sampling(tokens, draft, target, torch.Generator().manual_seed(3))
    assert torch.equal(again.num_accepted, ours.num_accepted)  # fresh count buffers: no accumulation across calls


def test_flashinfer_adapter_pads_converts_point_masses_and_refuses_k0(fake_flashinfer):
    tokens, draft, target = inputs()
    result = fi.flashinfer_chain_speculative_sampling(tokens, None, target, torch.Generator().manual_seed(1), pad_id=-7)
    reference = sd.verify_tokens(tokens, torch.nn.functional.one_hot(tokens, 11).float(), target.float(), torch.Generator().manual_seed(1))
    assert torch.equal(result.tokens, torch.where(reference.tokens < 0, -7, reference.tokens))
    with pytest.raises(ValueError, match="K >= 1"):
        fi.flashinfer_chain_speculative_sampling(tokens[:, :0], draft[:, :0], target[:, :1], torch.Generator())
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        fi.flashinfer_chain_speculative_sampling(tokens, draft, target, 0)
