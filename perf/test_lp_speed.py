"""(F5) LP time vs V, beside the closed form's (F1/F6), measured in the same test."""

import time

import numpy as np
import pytest

import specdec as sd
from specdec.laws import lp


@pytest.mark.parametrize("vocab", [50, 100, 200, 500])
def test_lp_vs_closed_form(benchmark, vocab):
    rng = np.random.default_rng(vocab)
    target, draft = rng.dirichlet(np.ones(vocab)), rng.dirichlet(np.ones(vocab))
    start = time.perf_counter()
    beta = sd.acceptance_probability(target, draft).item()
    sd.optimal_plan(target, draft)
    closed = time.perf_counter() - start
    seconds = []

    def solve():
        start = time.perf_counter()
        solution = lp.transport_lp(target, draft)
        seconds.append(time.perf_counter() - start)
        return solution

    solution = benchmark.pedantic(solve, rounds=1, iterations=1)
    benchmark.extra_info["closed_form_s"] = closed
    benchmark.extra_info["lp_over_closed_form"] = seconds[0] / closed
    print(f"V={vocab}: LP {seconds[0]:.3f} s, closed form {closed * 1e3:.3f} ms")
    assert solution.optimum == pytest.approx(beta, abs=1e-9)
