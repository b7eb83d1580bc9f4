"""The static-KV-cache target (specdec.decoding.static_cache) against the eager model, token for token.

Slot = context position, rollback = moving ``fed`` back, left padding into a scratch slot:
the logits must equal transformers' DynamicCache path (RaggedCache) through ragged feeds and
rollbacks, and ``generate(..., target_cache="static")`` must emit the same tokens as the
default path, greedy and sampled (same seed, same uniforms).  On CUDA the same holds with
every query shape replayed from a CUDA graph (gpu-marked).
"""

from __future__ import annotations

import pytest
import torch

from fixtures.models import TINY_PROMPTS, smollm2, smollm2_chat_prompt
from specdec.decoding import ModelDraft, NgramDraft, generate
from specdec.decoding.kvcache import RaggedCache
from specdec.decoding.models import TinyPairConfig, tiny_llama_pair
from specdec.decoding.static_cache import StaticKVCache
from specdec.warpers import SamplingConfig

GREEDY = SamplingConfig(temperature=0)
TWO_LAYERS = TinyPairConfig(vocab_size=16, hidden_size=32, num_layers=2, num_heads=4)  # grouped K/V heads: SmolLM2 below


def test_static_logits_equal_the_dynamic_cache_through_ragged_feeds_and_rollbacks():
    target, _ = tiny_llama_pair(1, TWO_LAYERS)
    dynamic, static = RaggedCache(target, 3, "cpu"), StaticKVCache(target, 3, "cpu", max_length=40)
    with torch.no_grad():
        feeds = [[[1, 2, 3, 4], [5], [6, 7]], [[8], [9, 10, 11], [12]], [[1, 2], [3], [4, 5, 6]]]
        for step, chunks in enumerate(feeds):
            a, b = dynamic.feed(chunks), static.feed(chunks)
            for row, chunk in enumerate(chunks):  # compare the real (right-aligned) columns only
                torch.testing.assert_close(b[row, -len(chunk):], a[row, -len(chunk):], atol=1e-5, rtol=1e-5)
            keep = torch.tensor([max(1, int(f) - step) for f in dynamic.fed])
            dynamic.rollback(keep)
            static.rollback(keep)
        rows = torch.tensor([2, 0])
        dynamic.select(rows)
        static.select(rows)
        torch.testing.assert_close(static.feed([[3], [4, 5]])[:, -1], dynamic.feed([[3], [4, 5]])[:, -1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("sampling", [GREEDY, SamplingConfig(temperature=1.0)], ids=["greedy", "T1"])
def test_generate_with_the_static_target_emits_the_same_tokens(sampling):
    target, draft = tiny_llama_pair(0, TWO_LAYERS)
    prompts = [list(p) for p in TINY_PROMPTS]
    kwargs = dict(max_new_tokens=10, num_draft_tokens=3, sampling=sampling, seed=1)
    eager = generate(target, ModelDraft(draft), prompts, **kwargs)
    static = generate(target, ModelDraft(draft), prompts, target_cache="static", **kwargs)
    assert static.tokens == eager.tokens
    assert [s.num_accepted for s in static.steps] == [s.num_accepted for s in eager.steps]


def test_a_reused_static_cache_gives_each_call_what_a_fresh_one_gives():
    """Reset between calls: a second generation (other prompts, other batch size) is not polluted by the first."""
    target, draft = tiny_llama_pair(0, TWO_LAYERS)
    kwargs = dict(max_new_tokens=8, num_draft_tokens=3, sampling=SamplingConfig(temperature=1.0), seed=2)
    cache = StaticKVCache(target, 2, "cpu", max_length=64)
    for prompts in ([list(p) for p in TINY_PROMPTS[:2]], [list(TINY_PROMPTS[-1])], [list(p) for p in TINY_PROMPTS[:2]]):
        fresh = generate(target, ModelDraft(draft), prompts, target_cache="static", **kwargs)
        reused = generate(target, ModelDraft(draft), prompts, target_cache=cache, **kwargs)
        assert reused.tokens == fresh.tokens


def test_a_static_cache_passed_in_must_fit_the_call():
    target, other = tiny_llama_pair(0, TWO_LAYERS)
    small = StaticKVCache(target, 1, "cpu", max_length=6)  # K = 0: prompt + new tokens + 1 must fit
    with pytest.raises(ValueError, match="max_length=6"):
        generate(target, None, [[1, 2, 3]], max_new_tokens=4, num_draft_tokens=0, seed=0, target_cache=small)
    with pytest.raises(ValueError, match="another model"):
        generate(other, None, [[1]], max_new_tokens=2, num_draft_tokens=0, seed=0, target_cache=small)
    with pytest.raises(ValueError, match="cuda_graphs=False"):
        generate(target, None, [[1]], max_new_tokens=2, num_draft_tokens=0, seed=0, target_cache=small, cuda_graphs=True)
    with pytest.raises(TypeError, match="StaticKVCache, got RaggedCache"):
        generate(target, None, [[1]], max_new_tokens=2, num_draft_tokens=0, seed=0, target_cache=RaggedCache(target, 1, "cpu"))


def test_smollm2_static_target_matches_eager_greedy_token_for_token():
    model, _ = smollm2()  # grouped-query attention: 9 query heads over 3 K/V heads
    prompts = [smollm2_chat_prompt("Repeat exactly: the cat sat on the mat."), smollm2_chat_prompt("Why is the sky blue?")]
    eager = generate(model, NgramDraft(3), prompts, max_new_tokens=12, num_draft_tokens=4, sampling=GREEDY, seed=0)
    static = generate(model, NgramDraft(3), prompts, max_new_tokens=12, num_draft_tokens=4, sampling=GREEDY, seed=0,
                      target_cache="static")
    assert static.tokens == eager.tokens


def test_static_cache_refuses_what_it_cannot_run():
    target, _ = tiny_llama_pair(0, TWO_LAYERS)
    with pytest.raises(ValueError, match="target_cache must be"):
        generate(target, None, [[1]], max_new_tokens=2, num_draft_tokens=0, seed=0, target_cache="paged")
    with pytest.raises(ValueError, match="cuda_graphs=True needs target_cache='static'"):
        generate(target, None, [[1]], max_new_tokens=2, num_draft_tokens=0, seed=0, cuda_graphs=True)
    with pytest.raises(ValueError, match="needs a CUDA device"):
        StaticKVCache(target, 1, "cpu", max_length=8, cuda_graphs=True)
    with pytest.raises(TypeError, match="Llama-style"):
        StaticKVCache(torch.nn.Linear(2, 2), 1, "cpu", max_length=8)


@pytest.mark.gpu
@pytest.mark.parametrize("sampling", [GREEDY, SamplingConfig(temperature=1.0)], ids=["greedy", "T1"])
def test_tiny_cuda_graph_replay_matches_eager_token_for_token_and_survives_reuse(sampling):
    target, draft = (m.to("cuda") for m in tiny_llama_pair(0, TWO_LAYERS))
    prompts = [list(p) for p in TINY_PROMPTS]
    kwargs = dict(max_new_tokens=10, num_draft_tokens=3, sampling=sampling, seed=1)
    eager = generate(target, ModelDraft(draft), prompts, **kwargs)
    cache = StaticKVCache(target, len(prompts), "cuda", max_length=64, cuda_graphs=True)
    for _ in range(2):  # the second call replays the graphs the first captured (when no row finished early)
        graphs = generate(target, ModelDraft(draft), prompts, target_cache=cache, **kwargs)
        assert graphs.tokens == eager.tokens
        assert [s.num_accepted for s in graphs.steps] == [s.num_accepted for s in eager.steps]


@pytest.mark.gpu
def test_cuda_graph_replay_matches_eager_token_for_token():
    model, _ = smollm2()
    model = model.to("cuda")
    prompts = [smollm2_chat_prompt("Repeat exactly: the cat sat on the mat."), smollm2_chat_prompt("Why is the sky blue?")]
    kwargs = dict(max_new_tokens=24, num_draft_tokens=4, sampling=GREEDY, seed=0)
    eager = generate(model, NgramDraft(3), prompts, **kwargs)
    graphs = generate(model, NgramDraft(3), prompts, target_cache="static", cuda_graphs=True, **kwargs)
    model.to("cpu")
    assert graphs.tokens == eager.tokens
