"""Structural properties of the vectorised token verifier (F2-F4, E1-E5): exact, no sampling statistics."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from specdec.strategies import verifier_inputs


def run(inputs, uniforms=None, seed=0, dtype=torch.float64):
    tokens = inputs["draft_tokens"]
    draft = inputs["draft_probs"]
    draft = None if draft is None else draft.to(dtype)
    target = inputs["target_probs"].to(dtype)
    if uniforms is None:
        return sd.verify_tokens(tokens, draft, target, torch.Generator().manual_seed(seed))
    return sd.verify_tokens_with_uniforms(tokens, draft, target, uniforms)


@settings(max_examples=150)
@given(verifier_inputs(max_batch=5, max_draft=5, max_size=30), st.integers(0, 2**32 - 1))
def test_block_structure(inputs, seed):
    """n in [0, K]; tokens = x_1..x_n, then one token of the target's support, then padding;
    every accepted draft has p > 0 (strict u < p/q, E3)."""
    result = run(inputs, seed=seed)
    tokens, target = inputs["draft_tokens"], inputs["target_probs"]
    batch, num_draft = tokens.shape
    assert result.tokens.shape == (batch, num_draft + 1)
    for b in range(batch):
        n = int(result.num_accepted[b])
        assert 0 <= n <= num_draft
        assert torch.equal(result.tokens[b, :n], tokens[b, :n])
        for i in range(n):
            assert target[b, i, tokens[b, i]] > 0
        last = int(result.tokens[b, n])
        assert 0 <= last < target.shape[-1] and target[b, n, last] > 0
        assert (result.tokens[b, n + 1 :] == -1).all()
    assert torch.equal(result.num_emitted, result.num_accepted + 1)


@given(verifier_inputs(max_batch=4, max_draft=4, max_size=20), st.integers(0, 2**32 - 1))
def test_same_generator_state_same_result(inputs, seed):
    first, second = run(inputs, seed=seed), run(inputs, seed=seed)
    assert torch.equal(first.tokens, second.tokens)
    assert torch.equal(first.num_accepted, second.num_accepted)


@given(verifier_inputs(max_batch=6, max_draft=4, max_size=20), st.randoms(use_true_random=False))
def test_batch_independence(inputs, random):
    """Row b depends only on row b: permuting rows (and their uniforms) permutes the results,
    and each row equals a batch of one."""
    batch, num_draft = inputs["draft_tokens"].shape
    uniforms = torch.rand(batch, num_draft + 1, dtype=torch.float64, generator=torch.Generator().manual_seed(random.getrandbits(32)))
    order = torch.tensor(random.sample(range(batch), batch))
    permuted = {k: None if t is None else t[order] for k, t in inputs.items()}
    whole, shuffled = run(inputs, uniforms), run(permuted, uniforms[order])
    assert torch.equal(whole.tokens[order], shuffled.tokens)
    assert torch.equal(whole.num_accepted[order], shuffled.num_accepted)
    for b in range(batch):
        single = run({k: None if t is None else t[b : b + 1] for k, t in inputs.items()}, uniforms[b : b + 1])
        assert torch.equal(single.tokens[0], whole.tokens[b])


@given(verifier_inputs(max_batch=4, max_draft=4, max_size=20), st.integers(0, 2**32 - 1))
def test_float32_and_float64_agree_on_the_same_uniforms(inputs, seed):
    """Same uniforms, both precisions: identical results except on a set of uniforms of
    measure ~1e-7 (a uniform within float32 rounding of p/q or of a CDF step), never seen here."""
    batch, num_draft = inputs["draft_tokens"].shape
    uniforms = torch.rand(batch, num_draft + 1, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    low = run(inputs, uniforms, dtype=torch.float32)
    high = run(inputs, uniforms)
    assert torch.equal(low.num_accepted, high.num_accepted)
    assert torch.equal(low.tokens, high.tokens)


@settings(max_examples=150)
@given(st.data())
def test_greedy_emits_the_target_argmax_whatever_the_draft(data):
    """(E4) Emitted tokens are the target argmax at positions 0..n (lowest id on ties) and
    n is the length of the common prefix of the draft and the argmax sequence."""
    batch = data.draw(st.integers(1, 4))
    num_draft = data.draw(st.integers(0, 5))
    vocab = data.draw(st.integers(1, 6))
    scores = torch.tensor(  # few distinct values: many ties
        data.draw(st.lists(st.sampled_from([-float("inf"), -1.0, 0.0, 2.0]), min_size=batch * (num_draft + 1) * vocab, max_size=batch * (num_draft + 1) * vocab))
    ).reshape(batch, num_draft + 1, vocab)
    scores[..., -1] = 2.0 if data.draw(st.booleans()) else scores[..., -1]  # keep rows finite sometimes
    scores[scores.amax(-1) == -float("inf")] = 0.0
    drafts = torch.tensor(data.draw(st.lists(st.integers(0, vocab - 1), min_size=batch * num_draft, max_size=batch * num_draft))).reshape(batch, num_draft).long()
    result = sd.verify_greedy(drafts, scores)
    for b in range(batch):
        argmax = [min(i for i in range(vocab) if scores[b, j, i] == scores[b, j].max()) for j in range(num_draft + 1)]
        n = 0
        while n < num_draft and drafts[b, n] == argmax[n]:
            n += 1
        assert int(result.num_accepted[b]) == n
        assert result.tokens[b, : n + 1].tolist() == argmax[: n + 1]
        assert (result.tokens[b, n + 1 :] == -1).all()


@given(verifier_inputs(max_batch=4, max_draft=4, max_size=12), st.integers(0, 2**32 - 1))
def test_sampling_verifier_on_one_hot_targets_is_greedy(inputs, seed):
    """Warped with temperature 0, the target is one-hot and the sampling rule reduces to E4."""
    scores = inputs["target_probs"]
    one_hot = sd.warped_probs(scores, sd.SamplingConfig(temperature=0), dtype=torch.float64)
    tokens = inputs["draft_tokens"]
    sampled = sd.verify_tokens(tokens, None, one_hot, torch.Generator().manual_seed(seed))
    greedy = sd.verify_greedy(tokens, scores)
    assert torch.equal(sampled.tokens, greedy.tokens)
    assert torch.equal(sampled.num_accepted, greedy.num_accepted)


def test_zero_uniform_never_accepts_a_zero_probability_token():
    """(E3) u = 0 with p(x) = 0: `u*q < p` is 0 < 0, rejected (the `<=` form would accept)."""
    target = torch.tensor([[[0.0, 1.0], [0.5, 0.5]]], dtype=torch.float64)
    draft = torch.tensor([[[0.5, 0.5]]], dtype=torch.float64)
    result = sd.verify_tokens_with_uniforms(torch.tensor([[0]]), draft, target, torch.zeros(1, 2, dtype=torch.float64))
    assert result.num_accepted.item() == 0 and result.tokens[0, 0].item() == 1


def test_empty_residual_falls_back_to_target_and_is_flagged():
    """(E2) p <= q everywhere (p within sum tolerance of 1) and a rejection: the residual is empty;
    the token comes from p, never from a uniform clamp (B14), and the row is flagged."""
    target = torch.tensor([[[0.0, 0.49995, 0.5], [0.5, 0.5, 0.0]]], dtype=torch.float32)
    draft = torch.tensor([[[0.0, 0.5, 0.5]]], dtype=torch.float32)
    uniforms = torch.tensor([[0.99999, 0.0]], dtype=torch.float64)  # u*q(1) >= p(1): reject
    result = sd.verify_tokens_with_uniforms(torch.tensor([[1]]), draft, target, uniforms)
    assert result.num_accepted.item() == 0
    assert result.residual_empty.tolist() == [True]
    assert result.tokens[0, 0].item() == 1  # u = 0 picks the first token of p's support, not id 0


def test_top_uniform_stays_inside_the_vocabulary():
    """(B6) u just below 1 with trailing zero mass: the id is the last one with positive mass, never V."""
    target = torch.tensor([[[0.25, 0.75, 0.0, 0.0]]], dtype=torch.float32)
    uniforms = torch.tensor([[1 - 2**-53]], dtype=torch.float64)
    result = sd.verify_tokens_with_uniforms(torch.zeros(1, 0, dtype=torch.long), None, target, uniforms)
    assert result.tokens.tolist() == [[1]]


def test_zero_draft_length_and_single_token_vocabulary():
    """K = 0 emits one target token; V = 1 always emits id 0 and accepts every draft."""
    g = torch.Generator().manual_seed(0)
    autoregressive = sd.verify_tokens(torch.zeros(3, 0, dtype=torch.long), torch.zeros(3, 0, 2), torch.tensor([[[0.0, 1.0]]]).expand(3, 1, 2), g)
    assert autoregressive.tokens.tolist() == [[1]] * 3 and autoregressive.num_accepted.tolist() == [0] * 3
    single = sd.verify_tokens(torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, 1), torch.ones(2, 4, 1), g)
    assert single.tokens.tolist() == [[0] * 4] * 2 and single.num_accepted.tolist() == [3, 3]


def test_empty_batch():
    g = torch.Generator().manual_seed(0)
    result = sd.verify_tokens(torch.zeros(0, 2, dtype=torch.long), torch.zeros(0, 2, 3), torch.zeros(0, 3, 3), g)
    assert result.tokens.shape == (0, 3) and result.num_accepted.shape == (0,)


@settings(max_examples=100)
@given(verifier_inputs(max_batch=1, max_draft=4, max_size=1100, deterministic_draft=False), st.integers(1, 64), st.integers(0, 2**32 - 1))
def test_batch_broadcast_rows_give_the_same_tokens_as_copied_rows(inputs, batch, seed):
    """The conformance engine hands every row the same (K+1, V) block, expanded over the batch; the
    verifier then computes each residual once.  On the same uniforms it must emit exactly what it
    emits for contiguous copies of the rows, where every row is computed on its own."""
    num_draft = inputs["draft_tokens"].shape[1]
    g = torch.Generator().manual_seed(seed)
    draft_rows, target_rows = inputs["draft_probs"][0], inputs["target_probs"][0]
    tokens = torch.multinomial(draft_rows, batch, replacement=True, generator=g).T.contiguous() if num_draft else torch.zeros(batch, 0, dtype=torch.long)
    uniforms = torch.rand(batch, num_draft + 1, dtype=torch.float64, generator=g)
    for dtype in (torch.float64, torch.float32):
        draft = draft_rows.to(dtype).expand(batch, num_draft, -1)
        target = target_rows.to(dtype).expand(batch, num_draft + 1, -1)
        shared = sd.verify_tokens_with_uniforms(tokens, draft, target, uniforms, validate=False)
        copied = sd.verify_tokens_with_uniforms(tokens, draft.contiguous(), target.contiguous(), uniforms, validate=False)
        assert torch.equal(shared.tokens, copied.tokens) and torch.equal(shared.num_accepted, copied.num_accepted)
        assert torch.equal(shared.residual_empty, copied.residual_empty)


@pytest.mark.gpu
def test_cuda_matches_cpu_on_the_same_uniforms():
    g = torch.Generator().manual_seed(1)
    target = torch.rand(64, 5, 1000, generator=g, dtype=torch.float64).softmax(-1)
    draft = torch.rand(64, 4, 1000, generator=g, dtype=torch.float64).softmax(-1)
    tokens = sd.sample_categorical(draft, g)
    uniforms = torch.rand(64, 5, dtype=torch.float64, generator=g)
    for dtype in (torch.float32, torch.float64):
        cpu = sd.verify_tokens_with_uniforms(tokens, draft.to(dtype), target.to(dtype), uniforms)
        cuda = sd.verify_tokens_with_uniforms(tokens.cuda(), draft.to(dtype).cuda(), target.to(dtype).cuda(), uniforms.cuda())
        assert torch.equal(cpu.tokens, cuda.tokens.cpu())
