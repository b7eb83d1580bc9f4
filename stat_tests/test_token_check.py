"""check_tokens (issue 29): every token a decoder emits against a law oracle's law of it (docs/reference.md §10).

* specdec's speculative loop on the tiny Llama pair PASSes at a per-token TV of 0.03 against the target's exact
  law, with drafts verified and the drafted positions tested apart;
* the decoder mutants B2-B4 FAIL, early, saying where (B4 with its tokens of probability 0 and their prefixes);
* a deviation confined to one position of 32 is caught by that position's group, where pooling every token
  would dilute it; one uniform shared by a verification block (B7) is caught by the consecutive pairs (P7);
* the floor (P2): a law a TV of about 0.02 from the stated one FAILs against an oracle that claims exactness,
  and PASSes against one that states 0.03 as its floor (per-token TV); every report states the floor;
* an oracle that raises or answers what its Protocol does not allow is an ERROR naming the law oracle, never a
  FAIL of the subject; bad arguments are named.
"""

import math

import numpy as np
import pytest

from fixtures.fake_server import target_law
from fixtures.law_samplers import LawSampler, favour_top, swap_top_two
from fixtures.models import tiny_pair
from fixtures.mutants import decoder_mutants
from specdec.conformance import check_tokens
from specdec.decoding import ModelDraft, SpeculativeDecoder
from specdec.laws import TargetLawOracle, TokenLaw
from specdec.warpers import SamplingConfig

WARPED = SamplingConfig(temperature=0.8, top_k=5)
EOS = 7
PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]
MARKOV_PROMPTS = [[0], [3]]


def _tiny():
    target, draft = tiny_pair(1, 8)
    return target, draft, TargetLawOracle(target, WARPED)


def test_the_speculative_loop_passes_at_a_per_token_tv_of_three_hundredths(specdec_budget):
    target, draft, oracle = _tiny()
    loop = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED, eos_token_id=EOS)
    report = check_tokens(loop, oracle, PROMPTS, length=8, eos_token_id=EOS, tv=0.03, seed=1, budget=specdec_budget,
                          name="tiny loop K=2, per token")
    assert report.verdict == "PASS" and report.reached_tv <= 0.03, report.format()
    assert report.speculation["drafts"] > 0 and 0 < report.speculation["accepted_tokens"] < report.speculation["draft_tokens"]
    drafted = next(c for c in report.checks if c.name.startswith("drafted positions"))
    undrafted = next(c for c in report.checks if c.name.startswith("positions without a draft"))
    assert drafted.n > 0 and undrafted.n > 0 and drafted.n + undrafted.n == report.checks[0].n
    assert "floor: a TV of 0 per token" in report.format()
    assert report.summary().endswith("covered: per-token laws and consecutive pairs (P7)"), report.summary()


def test_a_decoder_that_states_it_never_drafts_has_no_drafted_stratum(specdec_budget):
    """An engine's control (``num_draft_tokens == 0``) may mark its tokens (all undrafted): a drafted stratum would
    hold no token, and at a fixed n a check with no token makes the report INCONCLUSIVE, so it is not tested."""
    target, _, oracle = _tiny()
    loop = SpeculativeDecoder(target, None, num_draft_tokens=0, sampling=WARPED, eos_token_id=EOS)
    assert hasattr(loop, "last_drafted") and loop.num_draft_tokens == 0
    report = check_tokens(loop, oracle, PROMPTS, length=4, eos_token_id=EOS, n=64, tv=None, seed=2, budget=specdec_budget,
                          name="tiny loop K=0 (the control), per token")
    assert report.verdict == "PASS", report.format()
    assert not any(c.name.startswith(("drafted positions", "positions without a draft")) for c in report.checks)


def test_one_uniform_shared_by_a_block_fails_by_its_consecutive_pairs():
    """B7's non-unique uniforms (issue 40, item 15): the second draft of a block is kept more often after the first
    was kept, so a token's law depends on how the previous one came out, in both directions - the pooled law hardly
    moves (it PASSed check_tokens at TV 0.01 after 23,388 answers), the pairs (P7) FAIL it."""
    from fixtures import subjects

    # a mutant: no false alarm to budget for, the user's default alpha; 1,024 rows a call: 21 s where 256 took 36
    # (FAILs after 11,814 answers, pairs p 2.7e-11, pooled 1.7e-5)
    report = check_tokens(subjects.shared_uniform_decoder, TargetLawOracle(subjects.tiny_target()), [[1, 2, 3], [4, 5]],
                          tv=0.01, seed=0, family_alpha=1e-6, rows_per_call=1024, name="one uniform per block (B7), per token")
    pairs = report.checks[-1]
    assert report.verdict == "FAIL" and not pairs.passed and pairs.kind == "per-token pairs", report.format()
    assert pairs.pvalue < 1e-3 * report.checks[0].pvalue, (pairs.pvalue, report.checks[0].pvalue)  # the pooled law hardly moves
    assert "(P7)" in pairs.name and "detects a TV of" in pairs.location and "after a token of rank" in pairs.location


@pytest.mark.parametrize("name", ["unwarped_target (B4)", "raw_q_topk_draft (B3)", "greedy_draft_softmax_q (B2)"])
def test_decoder_mutants_fail_early_saying_where(name):
    target, draft, oracle = _tiny()
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS)[name]
    report = check_tokens(mutant, oracle, PROMPTS, length=8, eos_token_id=EOS, tv=0.03, seed=2, name=name)
    assert report.verdict == "FAIL", report.format()
    assert report.stopped_early is not None and report.samples < report.planned_samples, report.summary()
    location = report.checks[0].location
    assert "most significant: " in location and "over-represented: rank" in location, location
    if name.startswith("unwarped"):  # the raw target emits tokens top-k forbids
        assert "token(s) of probability 0 in the reference's law: prompt " in location and "prefix [" in location
        assert report.checks[0].method.startswith("support")
    if name.startswith("greedy"):  # the argmax draft: where drafts were verified (K=2: positions 1-2 always are)
        most = location.split("most significant: ", 1)[1]
        assert most.startswith(("drafted positions", "position 1 ", "position 2 ")), location


def test_a_deviation_at_one_position_is_caught_by_its_position_group():
    law = target_law()
    subject = LawSampler(law, swap_top_two({20}))
    report = check_tokens(subject, TargetLawOracle(law), MARKOV_PROMPTS, length=32, n=1500, tv=None, seed=3, early_stop=False)
    pooled = report.checks[0]
    group = next(c for c in report.checks if c.name.startswith("positions 17-32"))
    assert report.verdict == "FAIL" and not group.passed, report.format()
    assert group.pvalue < 1e-6 * pooled.pvalue, (group.pvalue, pooled.pvalue)  # pooled over 32 positions, diluted
    assert "most significant: positions 17-32" in pooled.location


def test_a_law_within_the_floor_passes_and_beyond_an_exact_claim_fails():
    law = target_law()
    rho, floor = 0.1, 0.03
    tilted = LawSampler(law, favour_top(rho))
    per_token = [0.5 * np.abs(favour_top(rho)(row, 0) - row).sum() for row in tilted.table]
    assert max(per_token) < floor < 1.5 * max(per_token)  # the floor covers the tilt, barely
    exact = check_tokens(tilted, TargetLawOracle(law), MARKOV_PROMPTS, length=8, n=4000, tv=None, seed=4, family_alpha=1e-6)
    assert exact.verdict == "FAIL", exact.format()
    floored = check_tokens(tilted, TargetLawOracle(law, floor=floor), MARKOV_PROMPTS, length=8, n=4000, tv=None, seed=4,
                           family_alpha=1e-6)
    assert floored.verdict != "FAIL", floored.format()
    assert floored.checks[0].details["floor"] == floor and f"a TV of {floor:g} per token" in floored.format()
    assert floored.checks[0].detectable_tv == pytest.approx(exact.checks[0].detectable_tv + floor, abs=0.01)


class _Oracle(TargetLawOracle):
    def __init__(self, answer):
        super().__init__(target_law())
        self.answer = answer

    def token_laws(self, prompts, continuations):
        return self.answer(super().token_laws(prompts, continuations))


def _raises(laws):
    raise ConnectionError("the oracle server went away")


@pytest.mark.parametrize("answer, says", [
    (_raises, "went away"),
    (lambda laws: laws[:-1], "answers for"),
    (lambda laws: [a[:-1] for a in laws], "laws for answer 0"),
    (lambda laws: [[TokenLaw(np.full(6, math.nan))] * len(a) for a in laws], "not finite"),
    (lambda laws: [[TokenLaw(law.probs * 0.9) for law in a] for a in laws], "sums to 0.9"),
    (lambda laws: [[law.probs for law in a] for a in laws], "TokenLaws"),
])
def test_a_broken_oracle_is_an_error_naming_it_never_a_fail(answer, says):
    report = check_tokens(LawSampler(target_law()), _Oracle(answer), MARKOV_PROMPTS, length=4, n=50, tv=None, seed=5)
    assert report.verdict == "ERROR", report.format()
    assert report.error["party"] == "law oracle" and says in report.error["message"], report.error
    assert report.error["call"].startswith("token_laws of ") and "the law oracle " in report.format()


def test_bad_arguments_are_named():
    sampler = LawSampler(target_law())
    with pytest.raises(TypeError, match="oracle must be a specdec.protocols.LawOracle"):
        check_tokens(sampler, target_law(), MARKOV_PROMPTS, n=1)
    with pytest.raises(TypeError, match="subject must be callable"):
        check_tokens("server", TargetLawOracle(target_law()), MARKOV_PROMPTS, n=1)
    with pytest.raises(ValueError, match="length"):
        check_tokens(sampler, TargetLawOracle(target_law()), MARKOV_PROMPTS, length=0, n=1)
    with pytest.raises(ValueError, match="rows_per_call"):
        check_tokens(sampler, TargetLawOracle(target_law()), MARKOV_PROMPTS, rows_per_call=0, n=1)
    with pytest.raises(ValueError, match="floor"):
        TargetLawOracle(target_law(), floor=-0.1)


def test_the_plugin_fixture_runs_the_per_token_check(specdec_report):
    law = target_law()
    report = specdec_report.tokens(LawSampler(law), TargetLawOracle(law), MARKOV_PROMPTS, length=4, n=300, tv=0.2,
                                   name="plugin: exact sampler, per token")
    assert report.level == "per-token (law oracle)" and report.verdict == "PASS" and report.reached_tv <= 0.2
