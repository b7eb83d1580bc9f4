"""The shared sampling warpers equal transformers' logits warpers, ties included (E6)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd

configs = st.builds(
    sd.SamplingConfig,
    temperature=st.sampled_from([0.3, 0.7, 1.0, 1.5]),
    top_k=st.one_of(st.none(), st.integers(1, 12)),
    top_p=st.one_of(st.none(), st.floats(0.05, 1.0)),
    min_p=st.one_of(st.none(), st.floats(0.0, 0.5)),
    min_tokens_to_keep=st.integers(1, 3),
)


@st.composite
def logit_batches(draw, max_vocab=10):
    rows = draw(st.integers(1, 4))
    vocab = draw(st.integers(1, max_vocab))
    # Few distinct values, so ties at the top-k, top-p and min-p boundaries are common.
    values = st.one_of(st.sampled_from([-3.0, -1.0, 0.0, 0.5, 2.0]), st.floats(-5, 5, width=32))
    flat = draw(st.lists(values, min_size=rows * vocab, max_size=rows * vocab))
    return torch.tensor(flat, dtype=torch.float32).reshape(rows, vocab)


def hf_processors(config):
    generation = pytest.importorskip("transformers.generation.logits_process")
    keep = config.min_tokens_to_keep
    processors = generation.LogitsProcessorList()
    if config.temperature != 1.0:
        processors.append(generation.TemperatureLogitsWarper(config.temperature))
    if config.top_k:
        processors.append(generation.TopKLogitsWarper(top_k=config.top_k, min_tokens_to_keep=keep))
    if config.top_p is not None and config.top_p < 1.0:
        processors.append(generation.TopPLogitsWarper(top_p=config.top_p, min_tokens_to_keep=keep))
    if config.min_p is not None:
        processors.append(generation.MinPLogitsWarper(min_p=config.min_p, min_tokens_to_keep=keep))
    return processors


@settings(max_examples=300)
@given(logit_batches(), configs)
def test_warped_logits_equal_transformers(logits, config):
    """Same kept set and same values as transformers' processors in generate()'s order."""
    expected = hf_processors(config)(torch.zeros(logits.shape[0], 1, dtype=torch.long), logits.clone())
    ours = sd.warp_logits(logits, config)
    assert torch.equal(torch.isinf(ours), torch.isinf(expected))
    assert torch.equal(ours, expected)
    probs = sd.warped_probs(logits, config)
    assert torch.allclose(probs, expected.softmax(-1), atol=1e-7, rtol=0)


@given(logit_batches())
def test_temperature_zero_is_an_exact_one_hot_at_the_lowest_argmax(logits):
    probs = sd.warped_probs(logits, sd.SamplingConfig(temperature=0), dtype=torch.float64)
    for row, p in zip(logits, probs):
        first_max = min(i for i in range(row.numel()) if row[i] == row.max())
        assert p.tolist() == [1.0 if i == first_max else 0.0 for i in range(row.numel())]


def test_top_k_keeps_every_tie_with_the_kth_logit():
    logits = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.0]])
    kept = torch.isfinite(sd.warp_logits(logits, sd.SamplingConfig(top_k=2)))
    assert kept.tolist() == [[True, True, True, True, False]]


def test_warpers_work_on_batched_logits_of_any_rank():
    logits = torch.randn(2, 3, 4, 7, generator=torch.Generator().manual_seed(0))
    probs = sd.warped_probs(logits, sd.SamplingConfig(temperature=0.5, top_k=3, top_p=0.9))
    assert probs.shape == logits.shape
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3, 4))
    assert ((probs > 0).sum(-1) <= 3).all()


def test_positive_infinite_logit_is_an_error():
    with pytest.raises(ValueError, match=r"\+inf"):
        sd.warped_probs(torch.tensor([0.0, math.inf]), sd.SamplingConfig())
