"""P5-P6 (a static batch waits for its slowest row): the DP's law of the steps a row needs, against an exact
enumeration in fractions of every sequence of accepted counts, and the batch factor's edges."""

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.laws.static_batch import expected_batch_steps, static_batch_factor, step_tokens_law, steps_law


def enumerated_steps_law(alpha: Fraction, k: int, new_tokens: int) -> list[Fraction]:
    """P(S <= s), s = 0..N, by enumerating every sequence of N steps' emitted tokens (each 1..K+1)."""
    step = {t: alpha ** (t - 1) * (1 - alpha) for t in range(1, k + 1)} | {k + 1: alpha ** k}
    law = [Fraction(0)] * (new_tokens + 1)
    for path in itertools.product(range(1, k + 2), repeat=new_tokens):
        weight, emitted, steps = Fraction(1), 0, 0
        for t in path:
            if emitted >= new_tokens:
                break
            weight *= step[t]
            emitted += t
            steps += 1
        # the steps after the row is done are summed over: their weights total 1 for each prefix, but
        # the loop above counts each prefix once per suffix, so divide by the suffixes' count
        weight /= (k + 1) ** (new_tokens - steps)
        law[steps] += weight
    return [sum(law[: s + 1], Fraction(0)) for s in range(new_tokens + 1)]


@settings(max_examples=25, deadline=None)
@given(alpha=st.fractions(min_value=0, max_value=1, max_denominator=7), k=st.integers(0, 3), new_tokens=st.integers(0, 5))
def test_the_steps_law_is_the_enumerated_one(alpha, k, new_tokens):
    exact = enumerated_steps_law(alpha, k, new_tokens)
    computed = steps_law(float(alpha), k, new_tokens)
    assert computed.shape == (new_tokens + 1,)
    assert np.allclose(computed, [float(x) for x in exact], atol=1e-12, rtol=0), (alpha, k, new_tokens)
    assert computed[-1] == pytest.approx(1.0, abs=1e-12)  # S <= N: every step emits a token


def test_the_batch_steps_are_the_expected_maximum_of_independent_rows():
    alpha, k, n, batch = Fraction(3, 5), 2, 5, 3
    done = enumerated_steps_law(alpha, k, n)
    exact = sum(1 - done[s] ** batch for s in range(n))  # E[max] = sum_s P(max > s)
    assert expected_batch_steps(0.6, k, n, batch) == pytest.approx(float(exact), abs=1e-12)
    assert expected_batch_steps(0.6, k, n, 1) == pytest.approx(float(sum(1 - d for d in done[:n])), abs=1e-12)


def test_the_factor_is_one_where_every_row_needs_the_same_steps_and_falls_with_the_batch():
    assert static_batch_factor(0.0, 4, 24, 8) == 1.0 and static_batch_factor(1.0, 4, 24, 8) == 1.0
    assert static_batch_factor(0.6, 4, 24, 1) == 1.0 and static_batch_factor(0.6, 4, 0, 8) == 1.0
    assert static_batch_factor(0.6, 0, 24, 8) == 1.0  # K = 0: one token a step
    factors = [static_batch_factor(0.6, 4, 24, b) for b in (1, 2, 8, 64)]
    assert factors == sorted(factors, reverse=True) and 0.7 < factors[2] < 0.85, factors
    assert step_tokens_law(0.5, 2).tolist() == [0.0, 0.5, 0.25, 0.25]


@pytest.mark.parametrize("arguments, name", [((1.5, 2, 4, 2), "alpha"), ((float("nan"), 2, 4, 2), "alpha"),
                                             ((0.5, -1, 4, 2), "num_draft_tokens"), ((0.5, 2, -3, 2), "new_tokens"),
                                             ((0.5, 2, 4, 0), "batch")])
def test_bad_arguments_are_named(arguments, name):
    with pytest.raises(ValueError, match=name):
        static_batch_factor(*arguments)
