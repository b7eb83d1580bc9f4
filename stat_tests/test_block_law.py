"""The emitted block of the vectorised verifier follows its exact law on chains (F26),
and the first emitted token follows the target (F4): planned chi-square tests, seeded."""

import zlib

import pytest
import torch

import specdec as sd
from specdec.testing import sample_chain_blocks

TV = 0.02


def chain(vocab, seed, sharpness):
    """Context-dependent tables p(. | prefix), q(. | prefix) from a deterministic per-prefix seed."""

    def make(role):
        def fn(prefix):
            g = torch.Generator().manual_seed(zlib.crc32(repr((seed, role, prefix)).encode()))
            w = torch.randn(vocab, generator=g, dtype=torch.float64) * sharpness
            return w.softmax(-1)

        return fn

    return make("target"), make("draft")


@pytest.mark.parametrize("vocab,num_draft,sharpness", [(3, 2, 1.0), (4, 3, 2.0), (2, 4, 3.0), (5, 1, 0.5), (3, 0, 1.0)])
def test_emitted_blocks_follow_the_exact_block_law(stat_checks, vocab, num_draft, sharpness):
    target_fn, draft_fn = chain(vocab, seed=vocab * 100 + num_draft, sharpness=sharpness)
    law = sd.emitted_block_law(target_fn, draft_fn, num_draft)
    cells = {block: i for i, block in enumerate(law)}
    n = stat_checks.plan(num_cells=len(cells), tv=TV)
    blocks = sample_chain_blocks(target_fn, draft_fn, num_draft, vocab, n, torch.Generator().manual_seed(num_draft))
    ids = [cells.get(block, -1) for block in blocks]
    assert min(ids) >= 0, f"emitted a block outside the law's support: {blocks[ids.index(-1)]}"
    stat_checks.assert_follows(
        ids, list(law.values()), label=f"block law V={vocab} K={num_draft} sharpness={sharpness}"
    )
    first = torch.tensor([block[0] for block in blocks])
    stat_checks.assert_follows(first, target_fn(()), label=f"first token = target V={vocab} K={num_draft}")


@pytest.mark.parametrize("vocab,num_draft,sharpness", [(3, 2, 1.0), (2, 3, 2.0), (4, 1, 1.0)])
def test_block_verification_follows_its_exact_law(stat_checks, vocab, num_draft, sharpness):
    """Block verification (F16-F19): emitted blocks vs the enumerated law; first token vs target."""
    from specdec.block import block_law

    target_fn, draft_fn = chain(vocab, seed=vocab * 1000 + num_draft, sharpness=sharpness)
    as_list = lambda fn: (lambda prefix: fn(prefix).tolist())  # noqa: E731
    law = block_law(as_list(target_fn), as_list(draft_fn), num_draft, vocab)
    cells = {b: i for i, b in enumerate(law)}
    n = stat_checks.plan(num_cells=len(cells), tv=TV)
    blocks = sample_chain_blocks(
        target_fn, draft_fn, num_draft, vocab, n, torch.Generator().manual_seed(11), verifier=sd.verify_block
    )
    ids = [cells.get(b, -1) for b in blocks]
    assert min(ids) >= 0, f"block verification emitted a block outside its law's support: {blocks[ids.index(-1)]}"
    stat_checks.assert_follows(ids, list(law.values()), label=f"block verification V={vocab} K={num_draft}")
    first = torch.tensor([b[0] for b in blocks])
    stat_checks.assert_follows(first, target_fn(()), label=f"block verification first token V={vocab} K={num_draft}")
