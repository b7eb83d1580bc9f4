"""Counter-based seeds: chunk c of stream s of a check campaign with seed S draws from (S, s, c).

So a campaign is reproducible (the same seed, chunk size and n give the same
counts), resumable (chunks are independent) and shardable (ranks take disjoint
chunks; summed counts equal the single-process ones).  Seeds are derived with
numpy's SeedSequence, which mixes the key into well-separated 63-bit states.
"""

from __future__ import annotations

import numpy as np
import torch


def derive_seed(*keys: int) -> int:
    """A 63-bit seed from a tuple of non-negative ints."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1])) & (2**63 - 1)


def chunk_generator(seed: int, stream: int, chunk: int, device) -> torch.Generator:
    """The torch.Generator of chunk ``chunk`` of stream ``stream`` under campaign seed ``seed``."""
    return torch.Generator(device=device).manual_seed(derive_seed(seed, stream, chunk))
