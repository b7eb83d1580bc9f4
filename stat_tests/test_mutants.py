"""The mutation suite: every mutant's exact law is what its sampler does, the engine catches each
one at its n* (power 0.99) in at least 15 of 20 seeds (expected 19.8), the default campaign catches
the positional mutants the old K = 1 catalogue could not see, and the controls pass.

Detection runs are *meant* to fail, so they run at the production level (a stand-alone report at
family-wise alpha 1e-6), not from the run's error budget; the exact-law checks and the controls,
which a correct implementation must pass, draw from the budget."""

import numpy as np
import pytest
import torch

from fixtures.mutants import CONTROLS, MUTANTS, exact_tv, sample_match
from scripts.detection import CHECKS_PER_REPORT, FAMILY_ALPHA, main_case, mutant_law, run_size
from specdec.conformance import TokenCase, catalogue, check_law, check_verifier
from specdec.conformance.streams.one_step import token_stream
from specdec.conformance.engine import ChunkKey
from specdec.stats import sample_size_for_alternative

MAIN = main_case()  # peaked_v16, K = 2, rows rolled per position
CASES = {"peaked_v16": MAIN, "spec_section3": TokenCase.from_pair("spec_section3", *catalogue.pair("spec_section3"))}
BATCH_COUPLED = {"shared_accept_length"}  # rows of one batch are dependent: no i.i.d. law to compare with
SLOW_ROWS = {"transformers_diverse_0.5"}  # transformers' verifier runs one row at a time
POSITIONAL = {"bonus_row_residual", "next_row_acceptance"}


def first_token_counts(verifier, case, n, seed):
    stream = token_stream(verifier, case, torch.device("cpu"))
    return stream.draw(n, ChunkKey(seed, 0, 0, torch.device("cpu")))[0].numpy()


@pytest.mark.parametrize("case_name", sorted(CASES))
@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.name not in BATCH_COUPLED], ids=lambda m: m.name)
def test_exact_law_is_what_the_mutant_samples(specdec_budget, mutant, case_name):
    case = CASES[case_name]
    law = mutant_law(mutant, case)
    assert abs(float(law.sum()) - 1) < 1e-12
    n = specdec_budget.sample_size(law, 0.1 if mutant.name in SLOW_ROWS else 0.02)
    counts = first_token_counts(mutant.verifier, case, n, seed=3)
    check = check_law(np.repeat(np.arange(case.vocab + 1), counts), law, name=f"mutant {mutant.name} on {case_name} follows its exact law",
                      budget=specdec_budget)
    assert check.passed, check.describe()


def test_shared_accept_length_couples_rows():
    mutant = next(m for m in MUTANTS if m.name == "shared_accept_length")
    for seed in range(5):
        g = torch.Generator().manual_seed(seed)
        drafts = torch.multinomial(MAIN.draft_rows, 64, replacement=True, generator=g).T.contiguous()
        result = mutant.verifier(drafts, MAIN.draft_rows.expand(64, 2, 16), MAIN.target_rows.expand(64, 3, 16), g)
        assert result.num_accepted.unique().numel() == 1


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_every_mutant_is_lossy(mutant):
    assert exact_tv(mutant, MAIN.target_rows, MAIN.draft_rows) > 1e-4


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.name != "bf16_draft_probs"], ids=lambda m: m.name)
def test_engine_catches_the_mutant_at_its_planned_budget(mutant):
    law = mutant_law(mutant, MAIN)
    n_star = sample_size_for_alternative(law, MAIN.first_token_law(), alpha=FAMILY_ALPHA / CHECKS_PER_REPORT)
    assert n_star <= 2_000_000
    caught = sum(
        check_verifier(mutant.verifier, cases=[MAIN], chains=[], n=run_size(n_star), seed=seed, name=mutant.name, device="cpu").verdict == "FAIL"
        for seed in range(20)
    )
    assert caught >= 15, f"{mutant.name}: caught in {caught}/20 seeds at n*={n_star} (power 0.99 expects ~19.8)"


@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_the_default_campaign_sees_positional_bugs(name):
    """Row confusion (the residual from the bonus row; the acceptance test reading the next row)
    changes nothing when K = 1 and the bonus row is the first row; with rows that differ per
    position the default campaign fails it, and says where."""
    mutant = next(m for m in MUTANTS if m.name == name)
    same_rows = TokenCase("same rows", MAIN.target_rows[:1].expand(2, -1), MAIN.draft_rows[:1])
    assert exact_tv(mutant, same_rows.target_rows, same_rows.draft_rows) < 1e-12  # invisible with K = 1 and equal rows
    report = check_verifier(mutant.verifier, tv=0.05, seed=1, device="cpu", name=name, early_stop=False)  # every check sampled
    assert report.verdict == "FAIL", report.format()
    chains = [c for c in report.checks if c.kind == "chain" and not c.passed]
    assert chains and all(c.location.startswith("position ") for c in chains), report.format()


def test_bf16_mutant_is_out_of_reach_of_a_cpu_default_run():
    law = mutant_law(next(m for m in MUTANTS if m.name == "bf16_draft_probs"), MAIN)
    n_star = sample_size_for_alternative(law, MAIN.first_token_law(), alpha=FAMILY_ALPHA / CHECKS_PER_REPORT)
    assert n_star > 2_000_000  # the README's detection frontier states what it takes


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_controls_pass(specdec_budget, name):
    if "transformers" in name:  # one row per call: the first case here, the whole campaign in a slow test
        report = check_verifier(CONTROLS[name], cases=[CASES["spec_section3"]], chains=[], tv=0.05, seed=4, chunk_size=1024,
                                budget=specdec_budget, device="cpu", name=name)
    else:
        report = check_verifier(CONTROLS[name], tv=0.05, seed=4, budget=specdec_budget, device="cpu", name=name)
    assert report.verdict == "PASS", report.format()


def test_sample_match_is_lossless_but_below_the_optimum(specdec_budget):
    report = check_verifier(sample_match, tv=0.02, seed=5, budget=specdec_budget, device="cpu", name="sample_match")
    assert report.summary().startswith("PASS, acceptance below the optimum"), report.format()
    acceptance = next(c for c in report.checks if c.name.startswith("spec_section3: acceptance"))
    assert abs(acceptance.details["acceptance"] - (0.5 * 0.2 + 0.3 * 0.3 + 0.2 * 0.5)) < 0.01  # sum p q = 0.29
    assert acceptance.details["optimum"] == pytest.approx(0.7)
