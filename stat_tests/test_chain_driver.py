"""The engine's chain driver: with K = 0 it is plain sampling from the chain's tables, so its first L
tokens follow the exact chain law (F35) - a planned check under the run's budget, not a tolerance."""

import numpy as np
import torch

import specdec as sd
from specdec.conformance import ChainCase, check_law
from specdec.conformance.streams.chains import chain_stream
from specdec.conformance.engine import ChunkKey


def test_chain_driver_with_k0_samples_the_chain_law(specdec_budget):
    chain = ChainCase("c", vocab=3, num_draft_tokens=0, length=2, seed=5)
    law = chain.sequence_law()
    n = specdec_budget.sample_size(law, 0.02)
    counts = chain_stream(sd.verify_tokens, chain, torch.device("cpu")).draw(n, ChunkKey(0, 0, 0, torch.device("cpu")))[0].numpy()
    check = check_law(np.repeat(np.arange(law.size + 1), counts), law, name="chain driver, K=0", budget=specdec_budget)
    assert check.passed, check.describe()
    assert abs(law.sum() - 1) < 1e-12
