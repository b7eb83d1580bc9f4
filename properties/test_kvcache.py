"""KV-cache rollback (issue 3): after any accept length, per row, the ragged cache
answers exactly like a fresh prefill of the tokens it kept."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fixtures.models import tiny_pair
from specdec.decoding.kvcache import RaggedCache

VOCAB = 8
TOL = 1e-4  # float32 logits of a 1-layer model: same maths, different reduction order

token_lists = st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=6)


def _fresh_last_logits(model, tokens: list[int]) -> torch.Tensor:
    return model(input_ids=torch.tensor([tokens])).logits[0, -1]


@settings(max_examples=40)
@given(
    prompts=st.lists(token_lists, min_size=1, max_size=4),
    data=st.data(),
)
@torch.no_grad()
def test_rollback_equals_fresh_prefill(prompts, data):
    model, _ = tiny_pair(0, VOCAB)
    batch = len(prompts)
    cache = RaggedCache(model, batch, "cpu")
    contexts = [list(p) for p in prompts]
    cache.feed(contexts)
    for _ in range(3):  # three draft/verify rounds with arbitrary accept lengths per row
        drafted = [data.draw(token_lists, label="chunk") for _ in range(batch)]
        cache.feed(drafted)
        keep = [len(c) + data.draw(st.integers(0, len(d)), label="accepted") for c, d in zip(contexts, drafted)]
        contexts = [(c + d)[:k] for c, d, k in zip(contexts, drafted, keep)]
        cache.rollback(torch.tensor(keep))
        assert cache.fed.tolist() == keep
        nxt = [[data.draw(st.integers(0, VOCAB - 1), label="next")] for _ in range(batch)]
        logits = cache.feed(nxt)[:, -1]
        contexts = [c + n for c, n in zip(contexts, nxt)]
        for row, ctx in enumerate(contexts):
            fresh = _fresh_last_logits(model, ctx)
            err = (logits[row] - fresh).abs().max().item()
            assert err < TOL, f"row {row} context {ctx}: cached logits differ from a fresh prefill by {err:.2e}"


@torch.no_grad()
def test_crop_drops_slots_no_row_uses():
    model, _ = tiny_pair(0, VOCAB)
    cache = RaggedCache(model, 2, "cpu")
    cache.feed([[1, 2, 3], [4]])
    cache.feed([[5, 6], [7, 1]])  # 3 + 2 slots
    cache.rollback(torch.tensor([4, 2]))  # row 0 keeps 4 of 5 positions, row 1 keeps 2 of 3
    assert cache.slot_pos.shape[1] == 4, cache.slot_pos
    assert cache.cache.get_seq_length() == 4
    assert cache.slot_pos.tolist() == [[0, 1, 2, 3], [-1, -1, 0, 1]]
    cache.rollback(torch.tensor([0, 0]))
    assert cache.slot_pos.shape[1] == 0 and cache.cache.get_seq_length() == 0


@torch.no_grad()
def test_select_keeps_rows_in_order():
    model, _ = tiny_pair(0, VOCAB)
    cache = RaggedCache(model, 3, "cpu")
    contexts = [[1, 2], [3, 4, 5], [6]]
    cache.feed(contexts)
    cache.select(torch.tensor([2, 0]))
    logits = cache.feed([[7], [7]])[:, -1]
    for row, ctx in enumerate([contexts[2] + [7], contexts[0] + [7]]):
        assert (logits[row] - _fresh_last_logits(model, ctx)).abs().max().item() < TOL
