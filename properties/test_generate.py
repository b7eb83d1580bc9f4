"""The decoding loop on tiny Llama pairs (issue 3): greedy equality with plain greedy
decoding for every draft source and both verifiers, exact stopping, statistics, bad input."""

from __future__ import annotations

import pytest
import torch

import numpy as np

import specdec as sd
from fixtures.models import TINY_PROMPTS, draft_sources, plain_greedy, tiny_pair
from specdec.decoding import ModelDraft, NgramDraft, SpeculativeDecoder, generate
from specdec.decoding.models import TinyPairConfig, tiny_llama_pair
from specdec.warpers import SamplingConfig

GREEDY = SamplingConfig(temperature=0)
VOCAB = 8


@pytest.mark.parametrize("source", ["model", "greedy_model", "ngram"])
@pytest.mark.parametrize("verifier", ["token", "block"])
@pytest.mark.parametrize("prompts", [TINY_PROMPTS[:1], TINY_PROMPTS], ids=["batch1", "ragged4"])
@pytest.mark.parametrize("seed", [0, 1])
def test_greedy_equals_plain_greedy(source, verifier, prompts, seed):
    target, draft = tiny_pair(seed, VOCAB)
    expected = [plain_greedy(target, p, 13) for p in prompts]
    result = generate(
        target, draft_sources(draft)[source], prompts, max_new_tokens=13, num_draft_tokens=3, sampling=GREEDY, seed=0, verifier=verifier
    )
    assert result.tokens == expected
    assert result.finish_reasons == ["length"] * len(prompts)


def test_autoregressive_baseline_is_k0():
    target, _ = tiny_pair(0, VOCAB)
    result = generate(target, None, TINY_PROMPTS, max_new_tokens=6, num_draft_tokens=0, sampling=GREEDY, seed=0)
    assert result.tokens == [plain_greedy(target, p, 6) for p in TINY_PROMPTS]
    assert all(s.num_draft_tokens == 0 and set(s.num_accepted) == {0} for s in result.steps)
    assert len(result.steps) == 6


@pytest.mark.parametrize("max_new_tokens", [1, 2, 5, 9])
def test_stops_at_max_new_tokens_exactly(max_new_tokens):
    target, draft = tiny_pair(0, VOCAB)
    result = generate(target, draft, TINY_PROMPTS, max_new_tokens=max_new_tokens, num_draft_tokens=4, seed=3)
    assert [len(t) for t in result.tokens] == [max_new_tokens] * len(TINY_PROMPTS)
    assert all(s.num_draft_tokens <= max_new_tokens - 1 for s in result.steps), "a step drafted past max_new_tokens"


def test_eos_truncates_and_finishes_rows():
    target, draft = tiny_pair(0, VOCAB)
    eos = 1
    expected = [plain_greedy(target, p, 12, eos) for p in TINY_PROMPTS]
    assert any(e[-1] == eos for e in expected) and any(e[-1] != eos for e in expected), "fixture must mix both endings"
    result = generate(target, draft, TINY_PROMPTS, max_new_tokens=12, num_draft_tokens=3, sampling=GREEDY, eos_token_id=eos, seed=0)
    assert result.tokens == expected
    assert result.finish_reasons == ["eos" if e[-1] == eos else "length" for e in expected]


def test_step_statistics_are_consistent_and_use_one_definition_of_acceptance():
    target, draft = tiny_pair(0, VOCAB)
    result = generate(target, draft, TINY_PROMPTS, max_new_tokens=10, num_draft_tokens=3, seed=5)
    for row, tokens in enumerate(result.tokens):
        emitted = sum(s.num_emitted[s.rows.index(row)] for s in result.steps if row in s.rows)
        assert emitted == len(tokens)
        starts = [s.start[s.rows.index(row)] for s in result.steps if row in s.rows]
        assert starts == sorted(starts) and starts[0] == 0
    for step in result.steps:
        assert all(0 <= a <= step.num_draft_tokens for a in step.num_accepted)
    accepted = [a for s in result.steps for a in s.num_accepted]
    drafted = [s.num_draft_tokens for s in result.steps for _ in s.num_accepted]
    verified = [a + (a < k) for a, k in zip(accepted, drafted)]
    assert 0 < sum(accepted) < sum(verified) <= sum(drafted)
    assert result.acceptance_rate() == sd.acceptance_rate(accepted, drafted) == sum(accepted) / sum(verified)  # docs/reference.md §6
    assert result.draft_utilisation() == sum(accepted) / sum(drafted) <= result.acceptance_rate()
    assert 1 < result.mean_tokens_per_step() <= 4


def test_same_seed_same_output_and_decoder_wrapper():
    target, draft = tiny_pair(0, VOCAB)
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=3)
    first = decoder(TINY_PROMPTS, 8, 11)
    assert decoder(TINY_PROMPTS, 8, 11) == first
    assert decoder(TINY_PROMPTS, 8, 12) != first
    assert decoder.last_result is not None and decoder.last_result.steps


def test_ngram_lookup_finds_earliest_continuation():
    draft = NgramDraft(max_ngram_size=2)
    assert draft.lookup([5, 6, 7, 8, 5, 6], 3) == [7, 8, 5]
    assert draft.lookup([1, 2, 3], 2) == []
    assert draft.lookup([4, 9, 4], 5) == [9, 4]  # 1-gram fallback


# ---------------------------------------------------------------- bad input


def _target():
    return tiny_pair(0, VOCAB)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(prompts=[[]]), "prompts\\[0\\] is empty"),
        (dict(prompts=[]), "non-empty list"),
        (dict(prompts=[[1, 99]]), "prompts\\[0\\] token must be an integer <= 7, got 99"),
        (dict(num_draft_tokens=-1), "num_draft_tokens must be an integer >= 0"),
        (dict(max_new_tokens=0), "max_new_tokens must be an integer >= 1"),
        (dict(eos_token_id=VOCAB), "eos_token_id must be an integer <= 7, got 8"),
        (dict(seed=None), "randomness is an argument"),
        (dict(verifier="fast"), "verifier: 'fast' is not a chain scheme; registered: token, block"),
        (dict(verifier="greedy"), "^verifier: 'greedy' is not a chain scheme"),  # the argument named (issue 31)
        (dict(num_draft_tokens=1.5), "num_draft_tokens must be an integer, got float"),
        (dict(max_new_tokens=True), "max_new_tokens must be an integer, got the bool"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, match):
    target, draft = _target()
    args = dict(prompts=[[1, 2]], max_new_tokens=3, num_draft_tokens=2, seed=0)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        generate(target, ModelDraft(draft), args.pop("prompts"), **args)


def test_numpy_ids_and_counts_are_accepted():
    target, draft = _target()
    prompt = np.array([1, 2, 3], dtype=np.int64)
    out = generate(target, ModelDraft(draft), [prompt], max_new_tokens=np.int64(4), num_draft_tokens=np.int32(2),
                   eos_token_id=np.int64(7), seed=np.uint8(3))
    assert len(out.tokens[0]) <= 4


def _bad_verifier(change):
    def verifier(draft_tokens, draft_probs, target_probs, generator):
        result = sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator)
        return change(result)

    return verifier


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda r: (r.num_accepted, r.tokens), r"returned tuple; a TokenVerifier \(specdec.protocols.TokenVerifier\) returns"),
        (lambda r: sd.VerifyResult(r.num_accepted - 1, r.tokens), "num_accepted\\[0\\] = -1"),
        (lambda r: sd.VerifyResult(r.num_accepted, r.tokens.fill_(99)), "token 99 in row 0, outside the vocabulary|emitted \\[99"),
        (lambda r: sd.VerifyResult(r.num_accepted, r.tokens[:, :1]), "tokens of shape"),
    ],
)
def test_a_custom_verifier_is_checked_every_step(change, match):
    """generate trusts no verifier: what it returns must satisfy the TokenVerifier contract."""
    target, draft = _target()
    with pytest.raises((TypeError, ValueError), match=match):
        generate(target, ModelDraft(draft), [[1, 2]], max_new_tokens=4, num_draft_tokens=2, seed=0, verifier=_bad_verifier(change))


def test_mismatched_vocabulary_is_an_error():
    target, _ = _target()
    _, other = tiny_llama_pair(0, TinyPairConfig(vocab_size=VOCAB + 1))
    with pytest.raises(ValueError, match="draft vocabulary size 9 differs from the target's 8"):
        generate(target, other, [[1]], max_new_tokens=2, num_draft_tokens=1, seed=0)


def test_nan_logits_from_a_model_are_an_error():
    target, draft = tiny_llama_pair(0, TinyPairConfig(vocab_size=VOCAB))
    with torch.no_grad():
        target.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="target model produced NaN logits"):
        generate(target, draft, [[1, 2]], max_new_tokens=3, num_draft_tokens=2, seed=0)
    target, draft = tiny_llama_pair(0, TinyPairConfig(vocab_size=VOCAB))
    with torch.no_grad():
        draft.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="draft model produced NaN logits"):
        generate(target, draft, [[1, 2]], max_new_tokens=3, num_draft_tokens=2, seed=0)


def test_draft_required_when_k_positive():
    target, _ = _target()
    with pytest.raises(ValueError, match="needs a draft source"):
        generate(target, None, [[1]], max_new_tokens=2, num_draft_tokens=2, seed=0)
