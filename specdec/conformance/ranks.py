"""A campaign across processes (torchrun): every rank samples its share of each stream's chunks, and the
counts are summed before any test runs - one test over every rank's counts, never a vote of per-rank tests.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["process_group", "sum_over_ranks"]


def process_group() -> tuple[int, int]:
    """(rank, world size) of an initialised torch.distributed group, else (0, 1)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def sum_over_ranks(sampled, device: torch.device) -> None:
    """All-reduce (sum) every count tally of ``sampled`` (the engine's) and its sample counts across the process group."""
    import torch.distributed as dist

    on = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    vectors = [c for t in sampled.tallies for c in t.counts] + [np.asarray(sampled.drawn, dtype=np.int64)]
    buffer = torch.from_numpy(np.concatenate(vectors)).to(on)
    dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
    flat, at = buffer.cpu().numpy(), 0
    for tally in sampled.tallies:
        for j, c in enumerate(tally.counts):
            tally.counts[j] = flat[at : at + c.size].copy()
            at += c.size
    sampled.drawn = [int(x) for x in flat[at:]]
