"""Token trees, exactly: the tree verifier is the token rule on a chain and MSS on one node's children
(token for token on the same uniforms), its exact law is lossless on every topology, and the lossy
variants are not (docs/reference.md F14, F15, L6)."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from specdec.laws.tree import tree_decoder_law, tree_shape, tree_step_law, tree_step_moments
from specdec.verify.tree import verify_tree, verify_tree_with_uniforms

TOPOLOGIES = [(-1, 0, 1, 2), (-1, 0, 0, 0), (-1, 0, 0, 1, 1), (-1, 0, 0, 0, 1, 1, 2, 4), (-1, 0, 0, 0, 1, 1, 1, 2, 2, 2)]


def random_tables(vocab, seed, sharpness=1.5):
    rng = np.random.default_rng(seed)
    store = {}

    def table(role):
        def fn(path):
            key = (role, tuple(path))
            if key not in store:
                w = np.exp(sharpness * rng.standard_normal(vocab))
                store[key] = w / w.sum()
            return store[key]
        return fn

    return table("target"), table("draft")


def target_sequence_law(target_fn, vocab, length):
    law = {}
    for seq in itertools.product(range(vocab), repeat=length):
        p = 1.0
        for t in range(length):
            p *= target_fn(seq[:t])[seq[t]]
        law[seq] = p
    return law


def tv(a, b):
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


@pytest.mark.parametrize("parents", TOPOLOGIES)
@pytest.mark.parametrize("children", ["iid", "distinct"])
def test_the_tree_rule_is_lossless_on_every_topology(parents, children):
    target_fn, draft_fn = random_tables(3, seed=len(parents))
    law = tree_decoder_law(parents, target_fn, draft_fn, 3, children=children)
    assert tv(law, target_sequence_law(target_fn, 3, 3)) < 1e-12
    step = tree_step_law(parents, target_fn, draft_fn, children=children)
    assert abs(sum(step.values()) - 1) < 1e-12 and max(len(e) for e in step) <= tree_shape(parents).max_depth + 1


@pytest.mark.parametrize("parents", [(-1, 0, 0), (-1, 0, 0, 1, 1), (-1, 0, 0, 0, 1, 2)])
@pytest.mark.parametrize("children", ["iid", "distinct"])
def test_without_the_residual_update_between_siblings_it_is_lossy(parents, children):
    target_fn, draft_fn = random_tables(3, seed=5)
    lossy = tree_decoder_law(parents, target_fn, draft_fn, 2, children=children, update_residual=False)
    assert tv(lossy, target_sequence_law(target_fn, 3, 2)) > 0.01  # L6: the example of docs/reference.md §3 is 0.150


def test_a_chain_is_a_tree_of_width_one_and_one_node_a_tree_of_depth_one():
    """The exact laws agree with the chain and multi-draft laws (independent code)."""
    target_fn, draft_fn = random_tables(4, seed=9)
    chain = tree_step_law((-1, 0, 1, 2), target_fn, draft_fn)
    block = sd.emitted_block_law(target_fn, draft_fn, 3)
    assert tv(chain, {k: float(v) for k, v in block.items()}) < 1e-12
    p, q = torch.tensor(target_fn(())), torch.tensor(draft_fn(()))
    node = tree_step_law((-1, 0, 0, 0), lambda path: target_fn(path), draft_fn)
    first = {}
    for emitted, mass in node.items():
        first[emitted[:1]] = first.get(emitted[:1], 0.0) + mass
    mss, acceptance = sd.laws.mss_law(p, q, 3)
    assert tv(first, {(x,): float(m) for x, m in enumerate(mss)}) < 1e-12
    accepted = sum(m for e, m in node.items() if len(e) == 2)
    assert abs(accepted - acceptance) < 1e-12


def rows(batch, vocab, n, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(batch, n, vocab, generator=g, dtype=torch.float64).pow(3).softmax(-1).to(dtype)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(0, 4), vocab=st.integers(1, 7), seed=st.integers(0, 10**6), point=st.booleans(), f32=st.booleans())
def test_on_a_chain_the_tree_verifier_is_the_token_verifier_token_for_token(k, vocab, seed, point, f32):
    dtype = torch.float32 if f32 else torch.float64
    batch = 64
    target = rows(batch, vocab, k + 1, seed, dtype)
    draft = rows(batch, vocab, k + 1, seed + 1, dtype)  # row n: the law node n's child was drawn from
    g = torch.Generator().manual_seed(seed)
    drafts = torch.multinomial(draft[:, :k].reshape(-1, vocab).double(), 1, generator=g).reshape(batch, k) if k else torch.zeros(batch, 0, dtype=torch.long)
    uniforms = torch.rand(batch, k + 1, generator=g, dtype=torch.float64)
    theirs = sd.verify_tokens_with_uniforms(drafts, None if point else draft[:, :k], target, uniforms)
    ours = verify_tree_with_uniforms(torch.cat([torch.zeros(batch, 1, dtype=torch.long), drafts], 1), list(range(-1, k)),
                                     None if point else draft, target, uniforms)
    assert torch.equal(ours.tokens, theirs.tokens) and torch.equal(ours.num_accepted, theirs.num_accepted)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 5), vocab=st.integers(5, 9), seed=st.integers(0, 10**6), distinct=st.booleans())
def test_one_nodes_children_are_mss_token_for_token(k, vocab, seed, distinct):
    batch = 256
    target, draft = rows(batch, vocab, 1, seed, torch.float64)[:, 0], rows(batch, vocab, 1, seed + 1, torch.float64)[:, 0]
    g = torch.Generator().manual_seed(seed)
    kids = torch.argsort(-draft, dim=-1, stable=True)[:, :k] if distinct else torch.multinomial(draft, k, replacement=True, generator=g)
    ours = verify_tree_with_uniforms(torch.cat([torch.zeros(batch, 1, dtype=torch.long), kids], 1), [-1] + [0] * k,
                                     None if distinct else draft.unsqueeze(1).expand(batch, k + 1, vocab).contiguous(),
                                     target.unsqueeze(1).expand(batch, k + 1, vocab).contiguous(),
                                     torch.rand((batch, k + 1), dtype=torch.float64, generator=torch.Generator().manual_seed(seed)))
    theirs = sd.verify_mss(kids, None if distinct else draft, target, torch.Generator().manual_seed(seed))
    assert torch.equal(ours.tokens[:, 0], theirs.token)
    assert torch.equal(ours.num_accepted, (theirs.accepted_index >= 0).long())


def test_tokens_per_step_moments_come_from_the_step_law():
    target_fn, draft_fn = random_tables(3, seed=2)
    law = tree_step_law((-1, 0, 0, 1), target_fn, draft_fn)
    mean, var = tree_step_moments((-1, 0, 0, 1), target_fn, draft_fn)
    assert abs(mean - sum(len(e) * m for e, m in law.items())) < 1e-12 and var > 0


def test_the_output_has_the_verification_outcome_shape_and_accepts_only_paths():
    parents = (-1, 0, 0, 1, 1, 2)
    batch, vocab = 500, 5
    target = rows(batch, vocab, 6, 0, torch.float64)
    draft = rows(batch, vocab, 6, 1, torch.float64)
    g = torch.Generator().manual_seed(3)
    tokens = torch.multinomial(draft[:, 0], 6, replacement=True, generator=g)  # any tokens: each node's law is row 0 here
    draft = draft[:, :1].expand(batch, 6, vocab).contiguous()
    out = verify_tree(tokens, parents, draft, target, g, pad_id=-7)
    assert out.tokens.shape == (batch, 3) and out.num_accepted.dtype == torch.int64
    assert bool(((out.num_accepted >= 0) & (out.num_accepted <= 2)).all())
    children = tree_shape(parents).children
    for b in range(batch):
        node = 0
        for j in range(int(out.num_accepted[b])):
            node = next(k for k in children[node] if int(tokens[b, k]) == int(out.tokens[b, j]))  # a path of the tree
        assert int(out.tokens[b, out.num_accepted[b]]) in range(vocab)
        assert bool((out.tokens[b, int(out.num_accepted[b]) + 1 :] == -7).all())


@pytest.mark.parametrize(
    "parents, message",
    [([0, 0], "parents\\[0\\] must be -1"), ([-1, 1], "parent must come before it"), ([], "non-empty"), ("ab", "non-empty"),
     ([-1, 0.5], "parents\\[1\\]")],
)
def test_bad_topologies_are_named(parents, message):
    with pytest.raises((ValueError, TypeError), match=message):
        tree_shape(parents)


def test_inputs_are_validated_like_every_verifier():
    parents = [-1, 0, 0]
    target = rows(4, 3, 3, 0, torch.float64)
    tokens = torch.tensor([[0, 1, 1]] * 4)
    with pytest.raises(ValueError, match="children of node 0 must be distinct"):
        verify_tree(tokens, parents, None, target, torch.Generator())
    with pytest.raises(ValueError, match="tree_tokens"):
        verify_tree(torch.tensor([[0, 1, 7]] * 4), parents, None, target, torch.Generator())
    with pytest.raises(ValueError, match="target_probs"):
        verify_tree(tokens, parents, None, target[:, :2], torch.Generator())
    zero = target.clone()
    zero[:, 0, 1] = 0
    zero[:, 0] /= zero[:, 0].sum(-1, keepdim=True)
    with pytest.raises(ValueError, match="proposal"):  # E1: a child of draft probability 0
        verify_tree(torch.tensor([[0, 1, 2]] * 4), parents, zero, target, torch.Generator())
    empty = verify_tree(tokens[:0], parents, None, target[:0], torch.Generator())
    assert empty.tokens.shape == (0, 2)
