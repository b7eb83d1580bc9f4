"""Speculative vs autoregressive decoding of SmolLM2-135M-Instruct, per configuration and task kind (issue 12).

pytest-benchmark times the speculative side (the thing the test names); each round's
autoregressive run of the same prompts happens just before it, untimed by pytest-benchmark
and timed by us, so every round yields one paired ratio.  extra_info holds the row (speedup
median/min/max, F23's prediction, efficiency, acceptance, tokens per step, TTFT, ITL, dM), the
per-round ratios under "ratios" and, for fixed K, the seeded deterministic metrics under "exact"
(the ratio gate, ``specdec bench gate``, reads both).  Greedy rows also assert that speculative and
autoregressive decoding emitted the same tokens.
"""

from __future__ import annotations

from perf.harness import Round, breakdown_run, run_side
from specdec.bench.rows import summarise


def _steps(results) -> list[tuple[int, int]]:
    return [(step.num_draft_tokens, accepted) for result in results for step in result.steps for accepted in step.num_accepted]


def measure(benchmark, workbench, plan, config, kind):
    prompts = workbench.prompts(kind, plan.prompts)
    costs = workbench.costs(config.cost_key, plan.rounds)  # first use of a cost key warms its path up (and captures its graphs)
    draft_length = workbench.draft_length(config, plan.rounds)
    rounds: list[Round] = []
    pending: dict = {}

    def autoregressive():  # untimed by pytest-benchmark: the round's baseline
        seconds, peak, results, clocks = run_side(workbench, prompts, config, plan)
        pending.update(seconds=seconds, peak=peak, tokens=[r.tokens[0] for r in results], ttft=[c.ttft for c in clocks])

    def speculative():  # timed by pytest-benchmark
        seconds, peak, results, clocks = run_side(workbench, prompts, config, plan, draft_length)
        per_prompt = [_steps([result]) for result in results]
        rounds.append(Round(pending["seconds"], seconds, pending["peak"], peak, [s for steps in per_prompt for s in steps],
                            [c.ttft for c in clocks], [g for c in clocks for g in c.inter_token_latencies],
                            baseline_ttft=pending["ttft"], call_steps=per_prompt))
        pending["speculative_tokens"] = [r.tokens[0] for r in results]

    benchmark.pedantic(speculative, setup=autoregressive, rounds=plan.rounds, iterations=1, warmup_rounds=0)
    for tokens in (pending["tokens"], pending["speculative_tokens"]):
        assert [len(t) for t in tokens] == [plan.new_tokens] * len(prompts), "both sides must stop at new_tokens"
    if config.temperature == 0:
        assert pending["speculative_tokens"] == pending["tokens"], f"{config.name} on {kind}: greedy outputs differ"
    row = summarise(config.name, kind, rounds, costs, generated_tokens=len(prompts) * plan.new_tokens, prompts=len(prompts))
    row.breakdown = breakdown_run(workbench, prompts[0], config, plan, draft_length)  # one extra untimed run
    return row


def _store(benchmark, workbench, plan, config, kind, record_row):
    row = measure(benchmark, workbench, plan, config, kind).as_dict()
    assert row["predicted"] > 0 and row["tokens_per_step"] >= 1
    benchmark.extra_info.update(row)
    benchmark.extra_info["plan"] = {"new_tokens": plan.new_tokens, "rounds": plan.rounds, "prompts": plan.prompts,
                                    "threads": workbench.threads, "device": str(plan.device)}
    benchmark.extra_info["ratios"] = {"speedup": {"values": row["ratios"], "higher_is_better": True}}
    if config.k != "adaptive":  # an adaptive K reads the calibrated (timed) costs, so its counts are not seeded alone
        benchmark.extra_info["exact"] = {"acceptance": row["acceptance"], "tokens_per_step": row["tokens_per_step"]}
    if not benchmark.disabled:
        record_row(row)


def test_speculative_vs_autoregressive(benchmark, workbench, plan, config, kind, record_row):
    _store(benchmark, workbench, plan, config, kind, record_row)


def test_static_target_regime(benchmark, workbench, plan, static_config, kind, record_row):
    """Both sides with the target on the static KV cache (CUDA graphs on CUDA): the regime where a step
    costs kernel time, not Python and launches; its autoregressive baseline is static too.  Parametrised
    in conftest: K = 4 on two kinds on CPU, the K sweep on every kind on CUDA."""
    _store(benchmark, workbench, plan, static_config, kind, record_row)
