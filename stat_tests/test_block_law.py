"""The emitted block of the token and block verifiers follows each rule's exact law on chains of
tables (F26; F16-F20), and the first emitted token follows the target (F4): planned checks, seeded."""

import zlib

import pytest
import torch

import specdec as sd
from fixtures.samplers import sample_chain_blocks
from specdec.conformance import check_law
from specdec.laws.block import block_law

TV = 0.02


def chain(vocab, seed, sharpness):
    """Context-dependent tables p(. | prefix), q(. | prefix) from a deterministic per-prefix seed."""

    def make(role):
        def fn(prefix):
            g = torch.Generator().manual_seed(zlib.crc32(repr((seed, role, prefix)).encode()))
            return (torch.randn(vocab, generator=g, dtype=torch.float64) * sharpness).softmax(-1)

        return fn

    return make("target"), make("draft")


def check_blocks(budget, blocks, law: dict, first_law, label):
    cells = {block: i for i, block in enumerate(law)}
    ids = [cells.get(block, -1) for block in blocks]  # -1: outside the law's support, which fails at once
    check = check_law(ids, list(law.values()), name=f"{label}: emitted blocks", budget=budget)
    assert check.passed, check.describe()
    first = check_law([block[0] for block in blocks], first_law, name=f"{label}: first token = target (F4)", budget=budget)
    assert first.passed, first.describe()


@pytest.mark.parametrize("vocab,num_draft,sharpness", [(3, 2, 1.0), (4, 3, 2.0), (2, 4, 3.0), (5, 1, 0.5), (3, 0, 1.0)])
def test_token_verification_follows_its_exact_block_law(specdec_budget, vocab, num_draft, sharpness):
    target_fn, draft_fn = chain(vocab, seed=vocab * 100 + num_draft, sharpness=sharpness)
    law = sd.emitted_block_law(target_fn, draft_fn, num_draft)
    n = specdec_budget.sample_size(list(law.values()), TV)
    blocks = sample_chain_blocks(target_fn, draft_fn, num_draft, vocab, n, torch.Generator().manual_seed(num_draft))
    check_blocks(specdec_budget, blocks, law, target_fn(()), f"token rule V={vocab} K={num_draft} sharpness={sharpness}")


@pytest.mark.parametrize("vocab,num_draft,sharpness", [(3, 2, 1.0), (2, 3, 2.0), (4, 1, 1.0)])
def test_block_verification_follows_its_exact_law(specdec_budget, vocab, num_draft, sharpness):
    target_fn, draft_fn = chain(vocab, seed=vocab * 1000 + num_draft, sharpness=sharpness)
    as_list = lambda fn: (lambda prefix: fn(prefix).tolist())  # noqa: E731
    law = block_law(as_list(target_fn), as_list(draft_fn), num_draft, vocab)
    n = specdec_budget.sample_size(list(law.values()), TV)
    blocks = sample_chain_blocks(target_fn, draft_fn, num_draft, vocab, n, torch.Generator().manual_seed(11), verifier=sd.verify_block)
    check_blocks(specdec_budget, blocks, law, target_fn(()), f"block rule V={vocab} K={num_draft}")
