"""The decoding loop's first L tokens follow the exact target law (F35) on tiny Llama pairs, through
check_decoder under the run's error budget: every draft source, both verifiers, warped and ragged
batches (V^L sequences enumerated with the target model and the warpers, EOS absorbing)."""

from __future__ import annotations

import pytest

from fixtures.models import tiny_pair
from specdec.conformance import check_decoder
from specdec.decoding import ModelDraft, NgramDraft, SpeculativeDecoder
from specdec.warpers import SamplingConfig

TV = 0.04  # planned detectable deviation per check (power 0.99 at the per-check alpha); 0.03 took 83 s, 2026-11-29
VOCAB = 8
EOS = 7
LENGTH = 3
PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]  # ragged: rows of different lengths share every batch
PLAIN = SamplingConfig()
WARPED = SamplingConfig(temperature=0.8, top_k=5, top_p=0.9)


@pytest.mark.parametrize(
    "source, verifier, sampling, num_draft",
    [
        ("model", "token", PLAIN, 2),
        ("model", "block", PLAIN, 2),
        ("model", "token", WARPED, 3),
        ("greedy_model", "token", PLAIN, 2),
        ("ngram", "token", PLAIN, 2),
        ("none", "token", PLAIN, 0),
    ],
)
def test_first_tokens_follow_the_target_law(specdec_budget, source, verifier, sampling, num_draft):
    target, draft = tiny_pair(1, VOCAB)
    sources = {"model": ModelDraft(draft), "greedy_model": ModelDraft(draft, greedy=True), "ngram": NgramDraft(2), "none": None}
    decoder = SpeculativeDecoder(target, sources[source], num_draft_tokens=num_draft, sampling=sampling, eos_token_id=EOS, verifier=verifier)
    label = f"loop: {source} draft, {verifier} verifier, K={num_draft}, {'warped' if sampling == WARPED else 'T=1'}"
    report = check_decoder(decoder, target, PROMPTS, length=LENGTH, sampling=sampling, eos_token_id=EOS, tv=TV, seed=100,
                           budget=specdec_budget, name=label)
    assert report.verdict == "PASS", report.format()
    has_f28 = source in ("model", "greedy_model")
    assert any(c.kind == "acceptance z" for c in report.checks) == has_f28, report.notes
