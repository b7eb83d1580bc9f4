"""specdec.bench and the pieces of the decoding loop the benchmarks rely on (issue 12).

F23's general form and F24 with a measured verify term; the adaptive draft length; the
on_step hook; the step clock (TTFT, bursty inter-token latencies); peak memory; the
cost calibration; one benchmark row; the ratio gate (regression, improvement, exact
metrics, direction) and its CLI; the plots.
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import specdec as sd
from fixtures.models import TINY_PROMPTS, tiny_pair
from specdec.bench.clock import StepClock, spread
from specdec.bench.costs import StepCosts, calibrate
from specdec.bench.gate import compare_runs, ratio_interval
from specdec.bench.history import Run, load_history, load_run
from specdec.bench.memory import PeakMemory
from specdec.bench.rows import Round, summarise
from specdec.bench.tables import choosing_k, format_choosing_k, format_peer_rates, format_table, split_configuration
from specdec.decoding import AdaptiveDraftLength, FixedDraftLength, ModelDraft, generate
from specdec.warpers import SamplingConfig

GREEDY = SamplingConfig(temperature=0)


# ---------------------------------------------------------------- F23 / F24 with a verify term


def test_f23_general_form_reduces_to_the_simple_form_when_verifying_costs_one_target_step():
    for alpha, k, c in [(0.8, 5, 0.05), (0.3, 2, 0.5), (1.0, 4, 0.1), (0.0, 3, 0.0)]:
        assert sd.speedup_with_costs(alpha, k, c, 1.0) == pytest.approx(sd.speedup(alpha, k, c), rel=1e-12)
        assert sd.predicted_speedup(alpha, [k] * 7, c) == pytest.approx(sd.speedup(alpha, k, c), rel=1e-12)


def test_predicted_speedup_over_varying_k_is_tokens_over_cost_exactly():
    alpha, rho, v = Fraction(3, 4), Fraction(1, 10), [Fraction(1), Fraction(11, 10), Fraction(6, 5)]
    ks = [0, 2, 1, 2]
    expected_tokens = lambda k: sum(alpha**i for i in range(k + 1))  # noqa: E731  (F22 as a finite sum)
    exact = sum(expected_tokens(k) for k in ks) / sum(k * rho + v[k] for k in ks)
    got = sd.predicted_speedup(float(alpha), ks, float(rho), [float(x) for x in v])
    assert got == pytest.approx(float(exact), rel=1e-12)


def test_f24_with_a_growing_verify_term_stops_short_of_the_longest_draft():
    verify = [1 + 0.1 * k for k in range(65)]  # T_verify(K + 1) grows with K
    k_free, _ = sd.optimal_draft_length(0.9, 0.0)  # F23's simple form with c = 0: more is always better
    k_cost, s_cost = sd.optimal_draft_length(0.9, 0.0, verify_cost_ratios=verify)
    assert k_free == 64
    assert 0 < k_cost < 64
    scan = [sd.speedup_with_costs(0.9, k, 0.0, verify[k]) for k in range(65)]
    assert s_cost == max(scan) and k_cost == scan.index(max(scan))


@pytest.mark.parametrize("bad, message", [
    (dict(verify_cost_ratios=[1.0, 1.0]), "needs 65 values"),
    (dict(verify_cost_ratios={0: 1.0}), "no entry for K"),
    (dict(verify_cost_ratios=[0.0] * 65), r"verify_cost_ratios\[0\]"),
])
def test_f24_refuses_bad_verify_costs_by_name(bad, message):
    with pytest.raises(ValueError, match=message):
        sd.optimal_draft_length(0.5, 0.1, **bad)


def test_predicted_speedup_refuses_empty_or_negative_draft_lengths():
    with pytest.raises(ValueError, match="steps_draft_tokens"):
        sd.predicted_speedup(0.5, [], 0.1)
    with pytest.raises(ValueError, match="steps_draft_tokens must be >= 0"):
        sd.predicted_speedup(0.5, [2, -1], 0.1)


# ---------------------------------------------------------------- adaptive draft length


def test_adaptive_length_follows_acceptance_and_comes_back_after_the_prior_returns():
    verify = [1 + 0.05 * k for k in range(9)]
    policy = AdaptiveDraftLength(8, draft_step_ratio=0.2, verify_cost_ratios=verify, decay=0.8, prior_acceptance=0.6)
    start = policy.choose()
    for _ in range(10):
        policy.observe(8, [8])  # everything accepted
    assert policy.acceptance_estimate > 0.95 and policy.choose() == 8
    for _ in range(40):
        policy.observe(policy.choose() or 1, [0])  # everything rejected: F24 says K* = 0 once alpha is low enough
    assert policy.acceptance_estimate < 0.2 and policy.choose() == 0
    for _ in range(40):
        policy.observe(0, [0])  # autoregressive steps verify nothing; the decay returns the estimate to the prior
    assert policy.choose() == start > 0
    policy.reset()
    assert policy.acceptance_estimate == pytest.approx(0.6)


def test_adaptive_length_validates_its_arguments():
    with pytest.raises(ValueError, match="decay"):
        AdaptiveDraftLength(4, decay=0.0)
    with pytest.raises(ValueError, match="min_draft_tokens"):
        AdaptiveDraftLength(4, min_draft_tokens=5)
    with pytest.raises(ValueError, match="verify_cost_ratios"):
        AdaptiveDraftLength(4, verify_cost_ratios=[1.0])


def test_generate_with_a_policy_keeps_greedy_output_and_reports_each_step():
    target, draft = tiny_pair(0, 8)
    policy = AdaptiveDraftLength(6, draft_step_ratio=0.1)
    seen = []
    result = generate(target, ModelDraft(draft), [list(p) for p in TINY_PROMPTS], max_new_tokens=12,
                      num_draft_tokens=policy, sampling=GREEDY, seed=0, on_step=seen.append)
    plain = generate(target, None, [list(p) for p in TINY_PROMPTS], max_new_tokens=12, num_draft_tokens=0, sampling=GREEDY, seed=0)
    assert result.tokens == plain.tokens  # greedy: the same text whatever K each step drafts
    assert seen == result.steps and len(seen) > 0
    ks = {s.num_draft_tokens for s in result.steps}
    assert ks <= set(range(7)) and len(ks) > 1, ks  # the policy moved K


def test_generate_refuses_a_policy_without_a_draft_and_a_bad_hook():
    target, _ = tiny_pair(0, 8)
    with pytest.raises(ValueError, match="needs a draft source"):
        generate(target, None, [[1, 2]], max_new_tokens=2, num_draft_tokens=AdaptiveDraftLength(4), seed=0)
    with pytest.raises(TypeError, match="on_step"):
        generate(target, None, [[1, 2]], max_new_tokens=2, num_draft_tokens=0, seed=0, on_step=3)
    assert generate(target, None, [[1, 2]], max_new_tokens=3, num_draft_tokens=FixedDraftLength(0), seed=0).tokens[0]


# ---------------------------------------------------------------- clocks, memory, costs


def test_step_clock_gives_ttft_and_bursty_inter_token_latencies(monkeypatch):
    ticks = iter([10.0, 10.5, 10.7, 11.0])  # start, then three steps
    monkeypatch.setattr("specdec.bench.clock.time.perf_counter", lambda: next(ticks))
    clock = StepClock()
    clock.start()
    for emitted in (3, 1, 2):
        clock(SimpleNamespace(num_emitted=(emitted,)))
    assert clock.ttft == pytest.approx(0.5)
    # first step: 3 tokens at 0.5 s (two arrive with the first); then 1 token after 0.2 s; then 2 after 0.3 s
    np.testing.assert_allclose(clock.inter_token_latencies, [0, 0, 0.2, 0.3, 0])


def test_spread_and_its_refusal():
    assert spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}
    with pytest.raises(ValueError):
        spread([])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS is read from /proc (Linux)")
def test_peak_memory_sees_a_temporary_allocation():
    size = 64 * 2**20
    with PeakMemory("cpu") as peak:
        block = torch.ones(size // 4, dtype=torch.float32)
        del block
    assert peak.bytes is not None and peak.bytes >= 0.9 * size


def test_calibration_measures_every_k_on_a_tiny_model_and_keeps_each_round():
    target, draft = tiny_pair(0, 8)
    costs = calibrate(target, [1, 2, 3, 4], 3, draft_model=draft, rounds=3)
    assert sorted(costs.target_seconds) == [0, 1, 2, 3]
    assert costs.verify_cost_ratios[0] == 1.0 and all(v > 0 for v in costs.verify_cost_ratios)
    assert costs.draft_step_ratio > 0
    assert len(costs.per_round) == 3 and all(sorted(r.target_seconds) == [0, 1, 2, 3] for r in costs.per_round)
    assert costs.target_seconds[2] == sorted(r.target_seconds[2] for r in costs.per_round)[1]  # the median of the rounds


def test_the_median_interval_is_the_order_statistics_pair_with_the_coverage_asked():
    from specdec.stats.median_interval import median_interval

    five = median_interval([5, 1, 2, 3, 4], 0.9)
    assert (five["low"], five["median"], five["high"]) == (1, 3, 5) and five["coverage"] == pytest.approx(1 - 2 / 32)
    nine = median_interval(range(9), 0.9)  # P(Bin(9, 1/2) <= 1) = 10/512: x(2)..x(8) covers with 0.961
    assert (nine["low"], nine["high"]) == (1, 7) and nine["coverage"] == pytest.approx(1 - 20 / 512)
    assert median_interval([2.0], 0.9)["coverage"] == 0.0  # nothing can be said from one round, and it says so
    with pytest.raises(ValueError, match="at least one finite"):
        median_interval([1.0, float("nan")])


def test_a_prediction_carries_the_spread_of_the_calibration_rounds():
    rounds = [StepCosts({k: t * (1 + 0.05 * k) for k in range(9)}, d) for t, d in [(0.1, 0.01), (0.1, 0.03), (0.1, 0.02)]]
    costs = StepCosts({k: 0.1 * (1 + 0.05 * k) for k in range(9)}, 0.02, per_round=tuple(rounds))
    steps = [(4, 4), (4, 1), (4, 4), (4, 0)]
    row = summarise("c", "qa", [Round(2.0, 1.0, None, None, steps, [0.2], [0.1])], costs)
    at = [sd.speedup_with_costs(9 / 11, 4, rho, 1.2) for rho in (0.3, 0.2, 0.1)]  # rho = draft / target, per round
    interval = row.predicted_interval
    assert (interval["low"], interval["median"], interval["high"]) == pytest.approx(tuple(at))
    assert interval["coverage"] == pytest.approx(0.75) and row.predicted == pytest.approx(at[1])
    assert row.cost_spread["rho"]["low"] == pytest.approx(0.1) and row.cost_spread["rho"]["high"] == pytest.approx(0.3)
    assert summarise("c", "qa", [Round(2.0, 1.0, None, None, steps, [0.2], [0.1])], _costs()).predicted_interval is None


def test_acceptance_by_position_is_measured_beside_f22s_alpha_to_the_i():
    from specdec.laws.speedup import implied_acceptance
    from specdec.metrics import acceptance_by_position

    assert acceptance_by_position([0, 1, 2, 3, 0], [3, 3, 3, 3, 1]) == [0.6, 0.5, 0.25]
    assert acceptance_by_position([0, 0], [0, 0]) == []
    with pytest.raises(ValueError, match="exceeds"):
        acceptance_by_position([3], [2])
    assert sd.laws.positional_acceptance(0.5, 3) == [0.5, 0.25, 0.125]
    steps = [(4, 4), (4, 1), (4, 4), (4, 0)]
    row = summarise("c", "qa", [Round(2.0, 1.0, None, None, steps, [0.2], [0.1])], _costs())
    alpha = 9 / 11
    assert [p["measured"] for p in row.acceptance_by_position] == [0.75, 0.5, 0.5, 0.5]
    assert [p["predicted"] for p in row.acceptance_by_position] == pytest.approx([alpha ** i for i in range(1, 5)])
    counted = summarise("c", "qa", [Round(2.0, 1.0, speculation=[{"drafts": 10, "draft_tokens": 40, "accepted_tokens": 12,
                                                                   "accepted_at_1": 6, "accepted_at_2": 4, "accepted_at_3": 2}])],
                        _costs(), num_draft_tokens=4)
    assert [p["measured"] for p in counted.acceptance_by_position] == [0.6, 0.4, 0.2]
    assert counted.acceptance_by_position[0]["predicted"] == pytest.approx(implied_acceptance(2.2, 4))


# ---------------------------------------------------------------- one row, the table


def _costs():
    return StepCosts({k: 0.1 * (1 + 0.05 * k) for k in range(9)}, 0.01)


def test_a_row_puts_f23_beside_the_paired_ratios():
    steps = [(4, 4), (4, 1), (4, 4), (4, 0)]  # accepted 9 of 11 verified
    rounds = [Round(2.0, 1.0, 100, 150, steps, [0.2], [0.1, 0.0, 0.3], baseline_ttft=[0.1]),
              Round(2.2, 1.0, 100, 130, steps, [0.25], [0.1], baseline_ttft=[0.12])]
    row = summarise("lookup-n3-K4-greedy", "qa", rounds, _costs())
    assert row.ratios == [2.0, 2.2] and row.speedup["median"] == pytest.approx(2.1)
    assert row.acceptance == pytest.approx(9 / 11)
    assert row.tokens_per_step == pytest.approx((5 + 2 + 5 + 1) / 4)
    decode = sd.speedup_with_costs(9 / 11, 4, 0.1, 1.2)
    share = (0.1 + 0.12) / (2.0 + 2.2)  # the autoregressive side's time to first token over its time, pooled
    assert row.predicted_decode == pytest.approx(decode) and row.prefill_share == pytest.approx(share)
    assert row.predicted == pytest.approx(1 / (share + (1 - share) / decode))  # F23 end to end
    assert row.efficiency == pytest.approx(2.1 / row.predicted)
    assert row.delta_memory_mib == pytest.approx(40 / 2**20)
    text = format_table([row.as_dict()])
    assert "lookup-n3-K4-greedy" in text and "2.10x [2.00-2.20]" in text
    assert format_table([row.as_dict()], markdown=True).startswith("| configuration |")


def test_rows_put_tokens_per_second_of_ours_beside_the_peers():
    rounds = [Round(2.0, 1.0, None, None, [(4, 4)], [0.2], [0.1]), Round(2.4, 1.2, None, None, [(4, 4)], [0.2], [0.1])]
    row = summarise("lookup-n3-K4-greedy", "qa", rounds, _costs(), generated_tokens=24).as_dict()
    assert row["tokens_per_second"]["speculative"]["median"] == pytest.approx((24 / 1.0 + 24 / 1.2) / 2)
    assert row["tokens_per_second"]["autoregressive"]["min"] == pytest.approx(24 / 2.4)
    assert format_peer_rates([row]) == ""  # no peer measured: no table
    row["peer_speedup"] = spread([2.5])
    row["peer_tokens_per_second"] = {"speculative": spread([30.0]), "autoregressive": spread([12.0])}
    table = format_peer_rates([row], markdown=True)
    assert table.splitlines()[2] == "| lookup-n3-K4-greedy | qa | 22.0 | 30.0 | 11.0 | 12.0 | 2.00x / 2.50x |"


@pytest.mark.parametrize("name, family, k", [("lookup-n3-K4-greedy", "lookup-n3 greedy", "K4"),
                                              ("model-sampled-Kadapt-T0.7", "model-sampled T0.7", "Kadapt"),
                                              ("lookup-n3-K8-greedy-static", "lookup-n3 greedy static", "K8")])
def test_configuration_names_split_into_family_and_draft_length(name, family, k):
    assert split_configuration(name) == (family, k)


def test_choosing_k_sets_the_best_fixed_k_beside_f24_and_the_adaptive_k():
    def row(name, speedup, optimal_k=4, mean_k=None):
        return {"configuration": name, "kind": "qa", "speedup": {"median": speedup}, "optimal_k": optimal_k,
                "mean_draft_tokens": mean_k}

    rows = [row("lookup-n3-K2-greedy", 1.2), row("lookup-n3-K4-greedy", 1.5, optimal_k=8), row("lookup-n3-K8-greedy", 1.4),
            row("lookup-n3-Kadapt-greedy", 1.45, mean_k=5.5), row("lookup-n3-K4-greedy-static", 2.0)]  # a lone K: no sweep
    (entry,) = choosing_k(rows)
    assert entry == {"family": "lookup-n3 greedy", "kind": "qa", "best_fixed_k": 4, "best_fixed_speedup": 1.5, "f24_k": 8,
                     "f24_k_speedup": 1.4, "adaptive_mean_k": 5.5, "adaptive_speedup": 1.45, "decision": None}  # no rounds kept


def test_a_best_k_is_named_only_when_it_clears_the_noise_of_its_rounds():
    from specdec.bench.choose_k import decide_k, format_decision

    clear = decide_k({2: [1.20, 1.22, 1.21, 1.19, 1.20], 4: [1.50, 1.52, 1.49, 1.51, 1.50], 8: [1.30, 1.31, 1.29, 1.30, 1.32]})
    assert clear["best_k"] == 4 and clear["wins"] and clear["next_k"] == 8 and clear["over_next"][0] > 1
    assert format_decision(clear).startswith("K4 wins (K4 x1.50")
    close = decide_k({2: [1.40, 1.55, 1.45], 4: [1.50, 1.42, 1.60]})  # the medians differ by less than the rounds spread
    assert close["best_k"] == 4 and not close["wins"] and "over K2" in close["why"]
    assert format_decision(close).startswith("no K wins (K4 x1.50")
    losing = decide_k({2: [0.95, 1.02, 0.99], 4: [0.80, 0.82, 0.81]})  # the best K does not beat K = 0
    assert not losing["wins"] and "over K = 0" in losing["why"]
    rows = [{"configuration": f"lookup-n3-K{k}-greedy", "kind": "qa", "speedup": {"median": float(np.median(v))}, "optimal_k": 4,
             "mean_draft_tokens": k, "ratios": v} for k, v in {2: [1.20, 1.22, 1.21, 1.19, 1.20], 4: [1.50, 1.52, 1.49, 1.51, 1.50]}.items()]
    (entry,) = choosing_k(rows)
    assert entry["decision"].startswith("K4 wins") and "K4 wins" in format_choosing_k([entry])


def test_end_to_end_speedup_is_amdahls_law_over_f23():
    # a call of prefill P then decoding D autoregressively, D / S speculatively: the ratio of the two calls
    prefill, decode_seconds, decode_speedup = 0.3, 1.7, 2.5
    measured = (prefill + decode_seconds) / (prefill + decode_seconds / decode_speedup)
    assert sd.end_to_end_speedup(decode_speedup, prefill / (prefill + decode_seconds)) == pytest.approx(measured, rel=1e-12)
    assert sd.end_to_end_speedup(decode_speedup, 0.0) == decode_speedup  # no shared part: F23
    assert sd.end_to_end_speedup(decode_speedup, 1.0) == 1.0  # nothing but the shared part
    assert sd.end_to_end_speedup(0.8, 0.5) == pytest.approx(1 / (0.5 + 0.5 / 0.8))  # a slowdown is diluted too


@pytest.mark.parametrize("args, match", [((0.0, 0.2), "decode_speedup"), ((float("nan"), 0.2), "decode_speedup"),
                                         ((2.0, 1.5), "prefill_share"), ((2.0, -0.1), "prefill_share")])
def test_end_to_end_speedup_names_the_bad_argument(args, match):
    with pytest.raises(ValueError, match=match):
        sd.end_to_end_speedup(*args)


def test_a_row_of_autoregressive_steps_has_no_acceptance():
    row = summarise("lookup-n3-K4-greedy", "qa", [Round(1.0, 1.1, None, None, [(0, 0)] * 3, [0.1], [0.1])], _costs())
    assert row.acceptance is None and row.predicted == pytest.approx(1.0) and row.delta_memory_mib is None


# ---------------------------------------------------------------- the ratio gate


def _run(tmp_path, name, values, exact=0.8, commit="abc", direction=True):
    data = {
        "machine_info": {"cpu_model": "x", "torch": "2", "gpu": None, "torch_threads": 2},
        "commit_info": {"id": commit},
        "datetime": f"2026-11-22T00:00:0{name[-1]}",
        "benchmarks": [{"fullname": "perf/test_x.py::test_a", "stats": {"median": 1.0},
                        "extra_info": {"ratios": {"speedup": {"values": values, "higher_is_better": direction}},
                                       "exact": {"acceptance": exact}}}],
    }
    folder = tmp_path / "Linux-CPython-3.11-64bit"
    folder.mkdir(exist_ok=True)
    path = folder / f"000{name[-1]}_{commit}_{name}.json"
    path.write_text(json.dumps(data))
    return path


def test_gate_flags_a_clear_regression_and_nothing_else(tmp_path):
    base = load_run(_run(tmp_path, "run1", [2.0, 2.1, 1.95, 2.05, 2.0]))
    same = load_run(_run(tmp_path, "run2", [2.02, 1.97, 2.1, 2.0, 1.99]))
    worse = load_run(_run(tmp_path, "run3", [1.6, 1.62, 1.58, 1.61, 1.6]))
    better = load_run(_run(tmp_path, "run4", [2.6, 2.7, 2.65, 2.62, 2.61]))
    assert [f.verdict for f in compare_runs(base, same, margin=0.05, exact=False)] == ["ok"]
    assert [f.verdict for f in compare_runs(base, worse, margin=0.05, exact=False)] == ["regression"]
    assert [f.verdict for f in compare_runs(base, worse, exact=False)] == ["ok"]  # 20% slower is inside the default 20% margin
    assert [f.verdict for f in compare_runs(base, better, margin=0.05, exact=False)] == ["improvement"]


def test_gate_judges_a_lower_is_better_ratio_on_its_inverse_and_says_so(tmp_path):
    base = load_run(_run(tmp_path, "run1", [1.0, 1.02, 0.98, 1.01, 1.0], direction=False))
    worse = load_run(_run(tmp_path, "run2", [1.5, 1.52, 1.48, 1.5, 1.51], direction=False))
    (finding,) = compare_runs(base, worse, margin=0.05, exact=False)
    assert finding.verdict == "regression" and finding.high < 0.95 and not finding.higher_is_better
    assert "x1.500; lower is better, so judged on baseline / current: 0.667, interval" in finding.line(), finding.line()


def test_gate_compares_predictions_by_their_intervals(tmp_path):
    def with_prediction(name, low, median, high):
        path = _run(tmp_path, name, [2.0, 2.1, 1.95])
        data = json.loads(path.read_text())
        data["benchmarks"][0]["extra_info"]["predicted_interval"] = {"low": low, "median": median, "high": high, "coverage": 0.96, "n": 9}
        path.write_text(json.dumps(data))
        return load_run(path)

    base = with_prediction("run1", 1.10, 1.20, 1.30)
    near, far = with_prediction("run2", 1.25, 1.33, 1.40), with_prediction("run3", 1.35, 1.40, 1.45)
    found = {f.metric: f for f in compare_runs(base, near, exact=False)}
    assert found["prediction"].verdict == "ok" and "intervals overlap" in found["prediction"].line()
    moved = {f.metric: f for f in compare_runs(base, far, exact=False)}["prediction"]
    assert moved.verdict == "changed" and "1.200x [1.100-1.300] -> 1.400x [1.350-1.450]" in moved.line()
    assert "prediction" not in {f.metric for f in compare_runs(base, load_run(_run(tmp_path, "run4", [2.0])), exact=False)}


def test_gate_judges_lower_is_better_ratios_the_other_way(tmp_path):
    base = load_run(_run(tmp_path, "run1", [1.0, 1.02, 0.99], direction=False))
    slower = load_run(_run(tmp_path, "run2", [1.5, 1.52, 1.49], direction=False))
    assert [f.verdict for f in compare_runs(base, slower, exact=False)] == ["regression"]  # 1.5x the floor's time: beyond 20%
    assert [f.verdict for f in compare_runs(slower, base, exact=False)] == ["improvement"]


def test_gate_compares_seeded_metrics_exactly(tmp_path):
    base = load_run(_run(tmp_path, "run1", [2.0, 2.0, 2.0], exact=0.8125))
    moved = load_run(_run(tmp_path, "run2", [2.0, 2.0, 2.0], exact=0.8))
    assert [f.verdict for f in compare_runs(base, moved)] == ["ok", "changed"]
    assert [f.verdict for f in compare_runs(base, moved, exact=False)] == ["ok"]


def test_bootstrap_interval_covers_identical_runs_and_excludes_a_shift():
    low, high = ratio_interval([1.0, 1.1, 0.9, 1.05], [1.0, 1.1, 0.9, 1.05])
    assert low <= 1.0 <= high
    low, high = ratio_interval([1.0, 1.1, 0.9, 1.05], [2.0, 2.2, 1.8, 2.1])
    assert 1.6 < low <= high < 2.5
    with pytest.raises(ValueError, match="positive"):
        ratio_interval([1.0], [0.0])


def test_history_is_oldest_first_and_refuses_what_is_not_a_run(tmp_path):
    _run(tmp_path, "run2", [1.0], commit="bbb")
    _run(tmp_path, "run1", [1.0], commit="aaa")
    assert [r.label for r in load_history(tmp_path)] == ["aaa", "bbb"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="pytest-benchmark"):
        load_run(bad)
    with pytest.raises(ValueError, match="does not exist"):
        load_history(tmp_path / "nowhere")


def test_gate_cli_exit_status(tmp_path, capsys):
    from specdec.cli import main

    base = _run(tmp_path, "run1", [2.0, 2.1, 1.95, 2.05, 2.0])
    worse = _run(tmp_path, "run2", [1.2, 1.22, 1.18, 1.21, 1.2])
    assert main(["bench", "gate", str(base), str(worse)]) == 1
    assert "REGRESSION" in capsys.readouterr().out
    assert main(["bench", "gate", str(base), str(base)]) == 0
    assert main(["bench", "gate", "--storage", str(tmp_path)]) == 1  # the two newest: run1 then run2
    assert main(["bench", "gate", str(base)]) == 2
    assert "give both" in capsys.readouterr().err


# ---------------------------------------------------------------- plots


def test_plots_render(tmp_path):
    pytest.importorskip("matplotlib")
    from specdec.plots import plot_history, plot_speedup_vs_k

    rows = []
    for kind in ("qa", "retrieval"):
        for k in (1, 2, 4, "adapt"):
            row = summarise(f"lookup-n3-K{k}-greedy", kind, [Round(2.0, 1.0 + 0.1 * (k == 1), None, None, [(4, 3)], [0.1], [0.1])], _costs())
            rows.append(row.as_dict())
    plot_speedup_vs_k(rows, str(tmp_path / "k.png"))
    run = Run(tmp_path, "abcdef0", "2026-11-22", {}, {f"t{i}": {"stats": {}, "extra_info": r} for i, r in enumerate(rows)})
    plot_history([run, run], str(tmp_path / "h.png"))
    for name in ("k.png", "h.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert math.isfinite(rows[0]["efficiency"])


def test_rows_of_a_task_kind_carry_their_answers_entropy_bucket():
    from specdec.bench.tables import entropy_table
    from specdec.workload.entropy import THRESHOLDS, bucket_of, kind_entropy
    from specdec.workload.entropy_data import ENTROPY
    from specdec.workload.prompts import KINDS, PROMPTS

    assert bucket_of(THRESHOLDS[0] - 0.01) == "low" and bucket_of(THRESHOLDS[0]) == "mixed" and bucket_of(THRESHOLDS[1] + 0.01) == "high"
    with pytest.raises(ValueError, match="mean_entropy"):
        bucket_of(float("nan"))
    assert set(ENTROPY) == set(KINDS) and all(len(ENTROPY[k]) == len(PROMPTS[k]) for k in KINDS)  # one value per prompt
    assert {bucket_of(v) for values in ENTROPY.values() for v in values} == {"low", "mixed", "high"}  # every bucket populated
    assert kind_entropy("mix", 4) is None and kind_entropy("qa", 1)["bucket"] == bucket_of(ENTROPY["qa"][0])
    steps = [(4, 4), (4, 1)]
    rows = [summarise("c", kind, [Round(2.0, 1.0, None, None, steps, [0.2], [0.1])], _costs()).as_dict() for kind in KINDS]
    text = entropy_table(rows)
    assert all(r["answer_entropy"]["bucket"] in ("low", "mixed", "high") for r in rows) and "answer entropy" in text
