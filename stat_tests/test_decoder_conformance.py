"""check_decoder on tiny Llama pairs: the reference decoder passes (F35 and F28); decoder-level bug
classes (B2, B3, B4) fail, each located by position and prefix (F36)."""

import numpy as np
import pytest

from fixtures.models import tiny_pair
from fixtures.mutants import decoder_mutant_first_token_laws, decoder_mutants
from specdec.conformance import check_decoder, check_law
from specdec.decoding import ModelDraft, SpeculativeDecoder
from specdec.laws import FunctionLaw, sequence_law
from specdec.warpers import SamplingConfig

WARPED = SamplingConfig(temperature=0.8, top_k=5)
PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]
EOS = 7


def _pair():
    return tiny_pair(1, 8)


def test_reference_decoder_passes(specdec_budget):
    target, draft = _pair()
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED, eos_token_id=EOS)
    report = check_decoder(decoder, target, PROMPTS, length=3, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=3, name="reference",
                           budget=specdec_budget)
    assert report.verdict == "PASS", report.format()
    sequences = [c for c in report.checks if c.kind == "sequence"]
    assert len(sequences) == 2 and all(c.location for c in sequences)
    acceptance = next(c for c in report.checks if c.kind == "acceptance z")
    assert acceptance.n > 100 and abs(acceptance.details["tokens_per_step"] - acceptance.details["expected_tokens_per_step"]) < 0.1


def test_block_verification_decoder_passes_with_its_own_f28_law(specdec_budget):
    target, draft = _pair()
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED, eos_token_id=EOS, verifier="block")
    report = check_decoder(decoder, target, PROMPTS, length=2, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=4, name="block loop",
                           budget=specdec_budget)
    assert report.verdict == "PASS" and decoder.acceptance_rule == "block", report.format()


def test_a_target_law_need_not_be_a_model(specdec_budget):
    """check_decoder takes any TargetLaw: here the tiny model's warped law through a plain function."""
    target, draft = _pair()
    from specdec.laws import ModelLaw

    model_law = ModelLaw(target, WARPED)
    law = FunctionLaw(lambda context: model_law.next_token_probs([context])[0], vocab_size=8)
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED, eos_token_id=EOS)
    report = check_decoder(decoder, law, PROMPTS[:1], length=2, eos_token_id=EOS, tv=0.05, seed=6, name="function law",
                           budget=specdec_budget)
    assert report.verdict == "PASS", report.format()


def test_unwarped_target_has_exact_tv_and_is_caught():
    target, draft = _pair()
    warped = sequence_law(target, PROMPTS[0], 3, sampling=WARPED, eos_token_id=EOS)
    plain = sequence_law(target, PROMPTS[0], 3, eos_token_id=EOS)
    probs, warped_probs = dict(zip(plain.sequences, plain.probs)), dict(zip(warped.sequences, warped.probs))
    tv = 0.5 * sum(abs(probs.get(s, 0) - warped_probs.get(s, 0)) for s in set(probs) | set(warped_probs))
    assert tv > 0.05, tv  # exact, by enumeration
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS)["unwarped_target (B4)"]
    report = check_decoder(mutant, target, PROMPTS, length=3, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=4, name="B4")
    assert report.verdict == "FAIL", report.format()
    assert any(c.method.startswith("support") for c in report.checks), "outputs outside the warped support must fail at once"


@pytest.mark.parametrize("name", ["raw_q_topk_draft (B3)", "greedy_draft_softmax_q (B2)"])
def test_draft_law_mismatch_is_caught_and_located(name):
    target, draft = _pair()
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS)[name]
    report = check_decoder(mutant, target, PROMPTS, length=3, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=5, name=name)
    assert report.verdict == "FAIL", report.format()
    failing = [c for c in report.checks if not c.passed and c.kind == "sequence"]
    assert failing and all(c.location.startswith("position ") and "prefix [" in c.location for c in failing)
    assert all(c.details.get("over") or c.details.get("under") for c in failing)


@pytest.mark.parametrize("name, min_tv", [("unwarped_target (B4)", 0.005), ("raw_q_topk_draft (B3)", 0.015), ("greedy_draft_softmax_q (B2)", 0.25)])
def test_decoder_mutant_first_token_follows_its_exact_law(specdec_budget, name, min_tv):
    """The exact first-token law of each decoder mutant (so its TV from the target is known) is what it samples."""
    target, draft = _pair()
    prompt = PROMPTS[0]
    law = decoder_mutant_first_token_laws(target, draft, prompt, sampling=WARPED)[name]
    reference = sequence_law(target, prompt, 1, sampling=WARPED)
    target_law = np.zeros(law.numel())
    for sequence, p in zip(reference.sequences, reference.probs):
        target_law[sequence[0]] = p
    tv = 0.5 * float(np.abs(law.numpy() - target_law).sum())
    assert tv > min_tv, f"{name}: exact first-token TV {tv:.4f}"
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=None)[name]
    n = specdec_budget.sample_size(law, 0.02)
    first = [out[0] for out in mutant([prompt] * n, 2, 11)]  # two tokens: the first step drafts one
    check = check_law(first, law, name=f"{name}: first token follows its exact law (TV {tv:.4f} from target)", budget=specdec_budget)
    assert check.passed, check.describe()
