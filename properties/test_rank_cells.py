"""The per-token test's cells and statistic (docs/reference.md §10, P1-P2), exactly.

* a law's cells: the emitted token's rank (ties by the lower id), the cell probabilities sum to 1, and a full
  row, its compact form (its 32 most likely tokens and the rest) and an oracle's listed form (top tokens and
  one rest mass) give the same expected cells wherever they can: ranks 1..32 and everything else;
* a token of probability 0 is a support violation (chance 0), whatever the form, unless a compact law's support
  is too large to list (then it is in the rest, as an oracle that lists its top tokens only would have it);
* the floor (a per-token TV): counts within it of the expectations give statistic 0, the floor never raises the
  statistic, its water-filled minimum over the ball is a numerical optimiser's, and the detectable TV stated
  includes the floor.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.laws.oracles import TokenLaw, rank_cells, row_law
from specdec.stats.rank_cells import BEYOND, CELLS, OUTSIDE, RANKS, rank_test


@st.composite
def rows(draw):
    vocab = draw(st.integers(1, 120))
    weights = np.array(draw(st.lists(st.integers(0, 6), min_size=vocab, max_size=vocab)), dtype=np.float64)
    if weights.sum() == 0:
        weights[draw(st.integers(0, vocab - 1))] = 1.0
    return weights / weights.sum()


@settings(max_examples=200, deadline=None)
@given(rows(), st.data())
def test_a_tokens_cell_is_its_rank_and_the_cells_are_a_law(row, data):
    token = data.draw(st.integers(0, row.size - 1))
    cells, expected, chance = rank_cells([TokenLaw(row)], [token])
    rank = int(((row > row[token]) | ((row == row[token]) & (np.arange(row.size) < token))).sum())
    assert cells[0] == min(rank, BEYOND) and chance[0] == row[token]
    assert abs(expected[0].sum() - 1) < 1e-12 and expected[0, OUTSIDE] == 0
    top = min(RANKS, row.size)
    assert np.allclose(expected[0, :top], np.sort(row)[::-1][:top]) and not expected[0, top:RANKS].any()


@settings(max_examples=200, deadline=None)
@given(rows(), st.data())
def test_compact_and_listed_forms_give_the_same_cells_as_the_full_row(row, data):
    token = data.draw(st.integers(0, row.size - 1))
    full_cells, full, full_chance = rank_cells([TokenLaw(row)], [token])
    compact = TokenLaw.compact(row, support=data.draw(st.sampled_from([256, 16])))
    cells, expected, chance = rank_cells([compact], [token])
    assert np.allclose(expected[0, :RANKS], full[0, :RANKS]), (expected, full)
    assert abs(expected[0, BEYOND] + expected[0, OUTSIDE] - full[0, BEYOND]) < 1e-12
    if row[token] == 0:  # a support violation in either form, unless the support was too large to list
        assert chance[0] == full_chance[0] == 0 or (compact.rest > 0 and chance[0] == compact.rest)
    elif full_cells[0] < RANKS:
        assert cells[0] == full_cells[0] and chance[0] == full_chance[0]
    else:  # beyond the 32 listed: in the rest, whose mass is its chance
        assert cells[0] in (BEYOND, OUTSIDE) and chance[0] > 0
    assert row_law(row).ids is None if row.size <= 4 * RANKS else row_law(row).ids is not None


def test_a_token_outside_a_listed_law_without_rest_is_a_support_violation():
    law = TokenLaw(np.array([0.7, 0.3]), ids=np.array([5, 9]), rest=0.0)
    cells, expected, chance = rank_cells([law, law], [9, 4])
    assert list(cells) == [1, OUTSIDE] and list(chance) == [0.3, 0.0]
    assert expected.shape == (2, CELLS) and expected[0, OUTSIDE] == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.5, 500), min_size=2, max_size=12), st.floats(0.0, 0.2), st.data())
def test_counts_within_the_floor_pass_and_the_floor_never_raises_the_statistic(expected, floor, data):
    expected = np.array(expected)
    n = expected.sum()
    counts = np.array(data.draw(st.lists(st.integers(0, 600), min_size=expected.size, max_size=expected.size)), dtype=float)
    if counts.sum() == 0:
        return
    expected = expected * counts.sum() / n  # a law's expectations sum to the tokens counted
    tv = 0.5 * np.abs(counts - expected).sum() / counts.sum()
    exact = rank_test(counts, expected, alpha=1e-3)
    floored = rank_test(counts, expected, alpha=1e-3, floor=floor)
    assert floored.statistic <= exact.statistic + 1e-9
    if tv <= floor and exact.bins == expected.size:  # within the floor: as if the expectations were the counts
        assert floored.statistic <= 1e-6 * (1 + counts.sum())
    assert floored.detectable_tv == min(1.0, exact.detectable_tv + floor)


def test_the_floor_statistic_is_the_smallest_pearson_within_the_ball():
    from scipy.optimize import minimize

    from specdec.stats.rank_cells import floor_statistic

    rng = np.random.default_rng(3)
    for _ in range(60):
        k = int(rng.integers(2, 7))
        expected = rng.uniform(1, 100, k)
        observed = rng.multinomial(int(expected.sum()), expected / expected.sum()).astype(float)
        expected *= observed.sum() / expected.sum()
        allowance = rng.uniform(0, 0.5) * np.abs(observed - expected).sum()
        constraints = [{"type": "eq", "fun": lambda e: e.sum() - expected.sum()},
                       {"type": "ineq", "fun": lambda e: 2 * allowance - np.abs(e - expected).sum()}]
        found = minimize(lambda e: ((observed - e) ** 2 / e).sum(), expected, constraints=constraints, bounds=[(1e-9, None)] * k,
                         method="SLSQP", options={"maxiter": 500, "ftol": 1e-12})
        ours = floor_statistic(observed, expected, allowance)
        assert ours <= found.fun * (1 + 1e-6) + 1e-6  # never above a numerical optimiser's minimum ...
        assert ours >= found.fun * (1 - 1e-3) - 1e-6  # ... nor below it: the minimum, so the level holds exactly


def test_tokens_of_probability_zero_fail_an_exact_claim_and_count_against_a_floor():
    """Floor 0: one such token is p = 0.  Floor tau: a law within tau may give them up to tau each, so a few pass and
    more than the allowance (tau n) fail."""
    expected = np.zeros(CELLS)
    expected[:3] = [2000.0, 1500.0, 596.0]
    observed = expected.copy()
    observed[0] -= 1
    observed[OUTSIDE] = 1  # one token outside its law's support, where the laws expect nothing
    assert rank_test(observed, expected, alpha=1e-6).pvalue == 0.0
    within = rank_test(observed, expected, alpha=1e-6, floor=1e-3, support_violation=1)
    assert within.pvalue > 0.5 and within.support_violation == 0, within
    many = observed.copy()
    many[0] -= 40
    many[OUTSIDE] += 40  # 41 tokens: ten times the allowance of 4.1
    assert rank_test(many, expected, alpha=1e-6, floor=1e-3, support_violation=41).pvalue < 1e-20
