"""The exact law of one verification step and of a chain (F1, F4, F6, F26, F27)."""

import zlib
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from specdec.strategies import probability_pairs, probability_vectors

EXACT = 1e-12


def tv(target, draft):
    return 0.5 * (target - draft).abs().sum().item()


@settings(max_examples=150)
@given(probability_pairs(max_size=50_000))
def test_output_marginal_is_the_target(pair):
    """(F4) P(out = y) = p(y) for every pair, up to V = 50,000, in float64."""
    target, draft = pair
    law = sd.token_output_law(target, draft)
    assert (law - target).abs().max().item() <= EXACT


@settings(max_examples=200)
@given(probability_pairs(max_size=64))
def test_joint_law_marginals_diagonal_and_acceptance(pair):
    """Joint of (output, draft): marginals (p, q), diagonal min(p, q), acceptance 1 - TV (F1)."""
    target, draft = pair
    joint = sd.token_joint_law(target, draft)  # (V_out, V_draft)
    assert (joint >= 0).all()
    assert (joint.sum(1) - target).abs().max().item() <= EXACT
    assert (joint.sum(0) - draft).abs().max().item() <= EXACT
    assert (joint.diagonal() - torch.minimum(target, draft)).abs().max().item() <= EXACT
    acceptance = joint.diagonal().sum().item()
    assert acceptance == pytest.approx(1 - tv(target, draft), abs=EXACT)
    assert sd.acceptance_probability(target, draft).item() == pytest.approx(acceptance, abs=EXACT)


@settings(max_examples=200)
@given(probability_pairs(max_size=64))
def test_joint_law_is_the_closed_form_optimal_plan(pair):
    """The rule's joint law (built from F2-F3) equals the closed form Pi* (F6)."""
    target, draft = pair
    difference = sd.token_joint_law(target, draft) - sd.optimal_plan(target, draft)
    assert difference.abs().max().item() <= EXACT


@given(probability_vectors(max_size=64), st.data())
def test_deterministic_drafter_accepts_with_target_mass(target, data):
    """(E5) q = point mass on x: accept with probability p(x); residual = p with x removed."""
    x = data.draw(st.integers(0, target.numel() - 1))
    point_mass = torch.zeros_like(target)
    point_mass[x] = 1.0
    joint = sd.token_joint_law(target, point_mass)
    assert joint[x, x].item() == pytest.approx(target[x].item(), abs=EXACT)
    assert (joint.sum(1) - target).abs().max().item() <= EXACT


def test_equal_pair_never_rejects():
    """(E2) p == q: beta = 1 and the joint is diag(p); nothing is left to the residual."""
    target = torch.tensor([0.5, 0.25, 0.25, 0.0], dtype=torch.float64)
    assert torch.equal(sd.token_joint_law(target, target), torch.diag(target))
    assert sd.acceptance_probability(target, target).item() == 1.0


# --- chains of conditional tables -------------------------------------------------


def table_chain(vocab, seed, concentration=0.5):
    """Context-dependent random tables: p(. | prefix), q(. | prefix) from a per-prefix seed."""

    def make(role):
        def fn(prefix):
            g = torch.Generator().manual_seed(zlib.crc32(repr((seed, role, prefix)).encode()))
            w = -torch.rand(vocab, generator=g, dtype=torch.float64).log() ** (1 / concentration)
            return w / w.sum()

        return fn

    return make("target"), make("draft")


@pytest.mark.parametrize("vocab,num_draft", [(2, 0), (3, 1), (3, 3), (4, 2), (1, 3)])
def test_acceptance_profile_and_block_law(vocab, num_draft):
    """F26 profile vs brute-force product, block law sums to 1 and its first token is p_1 (F4)."""
    target_fn, draft_fn = table_chain(vocab, seed=vocab * 10 + num_draft)
    profile = sd.acceptance_profile(target_fn, draft_fn, num_draft)
    assert profile[0].item() == 1.0
    assert torch.all(profile[1:] <= profile[:-1] + EXACT)
    if num_draft:
        assert profile[1].item() == pytest.approx(sd.acceptance_probability(target_fn(()), draft_fn(())).item(), abs=EXACT)
    law = sd.emitted_block_law(target_fn, draft_fn, num_draft)
    assert sum(law.values()) == pytest.approx(1.0, abs=EXACT)
    first = torch.zeros(vocab, dtype=torch.float64)
    for block, mass in law.items():
        first[block[0]] += mass
    assert (first - target_fn(())).abs().max().item() <= EXACT
    # P(at least i accepted) from the block law equals A_i.
    for i in range(num_draft + 1):
        at_least = sum(m for b, m in law.items() if len(b) - 1 >= i)
        assert at_least == pytest.approx(profile[i].item(), abs=EXACT)
    mean, second, var = sd.tokens_per_step_moments(profile)
    tokens = {b: len(b) for b in law}
    assert mean == pytest.approx(sum(law[b] * t for b, t in tokens.items()), abs=EXACT)
    assert var == pytest.approx(sum(law[b] * t * t for b, t in tokens.items()) - mean**2, abs=EXACT)


def test_token_worked_example_of_spec_section_4():
    """docs/reference.md §4: p = (1/3, 2/3), q = (2/3, 1/3), gamma = 2: token-level E[tau] = 10/9 exactly."""
    target = lambda prefix: [1 / 3, 2 / 3]  # noqa: E731
    draft = lambda prefix: [2 / 3, 1 / 3]  # noqa: E731
    profile = sd.acceptance_profile(target, draft, 2)
    mean, _, _ = sd.tokens_per_step_moments(profile)
    assert Fraction(mean - 1).limit_denominator(1000) == Fraction(10, 9)
    assert mean - 1 == pytest.approx(10 / 9, abs=1e-15)


def test_chain_with_equal_models_accepts_everything():
    same = lambda prefix: [0.2, 0.3, 0.5]  # noqa: E731
    assert torch.equal(sd.acceptance_profile(same, same, 3), torch.ones(4, dtype=torch.float64))


def test_chain_errors_name_the_argument():
    good = lambda prefix: [0.5, 0.5]  # noqa: E731
    with pytest.raises(ValueError, match="num_draft_tokens"):
        sd.acceptance_profile(good, good, -1)
    with pytest.raises(ValueError, match="draft_fn"):
        sd.acceptance_profile(good, lambda prefix: [0.5, 0.25, 0.25], 2)
    with pytest.raises(ValueError, match="target_fn"):
        sd.emitted_block_law(lambda prefix: [0.7, 0.7], good, 1)
