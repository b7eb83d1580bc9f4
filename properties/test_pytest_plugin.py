"""The pytest plugin as a third party meets it: throwaway projects run by pytester.

The nested runs' statistical checks are charged to this run's error budget: each nested run gets
the family-wise alpha its checks were allotted here, so the union bound still covers the whole run.
"""

import importlib.metadata

import pytest

NESTED_CHECKS = 10  # capacity of each nested run that is meant to pass

CORRECT = """
import torch
import specdec as sd
from specdec.conformance.catalogue import chain_cases, token_cases
from specdec.conformance.pytest_items import conformance_suite


def my_verifier(draft_tokens, draft_probs, target_probs, generator):
    # a third party's verifier: the reference with its validation switched off
    return sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator, validate=False)


test_my_verifier = conformance_suite(my_verifier, cases=[*token_cases()[:2], chain_cases()[0]])


def test_seed_and_fixtures(specdec_report, specdec_tiny_pair, specdec_target_law, specdec_strategies):
    assert specdec_report.seed == 7 and specdec_report.tv == 0.1
    assert specdec_target_law.vocab_size == 8 and hasattr(specdec_strategies, "verifier_inputs")
"""

PLANTED_BUG = """
import torch
from specdec import VerifyResult
from specdec.conformance.catalogue import token_cases
from specdec.conformance.pytest_items import conformance_suite


def always_accept(draft_tokens, draft_probs, target_probs, generator):
    # B1: every draft accepted, the bonus drawn from row K
    batch, k = draft_tokens.shape
    bonus = torch.multinomial(target_probs[:, k].double(), 1, generator=generator)
    return VerifyResult(num_accepted=torch.full((batch,), k), tokens=torch.cat([draft_tokens.long(), bonus], 1))


test_always_accept = conformance_suite(always_accept, cases=token_cases()[1:2])
"""


def _plugin_args() -> list[str]:
    """``-p`` the plugin only where specdec is not installed (its pytest11 entry point loads it otherwise)."""
    installed = any(ep.value == "_specdec_pytestplugin" for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "_specdec_pytestplugin"]


def _run(pytester, *args):
    # a subprocess: in-process runs re-import torch's operator libraries, which torch refuses
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *_plugin_args(), *args)


def test_options_markers_and_their_checks_are_registered(pytester):
    result = _run(pytester, "--help")
    for option in ("--specdec-seed", "--specdec-tv", "--specdec-budget", "--specdec-alpha", "--specdec-max-checks", "--specdec-device"):
        result.stdout.fnmatch_lines([f"*{option}*"])
    markers = _run(pytester, "--markers")
    markers.stdout.fnmatch_lines(["*slow:*", "*gpu: needs CUDA*", "*specdec: a statistical check*"])
    bad = _run(pytester, "--specdec-tv", "2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--specdec-tv must be in (0, 1), got 2.0*"])


def test_a_correct_verifier_passes_with_one_item_per_case_under_the_runs_budget(pytester, specdec_budget):
    entry = specdec_budget.allot(NESTED_CHECKS, "pytester: a correct verifier's project")
    pytester.makepyfile(test_mine=CORRECT)
    result = _run(pytester, "-v", "--specdec-seed", "7", "--specdec-tv", "0.1", "--specdec-alpha", repr(entry.alpha),
                  "--specdec-max-checks", str(NESTED_CHECKS))
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "*test_my_verifier?spec_section3?*PASSED*",
        "*test_my_verifier?peaked_v16?*PASSED*",
        "*test_my_verifier?chain V=4 K=2 L=3?*PASSED*",
        "*specdec: every statistical check of this run*",
        f"*over at most {NESTED_CHECKS} checks*; 5 checks allotted to 3 reports and tests*",
    ])
    marked = _run(pytester, "-m", "not specdec", "--specdec-tv", "0.1")
    marked.assert_outcomes(deselected=4)


def test_a_planted_bug_fails_with_the_statistic_p_n_and_the_case(pytester):
    pytester.makepyfile(test_theirs=PLANTED_BUG)
    result = _run(pytester, "--specdec-tv", "0.1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*FAIL: peaked_v16: first token vs target (F4): * statistic=*, df=*, n=*, p=*, detectable TV 0.1000 at power 0.99*",
        "*over-represented: token*",
    ])


def test_the_items_share_one_budget_and_a_run_that_asks_for_more_fails_loudly(pytester):
    pytester.makepyfile(test_mine=CORRECT)
    result = _run(pytester, "--specdec-seed", "7", "--specdec-tv", "0.1", "--specdec-max-checks", "3")
    result.assert_outcomes(passed=3, failed=1)  # 2 + 2 > 3: the second case is refused; the chain (1 check) still fits
    result.stdout.fnmatch_lines(["*BudgetExhausted: the error budget holds 3 checks and 2 are taken*"])


def test_specdec_cases_expands_the_catalogue(pytester):
    pytester.makepyfile(test_cases="""
from specdec.conformance.pytest_items import suite_cases

def test_case(specdec_cases):
    assert specdec_cases.name in {c.name for c in suite_cases('verifier')}

def test_md_case(specdec_multidraft_cases):
    assert specdec_multidraft_cases.num_drafts >= 2
""")
    from specdec.conformance.pytest_items import suite_cases

    result = _run(pytester)
    result.assert_outcomes(passed=len(suite_cases("verifier")) + len(suite_cases("multidraft")))
