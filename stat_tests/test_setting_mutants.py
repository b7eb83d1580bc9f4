"""A planted bug per setting family FAILs through a real engine's speculative decoder (issue 38): ``fixtures.setting_mutants``.

transformers' assisted generation (the tiny Llama pair of ``fixtures.models``, K = 4) with one of its own processors
changed the way engines get settings wrong under speculation - a repetition penalty that reads the step's drafts, a
logit bias applied at the bonus row only, a minimum length counted in verification steps - FAILs the per-token check
against :class:`specdec.adapters.hf_oracle.HFSettingsOracle` under the correct record; its twin (the same decoder
under the same record, unchanged) PASSes at the same plan (TV 0.15, answers of 8 tokens, the mutants at family-wise
alpha 1e-6, fixed seeds).  The hooks alone change nothing: a mutant whose record lacks the setting it changes returns
the decoder's own tokens.  Through prompt lookup the bias and the length FAIL and their twins PASS; the penalty is
the twin itself (the drafts are copies of the history, and transformers' penalty counts presence).  Slow:
``check_ab`` against ``generate`` without speculation on the same mutants (the "per token needs fewer answers than
A/B" numbers).
"""

from __future__ import annotations

import time

import pytest
import torch

import specdec as sd
from fixtures.models import tiny_pair
from fixtures.setting_mutants import BUGS, PlantedAssisted, PlantedLookup
from specdec.adapters.hf import HFAssistedDecoder, HFGenerateDecoder, HFPromptLookupDecoder
from specdec.adapters.hf_oracle import HFSettingsOracle
from specdec.sampling_settings import SamplingSettings

PROMPTS = [[7], [0, 0]]  # short prompts: few tokens penalised before the answer, so the drafts' tokens count
LOOKUP_PROMPT = [5, 7, 7, 5, 7, 5, 5, 7, 5, 7, 7, 7, 5, 5, 7, 5, 7, 5]  # the matrix's cat/dog pattern: lookup drafts
LENGTH, TV, ROWS = 8, 0.15, 64  # tokens per answer; the planned TV; answers per call (chunks of 32 per prompt)
RECORDS = {  # the record each bug gets wrong; the twin and the oracle take it as it is
    "penalty reads the drafts": SamplingSettings(temperature=1.0, repetition_penalty=1.3),
    "bias at the bonus row only": SamplingSettings(temperature=1.0, logit_bias={6: 3.0}),
    "minimum length counted in steps": SamplingSettings(temperature=1.0, stop_token_ids=[7], min_new_tokens=3),
}
LOOKUP_RECORDS = {  # prompt lookup crops its drafts at a stop token: the answer's own most frequent token (4) stops it
    "minimum length counted in steps": SamplingSettings(temperature=1.0, stop_token_ids=[4], min_new_tokens=3),
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # fixtures.plugin


def _assisted(bug=None, settings=None):
    target, draft = tiny_pair(0, vocab_size=8)
    settings = settings or RECORDS[bug]
    if bug is None:
        return HFAssistedDecoder(target, settings=settings, assistant=draft, num_draft_tokens=4)
    return PlantedAssisted(target, settings=settings, assistant=draft, num_draft_tokens=4, bug=bug)


def _check_tokens(subject, settings, prompts=PROMPTS, **terms):
    oracle = HFSettingsOracle(tiny_pair(0, vocab_size=8)[0], settings)
    start = time.perf_counter()
    report = sd.check_tokens(subject, oracle, prompts, length=LENGTH, tv=TV, eos_token_id=list(settings.stop_token_ids) or None,
                             vocab_size=8, rows_per_call=ROWS, **terms)
    return report, time.perf_counter() - start


def _said(report, seconds) -> str:
    """The answers drawn, the smallest p-value and the time: the numbers the note quotes."""
    smallest = min(report.checks, key=lambda check: check.pvalue)
    return (f"{report.verdict} after {report.samples} answers ({report.samples // len(PROMPTS)} per prompt, planned "
            f"{report.planned_samples}), smallest p {smallest.pvalue:.3g} ({smallest.name}), {seconds:.1f} s")


@pytest.mark.parametrize("bug", BUGS)
def test_a_planted_bug_of_each_setting_family_fails_per_token(bug):
    subject = _assisted(bug)
    report, seconds = _check_tokens(subject, RECORDS[bug], seed=31, family_alpha=1e-6,
                                     name=f"assisted generation, planted: {bug}")
    print(f"{bug}: {_said(report, seconds)}")
    assert subject.planted > 0, f"{bug}: no processor of the record was changed"
    assert report.verdict == "FAIL", report.format()


@pytest.mark.parametrize("bug", BUGS)
def test_the_correct_twin_passes_at_the_same_plan(specdec_budget, bug):
    report, seconds = _check_tokens(_assisted(settings=RECORDS[bug]), RECORDS[bug], seed=31, budget=specdec_budget,
                                    name=f"assisted generation, {RECORDS[bug].label}")
    print(f"twin of {bug}: {_said(report, seconds)}")
    assert report.verdict == "PASS", report.format()
    assert report.asked_tv == TV


@pytest.mark.parametrize("bug", BUGS)
def test_the_hooks_alone_change_nothing(bug):
    """A mutant under a record without the setting its bug changes: the decoder's own tokens, seed for seed."""
    other = {"penalty reads the drafts": "bias at the bonus row only"}.get(bug, "penalty reads the drafts")
    settings = RECORDS[other]
    mutant = _assisted(bug, settings=settings)
    assert mutant([[7], [0, 0]] * 3, LENGTH, 5) == _assisted(settings=settings)([[7], [0, 0]] * 3, LENGTH, 5)
    assert mutant.planted == 0


def test_each_bug_changes_what_transformers_processor_is_handed_or_when_it_runs():
    """The three wrappers on one verification step: 2 prompt tokens, 1 accepted, 3 drafts (rows of 3..6 ids), the
    second step of the call (1 step finished)."""
    from fixtures.setting_mutants import Request, _BonusRowOnly, _CountsSteps, _ReadsTheBuffer

    handed = []
    record = lambda ids, scores: handed.append(ids.shape[-1]) or scores + 1  # noqa: E731
    ids, scores = torch.arange(6)[None], torch.zeros(1, 8)
    request = Request(prompt_length=2)
    request.begin_step(ids[:, :3], 1)
    request.drafted(ids)
    for row in range(4):
        _ReadsTheBuffer(record, request)(ids[:, : 3 + row], scores)
    assert handed == [6, 6, 6, 6]  # every row reads all the drafts; transformers hands 3, 4, 5, 6
    handed.clear()
    applied = [bool(_BonusRowOnly(record, request)(ids[:, : 3 + row], scores).sum()) for row in range(4)]
    assert applied == [False, False, False, True] and handed == [6]  # the bonus row only
    handed.clear()
    for row in range(4):
        _CountsSteps(record, request)(ids[:, : 3 + row], scores)
    assert handed == [3, 3, 3, 3]  # the prompt and one token per finished step, at every row


def test_an_unknown_bug_is_refused_by_name():
    with pytest.raises(ValueError, match="bug must be one of"):
        _assisted("bias everywhere", settings=RECORDS["bias at the bonus row only"])


def test_a_penalty_that_reads_lookup_drafts_is_exactly_the_twin():
    """transformers' repetition penalty counts presence, and prompt lookup's drafts are copies of the history
    (``PromptLookupCandidateGenerator.get_candidates``: ``input_ids[0, start_idx:end_idx]``): reading them adds no
    token, so through prompt lookup this mutant is its twin, seed for seed - no check can see it."""
    target, settings = tiny_pair(0, vocab_size=8)[0], RECORDS["penalty reads the drafts"]
    mutant = PlantedLookup(target, settings=settings, num_draft_tokens=4, max_ngram_size=3, bug="penalty reads the drafts")
    twin = HFPromptLookupDecoder(target, settings=settings, num_draft_tokens=4, max_ngram_size=3)
    prompts = [LOOKUP_PROMPT, [5, 7, 5, 7, 5]] * 4
    assert mutant(prompts, LENGTH, 6) == twin(prompts, LENGTH, 6)
    assert mutant.planted > 0


@pytest.mark.parametrize("bug", ["bias at the bonus row only", "minimum length counted in steps"])
def test_the_planted_bugs_fail_through_prompt_lookup_and_the_twins_pass(specdec_budget, bug):
    target, settings = tiny_pair(0, vocab_size=8)[0], LOOKUP_RECORDS.get(bug, RECORDS[bug])
    prompts = [LOOKUP_PROMPT, PROMPTS[1]]
    mutant = PlantedLookup(target, settings=settings, num_draft_tokens=4, max_ngram_size=3, bug=bug)
    report, seconds = _check_tokens(mutant, settings, prompts=prompts, seed=32, family_alpha=1e-6,
                                    name=f"prompt lookup, planted: {bug}")
    print(f"prompt lookup, {bug}: {_said(report, seconds)}")
    assert mutant.planted > 0 and report.verdict == "FAIL", report.format()
    twin = HFPromptLookupDecoder(target, settings=settings, num_draft_tokens=4, max_ngram_size=3)
    report, seconds = _check_tokens(twin, settings, prompts=prompts, seed=32, budget=specdec_budget,
                                    name=f"prompt lookup, {settings.label}")
    print(f"prompt lookup, twin of {bug}: {_said(report, seconds)}")
    assert report.verdict == "PASS", report.format()


@pytest.mark.slow
@pytest.mark.parametrize("bug", BUGS)
def test_check_ab_against_generate_needs_more_answers(bug):
    """``check_ab`` (the mutant against ``generate`` without speculation, the same answers of 8 tokens, the same plan):
    the answers it needs to FAIL, beside the per-token check's - or how far it got in at most 6,000 per side and prompt."""
    settings = RECORDS[bug]
    per_token, seconds = _check_tokens(_assisted(bug), settings, seed=31, family_alpha=1e-6)
    start = time.perf_counter()
    ab = sd.check_ab(_assisted(bug), HFGenerateDecoder(tiny_pair(0, vocab_size=8)[0], settings=settings), PROMPTS,
                     length=LENGTH, tv=TV, eos_token_id=list(settings.stop_token_ids) or None, vocab_size=8, seed=31,
                     rows_per_call=ROWS, family_alpha=1e-6, max_n=6000)
    ab_seconds = time.perf_counter() - start
    mutant_answers = ab.samples // 2  # check_ab's samples count both sides
    print(f"{bug}: per token {_said(per_token, seconds)}; check_ab {ab.verdict} after {mutant_answers} answers of the "
          f"mutant ({ab.samples} with the reference's), {ab_seconds:.1f} s: {ab.format().splitlines()[1][:300]}")
    assert per_token.verdict == "FAIL"
    assert ab.verdict != "FAIL" or mutant_answers > per_token.samples, ab.format()
