"""Adapters for peers' verifiers: their plumbing against fakes with the exact signatures (CI), and
the real packages when they are importable (their tests are marked gpu where they need CUDA)."""

import pytest
import torch

import specdec as sd
from fixtures.fakes import fake_sglang_tree_kernel, fake_vllm_rejection_sample
from specdec.adapters import flashinfer as fi
from specdec.adapters import sglang
from specdec.adapters import vllm as vllm_adapter


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


# ------------------------------------------------------------------ vLLM 0.32 rejection_sample (fake: plumbing only; real: peers/)


def vllm(tokens, draft, target, generator, **kw):
    return vllm_adapter.vllm_rejection_sample(tokens, draft, target, generator, rejection_sample=fake_vllm_rejection_sample, **kw)


def test_vllm_plumbing_flattens_pads_and_owns_the_randomness():
    tokens, draft, target = inputs(dtype=torch.float32)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    first = vllm(tokens, draft, target, torch.Generator().manual_seed(5))
    assert torch.equal(torch.random.get_rng_state(), before), "the global RNG is the caller's: fork_rng around vLLM"
    again = vllm(tokens, draft, target, torch.Generator().manual_seed(5))
    assert torch.equal(first.tokens, again.tokens) and first.tokens.dtype == torch.int64 and first.tokens.shape == (6, 4)
    k = first.num_accepted
    kept = torch.arange(4).unsqueeze(0) <= k.unsqueeze(1)
    assert bool(((first.tokens >= 0) == kept).all()), "accepted drafts, one more token, then -1"
    assert bool((first.tokens[:, :3].eq(tokens) | ~(torch.arange(3) < k.unsqueeze(1))).all()), "the accepted prefix is the drafts"
    padded = vllm(tokens, draft, target, torch.Generator().manual_seed(5), pad_id=-9)
    assert torch.equal(padded.tokens, torch.where(first.tokens < 0, -9, first.tokens))


def test_vllm_adapter_passes_logits_the_bonus_from_row_k_point_masses_and_k0():
    tokens, _, target = inputs()
    # p == q at every draft position: every draft accepted.  An adapter that handed vLLM 0.32 the
    # probabilities where it takes logits (the 0.9.0 contract) fails here: softmax(p) != p.
    same = vllm(tokens, target[:, :3], target, torch.Generator().manual_seed(2))
    assert bool((same.num_accepted == 3).all()) and torch.equal(same.tokens[:, :3], tokens)
    g = torch.Generator().manual_seed(2)
    assert torch.equal(same.tokens[:, 3], sd.sample_categorical(target[:, 3], g))
    # a point-mass draft on a token the target never emits is always rejected
    zero = target.clone()
    zero.scatter_(2, torch.nn.functional.pad(tokens, (0, 1)).unsqueeze(-1), 0.0)
    zero = zero / zero.sum(-1, keepdim=True)
    rejected = vllm(tokens, None, zero, torch.Generator().manual_seed(4))
    assert bool((rejected.num_accepted == 0).all()) and bool((rejected.tokens[:, 0] != tokens[:, 0]).all())
    k0 = vllm(tokens[:, :0], None, target[:, :1], torch.Generator().manual_seed(1))
    assert k0.tokens.shape == (6, 1) and bool((k0.num_accepted == 0).all())


def test_vllm_greedy_adapter_is_verify_greedy_through_the_fake():
    tokens, _, target = inputs(batch=32, k=3, vocab=5, seed=9)
    tokens[:16] = target[:16, :3].argmax(-1)  # half the rows draft the argmax: accepted up to the bonus
    theirs = vllm_adapter.vllm_rejection_sample_greedy(tokens, None, target, torch.Generator(), rejection_sample=fake_vllm_rejection_sample)
    ours = sd.verify_greedy(tokens, target)
    assert torch.equal(theirs.tokens, ours.tokens) and torch.equal(theirs.num_accepted, ours.num_accepted)


def test_vllm_adapters_refuse_a_version_they_were_not_tested_on(monkeypatch):
    from specdec.adapters import _common

    monkeypatch.setattr(_common, "installed_version", lambda names: ("vllm", "0.9.0"))
    tokens, draft, target = inputs()
    with pytest.raises(vllm_adapter.PeerVersionError, match=r"supports vllm 0\.32\.0; installed: vllm 0\.9\.0"):
        vllm_adapter.vllm_rejection_sample(tokens, draft, target, torch.Generator())
    from specdec.conformance import token_cases

    report = sd.check_verifier(vllm_adapter.vllm_rejection_sample, cases=token_cases()[:1], chains=[], n=100)
    assert report.verdict == "ERROR" and "PeerVersionError: specdec.adapters.vllm supports vllm 0.32.0; installed: vllm 0.9.0" in report.summary()
    monkeypatch.setattr(_common, "installed_version", lambda names: None)
    with pytest.raises(vllm_adapter.PeerVersionError, match="needs vllm 0.32.0, which is not installed"):
        vllm_adapter.vllm_rejection_sample(tokens, draft, target, torch.Generator())


# ------------------------------------------------------------------ SGLang tree_speculative_sampling_target_only


def test_sglang_chain_is_the_reference_on_the_same_uniforms():
    tokens, _, target = inputs(batch=9, k=4, vocab=7, seed=3)
    result = sglang.sglang_chain_target_only(tokens, None, target, torch.Generator().manual_seed(8), kernel=fake_sglang_tree_kernel)
    g = torch.Generator().manual_seed(8)
    coins = torch.rand((9, 5), dtype=torch.float32, generator=g)
    final = torch.rand((9,), dtype=torch.float32, generator=g)
    uniforms = torch.cat([coins[:, :4], final.unsqueeze(1)], 1).double()
    reference = sd.verify_tokens_with_uniforms(tokens, None, target.float().double(), uniforms, validate=False)
    assert torch.equal(result.tokens, reference.tokens) and torch.equal(result.num_accepted, reference.num_accepted)


def test_sglang_adapters_refuse_a_draft_distribution_and_map_children():
    tokens, draft, target = inputs()
    with pytest.raises(ValueError, match="draft_probs must be None"):
        sglang.sglang_chain_target_only(tokens, draft, target, torch.Generator(), kernel=fake_sglang_tree_kernel)
    row = torch.tensor([0.0, 0.5, 0.5, 0.0], dtype=torch.float64).expand(50, 3, 4)
    children = torch.tensor([[0, 1, 2]]).expand(50, 3)  # all the mass is on the root's children: one is always accepted
    out = sglang.sglang_tree_target_only(children, [-1, 0, 0], None, row, torch.Generator().manual_seed(0), kernel=fake_sglang_tree_kernel)
    assert bool((out.num_accepted == 1).all()) and bool(((out.tokens[:, 0] == 1) | (out.tokens[:, 0] == 2)).all())
    none = sglang.sglang_tree_target_only(torch.tensor([[0, 0, 3]]).expand(50, 3), [-1, 0, 0], None, row, torch.Generator().manual_seed(0),
                                          kernel=fake_sglang_tree_kernel)
    assert bool((none.num_accepted == 0).all()) and bool(((none.tokens[:, 0] == 1) | (none.tokens[:, 0] == 2)).all())
    with pytest.raises(ValueError, match="draft_probs must be None"):
        sglang.sglang_tree_target_only(children, [-1, 0, 0], row, row, torch.Generator(), kernel=fake_sglang_tree_kernel)


def test_sglang_tree_adapter_is_the_tree_reference_at_its_real_shape():
    """A depth-2 tree of distinct children: the kernel (the fake: F15 with one uniform per node) and
    specdec's tree verifier emit the same law; here, on a tree where every choice is forced, the same tokens."""
    from specdec.verify.tree import verify_tree

    parents = [-1, 0, 0, 1, 1]
    target = torch.zeros(4, 5, 6, dtype=torch.float64)
    target[:, 0, 2] = 1.0  # the root accepts node 2 (token 2): a leaf, whose row emits token 5
    target[:, 1:, 5] = 1.0
    tokens = torch.tensor([[0, 1, 2, 3, 4]]).expand(4, 5)
    ours = verify_tree(tokens, parents, None, target, torch.Generator())
    theirs = sglang.sglang_tree_target_only(tokens, parents, None, target, torch.Generator(), kernel=fake_sglang_tree_kernel)
    assert torch.equal(ours.tokens, theirs.tokens) and torch.equal(ours.num_accepted, theirs.num_accepted)
    assert ours.tokens[0].tolist() == [2, 5, -1]
