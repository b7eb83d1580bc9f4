"""Closed forms vs LP oracles (docs/reference.md §2, §3): the solver is checked by a dual certificate."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from specdec.laws import lp
from specdec.strategies import probability_pairs


@settings(max_examples=60)
@given(probability_pairs(max_size=40))
def test_transport_lp_optimum_is_the_closed_form_beta(pair):
    """(F5) LP optimum = beta to 1e-9, certificate holds, and the closed-form plan (F6) is
    feasible with the same objective.  Plans are not compared: the optimum is not unique."""
    target, draft = pair
    solution = lp.transport_lp(target, draft)
    assert lp.certificate(solution).holds(1e-9), lp.certificate(solution)
    beta = sd.acceptance_probability(target, draft).item()
    assert solution.optimum == pytest.approx(beta, abs=1e-9)
    plan = solution.plan
    assert np.abs(plan.sum(1) - target.numpy()).max() <= 1e-9 and np.abs(plan.sum(0) - draft.numpy()).max() <= 1e-9
    closed = sd.optimal_plan(target, draft)
    assert closed.trace().item() == pytest.approx(beta, abs=1e-12)


@settings(max_examples=40)
@given(probability_pairs(min_size=2, max_size=5, relations=("independent", "near", "disjoint", "equal")), st.integers(2, 3))
def test_multidraft_formula_equals_full_lp_and_flow_lp(pair, num_drafts):
    """(F9-F10) sorted-prefix formula = full LP (F7) = max-flow LP (F8) for k = 2, 3."""
    target, draft = pair
    formula = sd.multidraft_optimum(target, draft, num_drafts)
    full = lp.multidraft_lp(target, draft, num_drafts)
    assert lp.certificate(full).holds(1e-9)
    assert formula == pytest.approx(full.optimum, abs=1e-9)
    assert formula == pytest.approx(lp.flow_lp(target, draft, num_drafts), abs=1e-9)


@given(probability_pairs(max_size=30))
def test_one_draft_optimum_is_one_minus_tv(pair):
    target, draft = pair
    assert sd.multidraft_optimum(target, draft, 1) == pytest.approx(sd.acceptance_probability(target, draft).item(), abs=1e-12)


@pytest.mark.parametrize("k,alpha_star", [(1, 0.700), (2, 0.860), (3, 0.988)])
def test_table_of_spec_section_3(k, alpha_star):
    target, draft = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    assert sd.multidraft_optimum(target, draft, k) == pytest.approx(alpha_star, abs=1e-12)
    assert lp.multidraft_lp(target, draft, k).optimum == pytest.approx(alpha_star, abs=1e-9)
    assert lp.flow_lp(target, draft, k) == pytest.approx(alpha_star, abs=1e-9)


def test_lp_at_v500_matches_closed_form():
    rng = np.random.default_rng(0)
    target, draft = rng.dirichlet(np.ones(500)), rng.dirichlet(np.ones(500))
    solution = lp.transport_lp(target, draft)
    assert lp.certificate(solution).holds(1e-9)
    assert solution.optimum == pytest.approx(np.minimum(target, draft).sum(), abs=1e-12)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: lp.transport_lp([0.5, 0.6], [0.5, 0.5]), "target_probs row \\(\\) sums to 1.1"),
        (lambda: lp.transport_lp([1.5, -0.5], [0.5, 0.5]), "target_probs has a negative probability"),
        (lambda: lp.transport_lp([0.5, 0.5], [1.0]), "target_probs shape \\(2,\\) != draft_probs shape \\(1,\\)"),
        (lambda: lp.transport_lp(np.ones(1001) / 1001, np.ones(1001) / 1001), "too large for the V\\^2 LP"),
        (lambda: lp.multidraft_lp([0.5, 0.5], [0.5, 0.5], 0), "num_drafts must be an integer >= 1"),
        (lambda: lp.multidraft_lp(np.ones(50) / 50, np.ones(50) / 50, 3), "too large for the full LP"),
        (lambda: lp.flow_lp(np.ones(20) / 20, np.ones(20) / 20, 2), "too large for the subset-enumerating"),
        (lambda: sd.multidraft_optimum([0.5, 0.5], [0.5, 0.5], 1.5), "num_drafts"),
    ],
)
def test_bad_input_fails_before_any_solver(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_closed_form_plan_handles_beta_one():
    target = torch.tensor([0.25, 0.75], dtype=torch.float64)
    assert torch.equal(sd.optimal_plan(target, target), torch.diag(target))
