"""Block verification (F16-F20): exact law, F20, docs/reference.md §4's worked example, the vectorised sampler's structure."""

import zlib
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import specdec as sd
from specdec.laws import block
from specdec.strategies import verifier_inputs


def fraction_chain(seed, vocab):
    """Random context-dependent tables with rational entries (exact arithmetic)."""

    def make(role):
        def fn(prefix):
            g = torch.Generator().manual_seed(zlib.crc32(repr((seed, role, prefix)).encode()))
            weights = (torch.randint(0, 5, (vocab,), generator=g) + (torch.arange(vocab) == 0)).tolist()
            return [Fraction(w, sum(weights)) for w in weights]

        return fn

    return make("target"), make("draft")


def test_worked_example_of_spec_section_4():
    """p = (1/3, 2/3), q = (2/3, 1/3), gamma = 2: E[tau] block 11/9, token 10/9, joint-min 12/9."""
    target = lambda prefix: [Fraction(1, 3), Fraction(2, 3)]  # noqa: E731
    draft = lambda prefix: [Fraction(2, 3), Fraction(1, 3)]  # noqa: E731
    law = block.block_law(target, draft, 2, 2)
    assert sum(law.values()) == 1
    assert sum(mass * (len(b) - 1) for b, mass in law.items()) == Fraction(11, 9)
    assert block.expected_accepted_block(target, draft, 2, 2) == Fraction(11, 9)
    assert block.joint_min_ideal(target, draft, 2, 2) == Fraction(12, 9)
    assert sum(mass for b, mass in law.items() if b[0] == 0) == Fraction(1, 3)
    # Per-draft table: draft aa has h = (1, 0, 1/4).
    _, h = block.block_weights([[Fraction(1, 3), Fraction(2, 3)]] * 3, [[Fraction(2, 3), Fraction(1, 3)]] * 2, (0, 0))
    assert h == [1, 0, Fraction(1, 4)]


@pytest.mark.parametrize("seed,vocab,gamma", [(1, 2, 1), (2, 2, 3), (3, 3, 2), (4, 3, 3), (5, 4, 2), (6, 2, 0)])
def test_block_law_is_lossless_and_beats_token_level_in_expectation(seed, vocab, gamma):
    """Exact rationals: the block law sums to 1, its first token is exactly the target's (F4),
    E[tau_block] = F20, and token-level E[tau] <= E[tau_block] <= joint-min ideal."""
    target, draft = fraction_chain(seed, vocab)
    law = block.block_law(target, draft, gamma, vocab)
    assert sum(law.values()) == 1
    first = [sum(m for b, m in law.items() if b[0] == y) for y in range(vocab)]
    assert first == list(target(()))
    expected_tau = sum(m * (len(b) - 1) for b, m in law.items())
    assert expected_tau == block.expected_accepted_block(target, draft, gamma, vocab)
    profile = sd.acceptance_profile(lambda p: [float(x) for x in target(p)], lambda p: [float(x) for x in draft(p)], gamma)
    token_tau = profile[1:].sum().item()
    assert float(expected_tau) >= token_tau - 1e-12
    assert float(expected_tau) <= float(block.joint_min_ideal(target, draft, gamma, vocab)) + 1e-12


@given(verifier_inputs(max_batch=5, max_draft=5, max_size=30), st.integers(0, 2**32 - 1))
def test_block_verifier_structure(inputs, seed):
    result = sd.verify_block(inputs["draft_tokens"], inputs["draft_probs"], inputs["target_probs"], torch.Generator().manual_seed(seed))
    tokens, target = inputs["draft_tokens"], inputs["target_probs"]
    for b in range(tokens.shape[0]):
        n = int(result.num_accepted[b])
        assert torch.equal(result.tokens[b, :n], tokens[b, :n])
        last = int(result.tokens[b, n])
        assert target[b, n, last] > 0 or result.residual_empty[b]
        assert (result.tokens[b, n + 1 :] == -1).all()
