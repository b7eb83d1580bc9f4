"""Our loop with K = 0 (the autoregressive baseline of every speedup) vs a bare loop of cached forwards.

pytest-benchmark times our K = 0 loop (the thing named); the bare loop (a DynamicCache and argmax,
nothing else) runs before it in each round as the floor.  Both emit the same greedy tokens (asserted).
Ratio = ours / bare per round, in extra_info; lower is better.
"""

from __future__ import annotations

import torch

from perf.harness import Config, run_side
from specdec.bench.clock import spread, timed

GREEDY = Config("none", 0, 0.0)


@torch.no_grad()
def bare_greedy(model, prompt, new_tokens: int) -> list[int]:
    from transformers import DynamicCache

    out = model(input_ids=torch.tensor([list(prompt)], device=model.device), past_key_values=DynamicCache(config=model.config), use_cache=True)
    tokens = []
    for _ in range(new_tokens):
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(int(token))
        if len(tokens) == new_tokens:
            break
        out = model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
    return tokens


def test_autoregressive_loop_vs_bare_forwards(benchmark, workbench, plan):
    prompts = workbench.prompts("qa", plan.prompts)
    floors, ratios, outputs = [], [], {}

    def bare():
        seconds, outputs["bare"] = timed(lambda: [bare_greedy(workbench.target, p, plan.new_tokens) for p in prompts], plan.device)
        floors.append(seconds)

    def ours():
        seconds, _, results, _ = run_side(workbench, prompts, GREEDY, plan)
        ratios.append(seconds / floors[-1])
        outputs["ours"] = [r.tokens[0] for r in results]

    benchmark.pedantic(ours, setup=bare, rounds=plan.rounds, iterations=1)
    assert outputs["ours"] == outputs["bare"], "the K = 0 loop must emit the bare loop's greedy tokens"
    benchmark.extra_info.update(overhead_vs_bare_loop=spread([r - 1 for r in ratios]), ratio_to_bare=spread(ratios))
    benchmark.extra_info["ratios"] = {"ratio_to_bare_loop": {"values": ratios, "higher_is_better": False}}
    print(f"\nK = 0 loop / bare cached forwards: {spread(ratios)['median']:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
