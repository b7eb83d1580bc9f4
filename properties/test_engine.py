"""The conformance engine's parts, checked exactly (no statistical assertion here): Holm, the
Monte-Carlo test's resolution, F36's decomposition and localisation, power planning on pooled bins,
the error budget's arithmetic, verdicts, reproducible counter-based chunks, the time budget as a
cap, readable subject names and contract errors."""

import itertools
import json
import math
import random
import time

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import specdec as sd
from specdec.conformance import (
    BudgetExhausted,
    Check,
    ErrorBudget,
    Report,
    Console,
    RunSettings,
    SampleRequest,
    TokenCase,
    catalogue,
    check_law,
    check_verifier,
)
from specdec.conformance.checks import detectable, planned_sample_size
from specdec.conformance.streams.one_step import token_stream
from specdec.conformance.engine import ChunkKey, subject_name
from specdec.stats import holm, monte_carlo_gof, prefix_decomposition, required_noncentrality

SPEC = TokenCase.from_pair("spec_section3", *catalogue.pair("spec_section3"))


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.sampled_from([0.01, 0.05, 1e-6]))
def test_holm_equals_its_adjusted_p_value_form(pvalues, alpha):
    """Holm rejects H_i iff its adjusted p-value max_{j <= rank(i)} min(1, (m - j + 1) p_(j)) <= alpha:
    an independent formulation of the step-down rule."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    assert holm(pvalues, alpha) == [a <= alpha for a in adjusted]
    assert sum(holm(pvalues, alpha)) >= sum(p <= alpha / m for p in pvalues)  # at least Bonferroni


def test_monte_carlo_test_resolution_and_support():
    law = np.array([0.5, 0.3, 0.2])
    assert monte_carlo_gof([0, 0, 10], law, num_resamples=5000, seed=1).pvalue == 1 / 5001  # the resolution floor
    outside = monte_carlo_gof([1, 0, 0, 1], [0.5, 0.3, 0.2, 0.0], num_resamples=10, seed=1)
    assert outside.pvalue == 0 and outside.support_violation == 1


def _random_chain(vocab, length, seed):
    rng = random.Random(seed)
    cond = {}

    def conditional(prefix):
        if prefix not in cond:
            w = [rng.random() + 0.1 for _ in range(vocab)]
            cond[prefix] = [x / sum(w) for x in w]
        return cond[prefix]

    return conditional


def test_f36_terms_sum_to_the_whole_sequence_g():
    """G over whole sequences = the sum of the per-prefix G_u (F36), exactly, from counts."""
    vocab, length = 3, 3
    conditional = _random_chain(vocab, length, 3)
    sequences = list(itertools.product(range(vocab), repeat=length))
    law = {s: math.prod(conditional(s[:t])[s[t]] for t in range(length)) for s in sequences}
    rng = np.random.default_rng(0)
    counts = dict(zip(sequences, rng.multinomial(3000, [law[s] for s in sequences]).tolist()))
    whole = 2 * sum(c * math.log(c / (3000 * law[s])) for s, c in counts.items() if c)
    local = prefix_decomposition(counts, conditional)
    assert abs(local.total_g - whole) < 1e-8 * whole
    assert [p[0] for p in local.by_position] == [0, 1, 2]


def test_f36_points_at_the_biased_position_prefix_and_token():
    """Counts biased only after prefix (1,) (token 2 over-, token 0 under-represented) are located there."""
    fair, biased = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    counts = {}
    for first in range(3):
        for second in range(3):
            counts[(first, second)] = round(20000 * fair[first] * (biased if first == 1 else fair)[second])
    local = prefix_decomposition(counts, lambda prefix: fair)
    assert local.worst_position()[0] == 1 and local.worst_prefix().prefix == (1,)
    assert [d[0] for d in local.worst_prefix().deviations[:2]] == [2, 0]
    assert "prefix [1]" in local.describe() and "token 2:" in local.describe()


@pytest.mark.parametrize("name", ["spec_section3", "peaked_v16", "sparse_v1031", "warped_topk_temp_v64"])
def test_planned_n_is_the_smallest_that_reaches_the_asked_tv(name):
    """Power is planned on the bins the test will use: TV_pooled + rare mass <= tv at n, not at n - 1."""
    law = (catalogue.pair(name)[0]).numpy()
    alpha = 1e-6 / 24
    n = planned_sample_size(law, 0.01, alpha, max_n=10**9)
    assert detectable(law, n, alpha)[0] <= 0.01 < detectable(law, n - 1, alpha)[0]
    tv, bins, rare = detectable(law, n, alpha)
    assert tv == pytest.approx(math.sqrt(required_noncentrality(bins, alpha=alpha) / (4 * n)) + rare)


def test_a_single_outcome_law_is_planned_for_its_support_check():
    n = planned_sample_size(np.array([1.0]), 0.01, 1e-6, max_n=10**9)
    assert (1 - 0.01) ** n <= 0.01 < (1 - 0.01) ** (n - 1)  # power 0.99 to see mass 0.01 outside the support


def test_error_budget_arithmetic():
    budget = ErrorBudget(1e-6, capacity=10)
    assert budget.per_check_alpha == pytest.approx(1e-7)
    first, second = budget.allot(4, "a"), budget.allot(6, "b")
    assert first.alpha + second.alpha == pytest.approx(1e-6)  # the union bound spends exactly the family alpha
    with pytest.raises(BudgetExhausted, match="holds 10 checks and 10 are taken"):
        budget.allot(1, "c")
    with pytest.raises(ValueError, match="give exactly one of budget"):
        check_law([0], [1.0], name="x")


def test_a_report_allots_its_checks_from_the_budget_and_lists_them():
    budget = ErrorBudget(1e-6, capacity=100)
    report = check_verifier(sd.verify_tokens, cases=[SPEC], chains=[], n=2000, budget=budget, seed=0)
    assert report.family_alpha == pytest.approx(2e-8) and budget.reserved == 2
    assert budget.entries[0].checks == report.checks
    lines = budget.summary_lines()
    assert "2 checks allotted to 1 reports" in lines[0] and len(lines) == 4


def _check(pvalue, tv=0.01, **details):
    return Check("c", "first token", "", "pearson", 1.0, pvalue, 100, 3, 2, tv, passed=pvalue > 1e-6, details=details)


def _report(*checks, asked=0.01):
    return Report("s", "verifier", list(checks), 1e-6, asked, 0, 1024, "cpu", "planned")


def test_verdicts_say_what_was_shown():
    assert _report(_check(0.5)).verdict == "PASS"
    assert _report(_check(0.5)).summary().startswith("PASS: no deviation of TV >= 0.0100 found at power 0.99")
    weak = _report(_check(0.5, tv=0.26))
    assert weak.verdict == "INCONCLUSIVE" and weak.summary().startswith("INCONCLUSIVE: reached TV 0.2600, asked 0.01")
    assert _report(_check(0.5, tv=0.26), asked=None).verdict == "PASS"  # only a budget was given: nothing was asked
    failed = _report(_check(0.5), _check(1e-9))
    assert failed.verdict == "FAIL" and failed.summary().startswith("FAIL: c: pearson")
    low = _report(_check(0.5, acceptance=0.6073, optimum=0.6098, p_below=1e-9, suboptimal=True))
    assert low.verdict == "PASS" and low.summary().startswith("PASS, acceptance below the optimum (0.6073 vs 0.6098")
    data = json.loads(failed.to_json())
    assert {"verdict", "summary", "reached_tv", "asked_tv", "power", "family_alpha", "seed", "versions", "checks"} <= set(data)
    assert "lossless" not in json.dumps(data).lower()


def test_chunks_are_reproducible_from_seed_stream_and_chunk():
    stream = token_stream(sd.verify_tokens, SPEC, torch.device("cpu"))
    key = ChunkKey(7, 0, 3, torch.device("cpu"))
    first = [c.numpy() for c in stream.draw(5000, key)]
    again = [c.numpy() for c in stream.draw(5000, key)]
    other = [c.numpy() for c in stream.draw(5000, ChunkKey(7, 0, 4, torch.device("cpu")))]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], other[0])
    one = check_verifier(sd.verify_tokens, cases=[SPEC], chains=[], n=3000, chunk_size=1000, seed=5)
    two = check_verifier(sd.verify_tokens, cases=[SPEC], chains=[], n=3000, chunk_size=1000, seed=5)
    assert [c.statistic for c in one.checks] == [c.statistic for c in two.checks]


def _slow_reference(draft_tokens, draft_probs, target_probs, generator):
    time.sleep(2e-5 * draft_tokens.shape[0])  # 50,000 samples per second, whatever the machine's load
    return sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator)


def test_a_time_budget_is_spent_and_is_a_cap_within_ten_percent():
    cases = catalogue.token_cases()[:2]
    fixed = check_verifier(_slow_reference, cases=cases, chains=[], n=20_000, seed=1)  # this machine's rate, planning included
    report = check_verifier(_slow_reference, cases=cases, chains=[], time_budget=3.0, seed=0)
    assert 0.8 * 3.0 <= report.seconds <= 1.1 * 3.0, report.seconds
    rate = fixed.samples / fixed.seconds  # at most the 50,000 samples per second the subject allows
    assert report.samples > 0.6 * 3.0 * rate, (report.samples, rate)  # most of the budget went to sampling
    assert report.verdict == "INCONCLUSIVE" and "time budget of 3 s" in report.sample_size_rule


def test_subject_names_are_readable():
    assert subject_name(sd.verify_tokens) == "specdec.verify.token.verify_tokens"
    assert subject_name(lambda *a: None).startswith("<lambda at test_engine.py:")


def test_a_verifier_that_breaks_its_protocol_gets_a_one_line_reason():
    def returns_a_tuple(draft_tokens, draft_probs, target_probs, generator):
        result = sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator)
        return result.num_accepted, result.tokens

    report = check_verifier(returns_a_tuple, cases=[SPEC], chains=[], n=100)
    assert report.verdict == "ERROR" and report.error["kind"] == "contract"
    assert "returned tuple; a TokenVerifier (specdec.protocols.TokenVerifier)" in report.summary()
    assert "case spec_section3 (batch 100, K=2" in report.summary()
    with pytest.raises(TypeError, match="TokenVerifier"):
        check_verifier(42)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(tv=1.5), ValueError, "tv must be < 1.0"),
        (dict(tv=None), ValueError, "give tv"),
        (dict(time_budget=-1), ValueError, "time_budget must be > 0.0"),
        (dict(n=0), ValueError, "n must be an integer >= 1"),
        (dict(max_n=1.5), TypeError, "max_n must be an integer"),
        (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
        (dict(family_alpha=1.0), ValueError, "family_alpha must be < 1.0"),
        (dict(call_timeout=0), ValueError, "call_timeout must be > 0.0"),
        (dict(name=3), TypeError, "name must be a str"),
        (dict(budget=object()), TypeError, "budget must be a specdec.conformance.ErrorBudget"),
        (dict(console="stderr"), TypeError, "console must be a specdec.conformance.Console"),
    ],
)
def test_bad_run_settings_are_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        RunSettings(**kwargs)
    with pytest.raises(error, match=message):  # the same through a check's keywords, before any work
        check_verifier(sd.verify_tokens, **kwargs)


def test_run_settings_are_one_record_that_checks_take_whole_or_changed():
    assert SampleRequest is RunSettings  # the compatibility alias keeps SampleRequest(tv, time_budget, n, max_n, chunk_size)
    assert SampleRequest(0.05, None, 100, 50, 10) == RunSettings(tv=0.05, n=100, max_n=50, chunk_size=10)
    fast = RunSettings(n=2_000, seed=3, console=Console())
    cases = catalogue.token_cases()[:1]
    whole = check_verifier(sd.verify_tokens, cases=cases, chains=[], settings=fast)
    changed = check_verifier(sd.verify_tokens, cases=cases, chains=[], settings=fast, seed=4)
    assert (whole.seed, whole.samples, changed.seed) == (3, 2_000, 4)
    assert fast.replace(seed=4) == RunSettings(n=2_000, seed=4, console=fast.console)
    with pytest.raises(TypeError, match="unknown run setting.*'sed'"):
        check_verifier(sd.verify_tokens, settings=fast, sed=4)
    with pytest.raises(TypeError, match="settings must be a specdec.RunSettings"):
        check_verifier(sd.verify_tokens, settings=dict(seed=4))
    # n within a time budget: n is the cap, the budget may stop it first (the rule says both)
    both = RunSettings(n=10, time_budget=1.0)
    assert "n = 10 per check" in both.describe() and "within a time budget of 1 s" in both.describe()


def test_every_check_goes_through_one_path_for_the_budget_holm_and_the_verdict(monkeypatch):
    """check_verifier, check_multidraft, check_tree, check_decoder, check_ab, check_tokens and check_law all allot their
    alpha with engine.allot and judge with engine.judge (Holm); the verdict is the Report's."""
    from specdec.conformance import engine
    from specdec.laws import FunctionLaw
    from specdec.verify.tree import verify_tree

    seen = {"allot": [], "judge": []}
    real_allot, real_judge = engine.allot, engine.judge

    def allot(budget, num_checks, label, family_alpha):
        seen["allot"].append(label)
        return real_allot(budget, num_checks, label, family_alpha)

    def judge(checks, alpha, entry=None):
        seen["judge"].append(len(checks))
        return real_judge(checks, alpha, entry)

    monkeypatch.setattr(engine, "allot", allot)
    monkeypatch.setattr(engine, "judge", judge)
    budget = ErrorBudget(1e-6, 100)
    quick = dict(n=300, console=Console(), budget=budget)
    law = FunctionLaw(lambda context: [0.5, 0.5], vocab_size=2)
    fair = lambda prompts, max_new_tokens, seed: [list(np.random.default_rng(seed + i).integers(0, 2, max_new_tokens))  # noqa: E731
                                                  for i in range(len(prompts))]
    reports = [
        check_verifier(sd.verify_tokens, cases=catalogue.token_cases()[:1], chains=[], name="v", **quick),
        sd.check_multidraft(sd.verify_mss, cases=catalogue.multidraft_cases()[:1], name="m", **quick),
        sd.check_tree(verify_tree, cases=catalogue.tree_cases()[:1], name="t", **quick),
        sd.check_decoder(fair, law, [[0]], length=1, max_new_tokens=1, name="d", **quick),
        sd.check_ab(fair, fair, [[0]], length=1, max_new_tokens=1, name="ab", **quick),
        sd.check_tokens(fair, sd.TargetLawOracle(law), [[0]], length=1, name="tokens", **quick),
    ]
    check = check_law([0, 1, 1, 0], [0.5, 0.5], name="law", budget=budget)
    assert seen["allot"] == ["v", "m", "t", "d", "ab", "tokens", "law"]
    assert seen["judge"] == [len(r.checks) for r in reports] + [1]
    assert [e.label for e in budget.entries] == seen["allot"]  # one allotment each, from the run's budget
    assert all(r.verdict in ("PASS", "INCONCLUSIVE") for r in reports) and check.passed
