"""The llama.cpp oracle's sampler chain (specdec/adapters/llama_cpp/sampler_chain.py) sorts only top-p's ``PARTIAL``
most likely tokens first, all of them only when those fall short of p: the law must not depend on that shortcut.
Exact checks (the law bitwise, the shortcut forced on and off); that the chain is llama.cpp's own is
peers/test_llama_cpp_tokens.py's (the C samplers)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.adapters.llama_cpp import sampler_chain
from specdec.adapters.llama_cpp.sampler_chain import ChainSettings, chain_law


@st.composite
def rows(draw):
    vocab = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    logits = (rng.normal(size=vocab) * draw(st.sampled_from([0.1, 1.0, 4.0]))).astype(np.float32)
    if draw(st.booleans()):  # ties: a few values repeated across the row, where the partial sort cuts
        logits = np.round(logits, 1)
    if vocab > 2 and draw(st.booleans()):  # banned tokens (llama-server's end-of-generation ban)
        logits[rng.integers(0, vocab, 2)] = -np.inf
    return logits, [int(t) for t in rng.integers(0, vocab, draw(st.integers(0, 30)))]


@settings(max_examples=300, deadline=None)
@given(rows(), st.sampled_from([0.3, 0.8, 0.95, 0.999]), st.sampled_from([0, 0, 3]), st.sampled_from([0.0, 0.1]),
       st.sampled_from([1.0, 1.3]), st.integers(1, 40))
def test_the_law_is_the_full_sorts_whatever_top_p_sorts_first(row, top_p, top_k, min_p, repeat, first):
    logits, history = row
    chain = ChainSettings(temperature=0.7, top_k=top_k, top_p=top_p, min_p=min_p, repeat_penalty=repeat)
    original = sampler_chain.PARTIAL
    try:
        sampler_chain.PARTIAL = first  # a short first guess: the fallback to every survivor is taken often
        shortcut = chain_law(logits, history, chain)
        sampler_chain.PARTIAL = logits.shape[0] + 1  # no shortcut: every survivor sorted at once
        full = chain_law(logits, history, chain)
    finally:
        sampler_chain.PARTIAL = original
    assert np.array_equal(shortcut, full), (top_p, top_k, first, np.flatnonzero(shortcut != full)[:5])
    assert abs(full.sum() - 1.0) < 1e-9 and (full >= 0).all()


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.integers(1, 320), st.sampled_from([1, 3, 1000]))
def test_the_first_guess_is_the_full_sorts_prefix_ties_by_the_lower_id(vocab, seed, first, levels):
    """The partial sort's first ``first`` ids are the full sort's, ties (few distinct logits) broken by the lower id."""
    rng = np.random.default_rng(seed)
    logits = rng.integers(0, levels, vocab).astype(np.float32)
    ids = np.arange(vocab)
    full = sampler_chain._by_logit(logits, ids)
    assert np.array_equal(sampler_chain._by_logit(logits, ids, first), full[:first])
    assert all(logits[a] > logits[b] or (logits[a] == logits[b] and a < b) for a, b in zip(full, full[1:]))
