"""Token verification on a GPU: the reference, the fused Triton kernel, FlashInfer (when importable)
and the memory floor (one copy of target_probs), interleaved in one run on the same inputs.

B in {1, 16, 64, 256}, K = 8, V in {32000, 128256}, float32; CUDA events around each call, median
of interleaved rounds; also the fused step replayed from a CUDA graph.  Marked gpu: it skips
without CUDA.  The table prints with ``-s`` and every number goes to pytest-benchmark's extra_info.
"""

import statistics

import pytest
import torch

import specdec as sd
from specdec.bench.clock import cuda_median_seconds as _time

SHAPES = [(b, v) for v in (32000, 128256) for b in (1, 16, 64, 256)]
K = 8
ROUNDS = 7


@pytest.mark.gpu
@pytest.mark.parametrize("batch, vocab", SHAPES, ids=[f"B{b}-V{v}" for b, v in SHAPES])
def test_verifiers_side_by_side(benchmark, batch, vocab):
    from specdec.verify.fused import verify_tokens_fused

    g = torch.Generator(device="cuda").manual_seed(0)
    target = (3 * torch.randn(batch, K + 1, vocab, device="cuda", generator=g)).softmax(-1)
    draft = (3 * torch.randn(batch, K, vocab, device="cuda", generator=g)).softmax(-1)
    tokens = torch.multinomial(draft.reshape(-1, vocab), 1, generator=g).reshape(batch, K)
    calls = {
        "floor (target_probs.clone())": lambda: target.clone(),
        "reference verify_tokens": lambda: sd.verify_tokens(tokens, draft, target, g, validate=False),
        "fused (Triton)": lambda: verify_tokens_fused(tokens, draft, target, g, validate=False),
    }
    try:
        from specdec.adapters._common import import_peer
        from specdec.adapters.flashinfer import TESTED_FLASHINFER

        fs = import_peer("flashinfer", "sampling", f"flashinfer-python {TESTED_FLASHINFER}")  # the raw call, no adapter
        ids = tokens.int()
        counts = torch.zeros(2, batch, dtype=torch.int32, device="cuda")  # FlashInfer adds to them
        calls["FlashInfer chain_speculative_sampling"] = lambda: fs.chain_speculative_sampling(
            draft, ids, target, counts[0], counts[1], deterministic=True, generator=g)
    except ImportError as error:  # said, not hidden: the row then has no FlashInfer column
        benchmark.extra_info["flashinfer"] = str(error)
        print(f"\nno FlashInfer column: {error}")
    for call in calls.values():  # warm up: compile, load, allocate
        call()
    # what is timed is right: the fused kernel emits the reference's tokens from the same generator state
    same = verify_tokens_fused(tokens, draft, target, torch.Generator(device="cuda").manual_seed(5), validate=False)
    reference = sd.verify_tokens(tokens, draft, target, torch.Generator(device="cuda").manual_seed(5), validate=False)
    assert torch.equal(same.tokens, reference.tokens) and torch.equal(same.num_accepted, reference.num_accepted)
    graph_g = torch.Generator(device="cuda").manual_seed(1)
    fused_graph_call = lambda: verify_tokens_fused(tokens, draft, target, graph_g, validate=False)  # noqa: E731
    graph = torch.cuda.CUDAGraph()
    fused_graph_call()
    graph.register_generator_state(graph_g)
    with torch.cuda.graph(graph):
        fused_graph_call()
    calls["fused, CUDA graph replay"] = graph.replay
    times = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            times[name].append(_time(call))
    medians = {name: statistics.median(t) for name, t in times.items()}
    floor = medians["floor (target_probs.clone())"]
    for name, seconds in medians.items():
        benchmark.extra_info[f"median_us[{name}]"] = seconds * 1e6
        benchmark.extra_info[f"ratio_to_floor[{name}]"] = seconds / floor
        print(f"B={batch:4d} V={vocab:6d} {name:40s} {seconds * 1e6:9.1f} us  {seconds / floor:6.2f}x floor"
              + (f"  {seconds / medians['FlashInfer chain_speculative_sampling']:5.2f}x FlashInfer" if "FlashInfer chain_speculative_sampling" in medians else ""))
    assert all(seconds > 0 for seconds in medians.values()) and floor > 0
    benchmark.pedantic(calls["fused (Triton)"], rounds=ROUNDS, iterations=1)
