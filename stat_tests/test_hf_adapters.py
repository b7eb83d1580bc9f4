"""Hugging Face transformers' speculative decoding through the adapters: its verifier against the
exact one-step law (F4) and the engine's catalogue, its assisted / prompt-lookup generation against
the exact sequence law (slow: transformers decodes one row per call)."""

from __future__ import annotations

import pytest
import torch

from fixtures.models import plain_greedy, tiny_pair
from fixtures.samplers import sample_one_step
from specdec.adapters.hf import TESTED_TRANSFORMERS, HFAssistedDecoder, HFPromptLookupDecoder, hf_speculative_sampling
from specdec.conformance import catalogue, check_decoder, check_law, check_verifier
from specdec.warpers import SamplingConfig

TARGET, DRAFT = catalogue.pair("spec_section3")


def test_pinned_transformers_version_is_the_one_installed():
    import transformers

    assert transformers.__version__ == TESTED_TRANSFORMERS, (
        f"adapters are vouched for transformers {TESTED_TRANSFORMERS}; installed {transformers.__version__}"
    )


@pytest.mark.parametrize("draft_probs, draft_token", [(DRAFT, None), (None, 2)], ids=["sampled", "point_mass"])
def test_hf_verifier_first_token_follows_target(specdec_budget, draft_probs, draft_token):
    n = specdec_budget.sample_size(TARGET, 0.07)  # transformers' verifier, one row at a time: 0.05 took 10-25 s a case
    _, first, accepted = sample_one_step(TARGET, draft_probs, n, torch.Generator().manual_seed(7), draft_token=draft_token, verifier=hf_speculative_sampling)
    check = check_law(first, TARGET, name=f"transformers _speculative_sampling, {'E5' if draft_token else 'q'} draft", budget=specdec_budget)
    assert check.passed, check.describe()
    assert 0 < accepted.float().mean() < 1


def test_hf_verifier_passes_the_spec_case_of_the_catalogue(specdec_budget):
    case = catalogue.token_cases()[0]
    report = check_verifier(hf_speculative_sampling, cases=[case], chains=[], tv=0.05, seed=4, chunk_size=1024, budget=specdec_budget,
                            device="cpu", name="transformers _speculative_sampling")
    assert report.verdict == "PASS", report.format()


def test_hf_verifier_is_deterministic_given_the_generator_and_restores_global_rng():
    draft_tokens = torch.tensor([[0, 2], [1, 1]])
    draft_probs = DRAFT.expand(2, 2, 3).contiguous()
    target_probs = TARGET.expand(2, 3, 3).contiguous()
    state = torch.random.get_rng_state()
    first = hf_speculative_sampling(draft_tokens, draft_probs, target_probs, torch.Generator().manual_seed(3))
    assert torch.equal(torch.random.get_rng_state(), state), "the adapter left the global RNG changed"
    again = hf_speculative_sampling(draft_tokens, draft_probs, target_probs, torch.Generator().manual_seed(3))
    assert torch.equal(first.tokens, again.tokens)
    with pytest.raises(ValueError, match="K >= 1"):
        hf_speculative_sampling(draft_tokens[:, :0], draft_probs[:, :0], target_probs[:, :1], torch.Generator())


def test_hf_assisted_greedy_equals_plain_greedy():
    target, draft = tiny_pair(0, 8)
    prompts = [[1, 2, 3], [5, 1, 5, 1]]
    expected = [plain_greedy(target, p, 7) for p in prompts]
    assisted = HFAssistedDecoder(target, SamplingConfig(temperature=0), assistant=draft, num_draft_tokens=3)
    lookup = HFPromptLookupDecoder(target, SamplingConfig(temperature=0), num_draft_tokens=3)
    assert assisted(prompts, 7, 0) == expected
    assert lookup(prompts, 7, 0) == expected


@pytest.mark.slow
def test_hf_verifier_passes_the_whole_default_campaign(specdec_budget):
    report = check_verifier(hf_speculative_sampling, tv=0.05, seed=6, chunk_size=1024, budget=specdec_budget, device="cpu", name="transformers")
    assert report.verdict == "PASS", report.format()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["assisted", "prompt_lookup"])
def test_hf_generation_follows_the_target_law(specdec_budget, kind):
    target, draft = tiny_pair(1, 8)
    decoder = (
        HFAssistedDecoder(target, eos_token_id=7, assistant=draft, num_draft_tokens=2)
        if kind == "assisted"
        else HFPromptLookupDecoder(target, eos_token_id=7, num_draft_tokens=2)
    )
    report = check_decoder(decoder, target, [[4, 5, 4, 5, 4]], length=2, tv=0.05, seed=5, eos_token_id=7, budget=specdec_budget,
                           name=f"transformers {kind}")
    assert report.verdict == "PASS", report.format()
