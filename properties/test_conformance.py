"""The conformance engine's parts (issue 4): Holm, the Monte-Carlo test, the support check,
F36's exact decomposition, planning, the report and its JSON, bad arguments."""

import itertools
import json
import math
import random

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import specdec as sd
from specdec.cli import main
from specdec.conformance import ChainCase, Plan, _chain_law, _run_chain, check_decoder, check_verifier
from specdec.localize import prefix_decomposition
from specdec.stats import holm, monte_carlo_gof


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.sampled_from([0.01, 0.05, 1e-6]))
def test_holm_matches_its_definition(pvalues, alpha):
    rejected = holm(pvalues, alpha)
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    expected = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (len(pvalues) - rank):
            break
        expected[i] = True
    assert rejected == expected
    assert holm(pvalues, alpha) == rejected  # deterministic
    assert sum(rejected) >= sum(p <= alpha / len(pvalues) for p in pvalues)  # at least Bonferroni


def test_monte_carlo_test_small_counts():
    law = np.array([0.5, 0.3, 0.2])
    typical = monte_carlo_gof([5, 3, 2], law, num_resamples=5000, seed=1)
    assert typical.pvalue > 0.5
    extreme = monte_carlo_gof([0, 0, 10], law, num_resamples=5000, seed=1)
    assert extreme.pvalue == 1 / 5001  # nothing as extreme in 5000 draws: the resolution floor
    outside = monte_carlo_gof([1, 0, 0, 1], [0.5, 0.3, 0.2, 0.0], num_resamples=10, seed=1)
    assert outside.pvalue == 0 and outside.support_violation == 1


def test_f36_terms_sum_to_the_whole_sequence_g():
    """G over whole sequences = sum of the per-prefix G_u (SPEC F36), exactly."""
    rng = random.Random(3)
    vocab, length = 3, 3
    cond = {}

    def conditional(prefix):
        if prefix not in cond:
            w = [rng.random() + 0.1 for _ in range(vocab)]
            cond[prefix] = [x / sum(w) for x in w]
        return cond[prefix]

    sequences = list(itertools.product(range(vocab), repeat=length))
    law = {s: math.prod(conditional(s[:t])[s[t]] for t in range(length)) for s in sequences}
    samples = rng.choices(sequences, weights=[law[s] for s in sequences], k=3000)
    counts = {s: samples.count(s) for s in sequences}
    whole = 2 * sum(c * math.log(c / (len(samples) * law[s])) for s, c in counts.items() if c)
    local = prefix_decomposition(samples, conditional)
    assert abs(local.total_g - whole) < 1e-8 * whole
    assert [p[0] for p in local.by_position] == [0, 1, 2]


def test_f36_points_at_the_biased_position():
    """A chain sampler biased only after prefix (1,) is localised at position 1, prefix [1]."""
    rng = random.Random(0)
    fair = [0.5, 0.3, 0.2]
    biased = [0.2, 0.3, 0.5]
    samples = []
    for _ in range(20000):
        first = rng.choices(range(3), fair)[0]
        second = rng.choices(range(3), biased if first == 1 else fair)[0]
        samples.append((first, second))
    local = prefix_decomposition(samples, lambda prefix: fair)
    assert local.worst_position()[0] == 1
    assert local.worst_prefix().prefix == (1,)


def test_chain_decoder_follows_the_chain_law_exactly_for_k0():
    """With K = 0 the chain decoder is plain sampling: its empirical law is close to the exact one."""
    chain = ChainCase("c", vocab=3, num_draft=0, length=2, seed=5)
    target_t = chain.tables("target")
    tokens = _run_chain(sd.verify_tokens, chain, 20000, torch.Generator().manual_seed(0), target_t)
    law = _chain_law(chain, target_t)
    codes = (tokens[:, 0] * 3 + tokens[:, 1]).numpy()
    empirical = np.bincount(codes, minlength=9) / 20000
    assert np.abs(empirical - law).max() < 0.02
    assert abs(law.sum() - 1) < 1e-12


def test_report_json_and_verdicts():
    report = check_verifier(sd.verify_tokens, tv=0.05, seed=1, name="ref")
    assert report.passed and report.verdict == "lossless"
    data = json.loads(report.to_json())
    assert data["verdict"] == "lossless" and len(data["checks"]) == len(report.checks)
    assert all(c["detectable_tv"] is None or c["detectable_tv"] <= 0.05 + 1e-9 for c in data["checks"])
    assert "planned to detect TV 0.05" in report.plan
    fixed = check_verifier(sd.verify_tokens, n=500, seed=1, chains=[])
    assert all(c.n == 500 for c in fixed.checks) and "fixed by the caller" in fixed.plan


def test_support_violation_fails_at_once():
    def emits_outside_support(draft_tokens, draft_probs, target_probs, generator):
        result = sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator)
        tokens = result.tokens.clone()
        tokens[0, 0] = 3  # disjoint_v4's target gives token 3 probability 0
        return sd.VerifyResult(result.num_accepted, tokens, result.residual_empty)

    report = check_verifier(emits_outside_support, tv=0.05, chains=[], seed=2)
    disjoint = next(c for c in report.checks if c.name.startswith("disjoint_v4: first"))
    assert disjoint.pvalue == 0 and not disjoint.passed and "support" in disjoint.method


def test_time_budget_caps_the_sample_size():
    report = check_verifier(sd.verify_tokens, tv=0.001, time_budget=0.5, seed=0, chains=[])
    assert all(c.n < 2_000_000 for c in report.checks)
    assert "time budget" in report.plan and "achieved" in report.plan


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(tv=1.5), "tv must be in"), (dict(tv=None), "give tv"), (dict(time_budget=-1), "time_budget"), (dict(n=0), "n must be")],
)
def test_bad_plans_are_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        check_verifier(sd.verify_tokens, **kwargs)


def test_plan_needs_something_to_plan_from():
    with pytest.raises(ValueError, match="give tv"):
        Plan(tv=None)


def test_check_decoder_rejects_bad_arguments():
    with pytest.raises(TypeError, match="decoder must be callable"):
        check_decoder(None, None, [[1]])
    with pytest.raises(ValueError, match="at least one prompt"):
        check_decoder(lambda *a: [], None, [])


@pytest.mark.parametrize("argv, message", [(["check", "--tv", "2"], "--tv must be in (0, 1)"), (["check", "--hf-budget", "0"], "--hf-budget")])
def test_check_cli_bad_arguments(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
