"""specdec's pytest plugin (entry point ``pytest11``): markers, GPU skipping, one error budget per run.

Imports only pytest when pytest loads it; torch and specdec are imported by the
fixtures, when a test asks for them.

* Markers: ``slow`` (large-n tests; this project's default run deselects them,
  ``pytest -m slow`` runs them) and ``gpu`` (skipped cleanly without CUDA).
* Options (group ``specdec``): ``--specdec-alpha`` (family-wise false-alarm rate of
  the whole run) and ``--specdec-max-checks`` (the budget's capacity M: each check
  gets alpha / M).
* Fixture ``specdec_budget``: the session's :class:`specdec.conformance.ErrorBudget`.
  Pass it as ``budget=`` to ``check_verifier`` / ``check_multidraft`` /
  ``check_decoder`` / ``check_law``; every check it allots is listed at the end of
  the run, with n, alpha, detectable TV, p-value and result.
"""

from __future__ import annotations

import pytest

_BUDGET = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("specdec", "specdec: statistical checks of speculative decoders")
    group.addoption(
        "--specdec-alpha",
        type=float,
        default=1e-6,
        help="family-wise false-alarm rate of every statistical check of the run together. Default: %(default)r",
    )
    group.addoption(
        "--specdec-max-checks",
        type=int,
        default=1000,
        help="capacity of the run's error budget: each check gets alpha / max-checks. Default: %(default)r",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: large-n statistical tests and long benchmarks; run with `pytest -m slow`")
    config.addinivalue_line("markers", "gpu: needs CUDA; skipped when torch.cuda.is_available() is False")


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def specdec_budget(pytestconfig):
    """The run's error budget (family-wise ``--specdec-alpha`` over ``--specdec-max-checks`` checks)."""
    from specdec.conformance import ErrorBudget

    budget = ErrorBudget(pytestconfig.getoption("specdec_alpha"), pytestconfig.getoption("specdec_max_checks"))
    pytestconfig.stash[_BUDGET] = budget
    return budget


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    budget = config.stash.get(_BUDGET, None)
    if budget is None or not budget.entries:
        return
    terminalreporter.section("specdec: every statistical check of this run (planned before sampling)")
    for line in budget.summary_lines():
        terminalreporter.write_line(line)
