"""check_decoder (issue 4) on tiny Llama pairs: the reference decoder passes; decoder-level bug
classes (B2, B3, B4 of PEERS.md) fail, each with the position where the deviation sits (F36)."""

import numpy as np
import pytest

from fixtures.models import tiny_pair
from fixtures.mutants import decoder_mutant_first_token_laws, decoder_mutants
from specdec.conformance import check_decoder
from specdec.drafts import ModelDraft
from specdec.generate import SpeculativeDecoder
from specdec.sequence_law import sequence_law
from specdec.warpers import SamplingConfig

WARPED = SamplingConfig(temperature=0.8, top_k=5)
PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]
EOS = 7


def _pair():
    return tiny_pair(1, 8)


def test_reference_decoder_passes():
    target, draft = _pair()
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED, eos_token_id=EOS)
    report = check_decoder(decoder, target, PROMPTS, length=3, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=3, name="reference")
    assert report.passed and report.verdict == "lossless", report.format()
    sequences = [c for c in report.checks if c.level == "sequences"]
    assert len(sequences) == 2 and all(c.location for c in sequences)
    acceptance = next(c for c in report.checks if c.name.startswith("acceptance vs exact expectation"))
    assert acceptance.n > 100 and abs(acceptance.details["tokens_per_step"] - acceptance.details["expected_tokens_per_step"]) < 0.1


def test_unwarped_target_has_exact_tv_and_is_caught():
    target, draft = _pair()
    warped = sequence_law(target, PROMPTS[0], 3, sampling=WARPED, eos_token_id=EOS)
    plain = sequence_law(target, PROMPTS[0], 3, eos_token_id=EOS)
    probs = dict(zip(plain.sequences, plain.probs))
    warped_probs = dict(zip(warped.sequences, warped.probs))
    tv = 0.5 * sum(abs(probs.get(s, 0) - warped_probs.get(s, 0)) for s in set(probs) | set(warped_probs))
    assert tv > 0.05, tv  # exact, by enumeration
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS)["unwarped_target (B4)"]
    report = check_decoder(mutant, target, PROMPTS, length=3, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=4, name="B4")
    assert not report.passed, report.format()
    assert any("support" in c.method for c in report.checks), "outputs outside the warped support must fail at once"


@pytest.mark.parametrize("name", ["raw_q_topk_draft (B3)", "greedy_draft_softmax_q (B2)"])
def test_draft_law_mismatch_is_caught_and_localised(name):
    target, draft = _pair()
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS)[name]
    report = check_decoder(mutant, target, PROMPTS, length=3, sampling=WARPED, eos_token_id=EOS, tv=0.05, seed=5, name=name)
    assert not report.passed, report.format()
    failing = [c for c in report.checks if not c.passed]
    assert all("most significant position" in c.location for c in failing)
    assert np.isfinite([c.pvalue for c in failing]).all()


@pytest.mark.parametrize("name, min_tv", [("unwarped_target (B4)", 0.005), ("raw_q_topk_draft (B3)", 0.015), ("greedy_draft_softmax_q (B2)", 0.25)])
def test_decoder_mutant_first_token_follows_its_exact_law(stat_checks, name, min_tv):
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
    n = stat_checks.plan(num_cells=int((law > 0).sum()), tv=0.02)
    first = [out[0] for out in mutant([prompt] * n, 2, 11)]  # two tokens: the first step drafts one
    stat_checks.assert_follows(first, law, label=f"{name}: first token follows its exact law (TV {tv:.4f} from target)")
