"""transformers' reported log-probabilities (``output_scores``) against HFSettingsOracle, speculation off and on.

Deterministic comparison (no statistical test: the reported law and the oracle's are both computed, not sampled):
the control (``generate`` without speculation) sets the tolerance (reported_logprobs.control_tolerance), the prompt
lookup decoder is judged at it (it drafts: 55 draft tokens proposed over 35 steps for the 48 tokens, counted by
wrapping PromptLookupCandidateGenerator.get_candidates, 2026-11-27).  Tiny Llama fixture, vocabulary 8, 4 prompts x 12 tokens: about a second."""

from __future__ import annotations

import math

import pytest

from fixtures.models import tiny_pair
from specdec.adapters.hf import HFGenerateDecoder, HFPromptLookupDecoder
from specdec.adapters.hf_logprobs import generate_with_logprobs
from specdec.adapters.hf_oracle import HFSettingsOracle
from specdec.conformance.reported_logprobs import compare_logprobs, control_tolerance
from specdec.sampling_settings import SamplingSettings

SETTINGS = SamplingSettings(temperature=0.8, top_k=5)
PROMPTS = [[1, 2, 3, 1, 2, 3, 1, 2], [4, 5, 4, 5, 4, 5], [6, 1, 6, 1], [2, 2, 2, 2, 2]]
LENGTH = 12
CONTROL_BOUND = 1e-4  # the control itself: float32 logits, the oracle's batch shapes (HFSettingsOracle's floor regime)


def test_transformers_reports_the_law_it_samples_with_and_without_prompt_lookup():
    target = tiny_pair(0, vocab_size=8)[0]
    oracle = HFSettingsOracle(target, SETTINGS)
    control_decoder = HFGenerateDecoder(target, settings=SETTINGS)
    answers, reported = generate_with_logprobs(control_decoder, PROMPTS, LENGTH, seed=3)
    assert answers == control_decoder(PROMPTS, LENGTH, 3)  # the helper emits what the decoder emits
    control = compare_logprobs(oracle, PROMPTS, answers, reported, claims="sampled")
    assert control.tokens == sum(map(len, answers)) > 0
    assert control.max_deviation <= CONTROL_BOUND, control
    tolerance = control_tolerance(control)
    lookup = HFPromptLookupDecoder(target, settings=SETTINGS, num_draft_tokens=4, max_ngram_size=2)
    answers, reported = generate_with_logprobs(lookup, PROMPTS, LENGTH, seed=3)
    report = compare_logprobs(oracle, PROMPTS, answers, reported, claims="sampled", tolerance=tolerance)
    assert report.verdict == "PASS", (report, tolerance)
    # a report of the raw law (temperature 1, no top-k) is caught: the warpers move it far beyond the tolerance
    raw = compare_logprobs(HFSettingsOracle(target, SamplingSettings()), PROMPTS, answers, reported, claims="raw",
                           tolerance=tolerance)
    assert raw.verdict == "FAIL" and raw.max_deviation > 100 * tolerance
    print(f"control max {control.max_deviation:.3g} mean {control.mean_deviation:.3g} n={control.tokens}; "
          f"tolerance {tolerance:.3g}; lookup max {report.max_deviation:.3g} n={report.tokens}")
