"""Token verifier time vs the memory floor (one copy of target_probs), B=16, K=8, V=49152.

The verifier must read target_probs at least once, so one clone of it (read +
write) is a floor no implementation can beat by much.  The ratio is measured
side by side, interleaved, in one run, with and without input validation (one
host sync and four full reductions).  Goal on CPU: within 4x of the floor.
"""

import statistics

import pytest
import torch
from torch.utils import benchmark as torch_benchmark

import specdec as sd

B, K, V = 16, 8, 49152


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def step_inputs(request):
    device = torch.device(request.param)
    g = torch.Generator(device=device).manual_seed(0)
    target = (3 * torch.randn(B, K + 1, V, generator=g, device=device)).softmax(-1)
    draft = (3 * torch.randn(B, K, V, generator=g, device=device)).softmax(-1)
    tokens = sd.sample_categorical(draft, g)
    return {"tokens": tokens, "draft": draft, "target": target, "g": g, "sd": sd, "device": device}


STATEMENTS = {
    "floor (target_probs.clone())": "target.clone()",
    "verify_tokens": "sd.verify_tokens(tokens, draft, target, g)",
    "verify_tokens validate=False": "sd.verify_tokens(tokens, draft, target, g, validate=False)",
}


def side_by_side(inputs, statements, rounds=5):
    """Median time of each statement over interleaved rounds (one run, same inputs)."""
    sync = "; torch.cuda.synchronize()" if inputs["device"].type == "cuda" else ""
    times = {name: [] for name in statements}
    for _ in range(rounds):
        for name, stmt in statements.items():
            timer = torch_benchmark.Timer(stmt + sync, globals=dict(inputs, torch=torch))
            times[name].append(timer.blocked_autorange(min_run_time=0.2).median)
    return {name: statistics.median(ts) for name, ts in times.items()}


def test_verifier_vs_memory_floor(benchmark, step_inputs):
    medians = side_by_side(step_inputs, STATEMENTS)
    ratios = {name: t / medians["floor (target_probs.clone())"] for name, t in medians.items()}
    for name in STATEMENTS:
        benchmark.extra_info[f"median_s[{name}]"] = medians[name]
        benchmark.extra_info[f"ratio_to_floor[{name}]"] = ratios[name]
        print(f"{name:32s} {medians[name] * 1e3:8.3f} ms  {ratios[name]:5.2f}x floor")
    inputs = step_inputs
    benchmark(sd.verify_tokens, inputs["tokens"], inputs["draft"], inputs["target"], inputs["g"])


BLOCK_STATEMENTS = {
    "verify_tokens": "sd.verify_tokens(tokens, draft, target, g)",
    "verify_block": "sd.verify_block(tokens, draft, target, g)",
}


def test_block_vs_token_verifier(benchmark, step_inputs):
    """Block verification (F16-F19) touches every draft row (F17); goal: within 2x of the token verifier."""
    medians = side_by_side(step_inputs, BLOCK_STATEMENTS)
    token, blocked = medians["verify_tokens"], medians["verify_block"]
    benchmark.extra_info["ratio_block_to_token"] = blocked / token
    print(f"verify_block {blocked * 1e3:.3f} ms vs verify_tokens {token * 1e3:.3f} ms: {blocked / token:.2f}x")
    inputs = step_inputs
    benchmark(sd.verify_block, inputs["tokens"], inputs["draft"], inputs["target"], inputs["g"])
