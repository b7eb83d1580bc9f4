"""Block width and warps of the fused verifier, timed against FlashInfer on one GPU (graph replay and eager).

    python -m scripts.tune_fused
"""

import torch

from specdec.bench.clock import cuda_median_seconds as median_seconds
from specdec.verify import fused

SHAPES = [(b, v) for v in (32000, 128256) for b in (1, 16, 64, 256)]  # as perf/test_gpu_verifiers.py
K = 8

VARIANTS = [(1024, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16), (8192, 32)]


def timed(call, repeats=30):
    """Median microseconds of ``call`` (the GPU benchmark's CUDA-event timer)."""
    return 1e6 * median_seconds(call, repeats)


def main():
    try:
        from flashinfer import sampling as fs
    except ImportError:
        fs = None
    print(f"{'B':>4} {'V':>7} " + " ".join(f"{b}/{w:>2}".rjust(18) for b, w in VARIANTS) + "   FlashInfer (eager)")
    for batch, vocab in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(0)
        target = (3 * torch.randn(batch, K + 1, vocab, device="cuda", generator=g)).softmax(-1)
        draft = (3 * torch.randn(batch, K, vocab, device="cuda", generator=g)).softmax(-1)
        tokens = torch.multinomial(draft.reshape(-1, vocab), 1, generator=g).reshape(batch, K)
        cells = []
        for block, warps in VARIANTS:
            fused.BLOCK, fused.NUM_WARPS = block, warps
            call = lambda: fused.verify_tokens_fused(tokens, draft, target, g, validate=False)  # noqa: E731
            call()
            eager = timed(call)
            gg = torch.Generator(device="cuda").manual_seed(1)
            graph_call = lambda: fused.verify_tokens_fused(tokens, draft, target, gg, validate=False)  # noqa: E731
            graph_call()
            graph = torch.cuda.CUDAGraph()
            graph.register_generator_state(gg)
            with torch.cuda.graph(graph):
                graph_call()
            replay = timed(graph.replay)
            cells.append(f"{eager:7.1f}/{replay:6.1f} us")
        flash = ""
        if fs is not None:
            ids = tokens.int()
            counts = torch.zeros(2, batch, dtype=torch.int32, device="cuda")
            call = lambda: fs.chain_speculative_sampling(draft, ids, target, counts[0], counts[1], deterministic=True, generator=g)  # noqa: E731
            call()
            flash = f"{timed(call):7.1f} us"
        print(f"{batch:4d} {vocab:7d} " + " ".join(c.rjust(18) for c in cells) + "   " + flash, flush=True)


if __name__ == "__main__":
    main()
