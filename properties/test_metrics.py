"""Acceptance and speed metrics (docs/reference.md §6): worked examples and identities."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import specdec as sd


def test_worked_examples_of_spec_section_6():
    assert sd.expected_tokens_iid(0.8, 5) == pytest.approx(3.689, abs=5e-4)  # F22
    assert sd.optimal_draft_length(0.8, 0.05) == (8, pytest.approx(3.09, abs=5e-3))  # F24
    assert sd.optimal_draft_length(0.6, 0.05) == (4, pytest.approx(1.92, abs=5e-3))


def test_pooled_acceptance_counts_rejected_tokens_once_and_ignores_discarded_drafts():
    # K = 4: steps accept 4 (4 verified), 1 (2 verified: one accepted + the rejected), 0 (1 verified).
    assert sd.acceptance_rate([4, 1, 0], 4) == pytest.approx(5 / 7)
    assert sd.acceptance_rate([2, 0], [2, 0]) == 1.0  # a K = 0 step verifies nothing
    assert sd.mean_tokens_per_step([5, 2, 1]) == pytest.approx(8 / 3)


@given(st.floats(0, 1), st.integers(0, 20))
def test_positional_formula_reduces_to_the_iid_one(alpha, gamma):
    """F25 with alpha_j = alpha equals F22; E[T] lies in [1, gamma + 1]."""
    iid = sd.expected_tokens_iid(alpha, gamma)
    assert sd.expected_tokens_positional([alpha] * gamma) == pytest.approx(iid, rel=1e-12, abs=1e-12)
    assert 1 - 1e-12 <= iid <= gamma + 1 + 1e-12


@given(st.floats(0, 1), st.floats(0, 1))
def test_gamma_star_is_the_best_of_the_scan(alpha, cost):
    gamma, best = sd.optimal_draft_length(alpha, cost)
    assert all(sd.speedup(alpha, g, cost) <= best for g in range(65))
    assert sd.speedup(alpha, gamma, cost) == best
