"""Where a target step's time goes on a GPU: eager forward, the static KV cache replayed from a CUDA graph,
and the weight-read floor (issue 12; gpu-marked, skips without CUDA).

Randomly initialised Llamas with SmolLM2-135M's and SmolLM2-1.7B's shapes (V = 49152), float32 and
bfloat16, batch 1, a 300-token context.  pytest-benchmark times one replayed graph step of one token
(the thing named).  Beside it, in extra_info: T(1) eager (transformers' DynamicCache path, the loop's
default), T(1) under graphs, the verify term v(K) = T(K + 1) / T(1) for K = 4 and 8 on both paths,
the floor (one read of every weight: a sum over one flat copy of them, timed the same way) and the
number of kernels one eager width-5 forward of the static path launches (a graph replays the same
kernels).  A step far above the floor with ~1000 kernels is bound by kernel count, not memory.
"""

from __future__ import annotations

import pytest
import torch

from specdec.bench.clock import spread, timed
from specdec.bench.costs import forward_costs

SHAPES = {
    "smollm2-135m-shape": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                               num_key_value_heads=3),
    "smollm2-1.7b-shape": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32,
                               num_key_value_heads=32),
}
CONTEXT = list(range(100, 400))
WIDTHS = (1, 5, 9)


def _random_llama(shape: dict, dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)  # only the weights' values; nothing measured depends on them
    config = LlamaConfig(vocab_size=49152, max_position_embeddings=2048, tie_word_embeddings=True, **shape)
    with torch.device("cuda"):
        return LlamaForCausalLM(config).to(dtype).eval()


def _kernels_per_forward(model, width: int) -> int:
    """CUDA kernels one eager static-cache forward of ``width`` tokens launches (what a graph of it replays)."""
    from torch.profiler import ProfilerActivity, profile

    from specdec.decoding import StaticKVCache

    cache = StaticKVCache(model, 1, "cuda", max_length=len(CONTEXT) + width)
    cache.feed([CONTEXT])
    tokens, counts = torch.full((1, width), 7, device="cuda"), torch.tensor([width], device="cuda")
    cache.feed_tensor(tokens, counts)  # warm-up
    cache.rollback(torch.tensor([len(CONTEXT)], device="cuda"))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        cache.feed_tensor(tokens, counts)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_graph_step_vs_eager_and_the_weight_floor(benchmark, shape, dtype):
    from specdec.decoding import StaticKVCache

    device = torch.device("cuda", torch.cuda.current_device())
    model = _random_llama(SHAPES[shape], dtype)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    floor = spread([timed(flat.sum, device)[0] for _ in range(21)][1:])["median"]
    del flat
    eager = forward_costs(model, CONTEXT, WIDTHS, rounds=10)
    cache = StaticKVCache(model, 1, device, max_length=len(CONTEXT) + max(WIDTHS) + 1, cuda_graphs=True)
    graphs = forward_costs(model, CONTEXT, WIDTHS, rounds=10, target_cache=cache)  # captures one graph per width
    kernels = _kernels_per_forward(model, 5)

    step, one = torch.full((1, 1), 7, device=device), torch.tensor([1], device=device)
    keep = cache.fed.clone()

    def replay():
        cache.feed_tensor(step, one)
        torch.cuda.synchronize()

    benchmark.pedantic(replay, setup=lambda: cache.rollback(keep), rounds=21, iterations=1, warmup_rounds=1)
    info = {
        "floor_ms": floor * 1e3, "eager_ms": eager[1] * 1e3, "graph_ms": graphs[1] * 1e3,
        "graph_over_floor": graphs[1] / floor, "eager_over_graph": eager[1] / graphs[1],
        "verify_term_eager": {4: eager[5] / eager[1], 8: eager[9] / eager[1]},
        "verify_term_graph": {4: graphs[5] / graphs[1], 8: graphs[9] / graphs[1]},
        "kernels_per_width5_forward": kernels,
    }
    benchmark.extra_info.update(info)
    print(f"\n{shape} {dtype}: floor {info['floor_ms']:.2f} ms, eager T(1) {info['eager_ms']:.2f} ms, graph T(1) "
          f"{info['graph_ms']:.2f} ms ({info['graph_over_floor']:.1f}x the floor), v(4) eager "
          f"{info['verify_term_eager'][4]:.2f} graph {info['verify_term_graph'][4]:.2f}, {kernels} kernels per forward")
    assert graphs[1] < eager[1], f"a replayed graph step ({graphs[1]:.4f} s) must beat the eager one ({eager[1]:.4f} s)"
    assert graphs[1] > 0.5 * floor, f"a step ({graphs[1]:.5f} s) cannot read every weight faster than one sum does ({floor:.5f} s)"
