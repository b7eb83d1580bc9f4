"""pytest plugin (entry point ``pytest11``): markers, GPU skipping, planned statistical checks.

Registered markers: ``slow`` (large-n tests, deselected by this project's default
run; ``pytest -m slow`` runs them) and ``gpu`` (skipped cleanly without CUDA).
Fixture ``stat_checks``: a session-wide :class:`specdec.testing.StatChecks`
whose checks share one family-wise alpha; the plan of every check (n, alpha,
detectable TV) is printed at the end of the run.  torch is imported lazily.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("specdec", "specdec statistical checks")
    group.addoption(
        "--specdec-alpha",
        type=float,
        default=1e-6,
        help="family-wise false-alarm rate of all statistical checks of one run. Default: %(default)r",
    )
    group.addoption(
        "--specdec-max-checks",
        type=int,
        default=200,
        help="most statistical checks one run may make; each gets alpha / max-checks. Default: %(default)r",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: large-n statistical tests, run with `pytest -m slow`")
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


_CHECKS_KEY = pytest.StashKey()


@pytest.fixture(scope="session")
def stat_checks(pytestconfig):
    from specdec.testing import StatChecks

    checks = StatChecks(
        family_alpha=pytestconfig.getoption("specdec_alpha"),
        max_checks=pytestconfig.getoption("specdec_max_checks"),
    )
    pytestconfig.stash[_CHECKS_KEY] = checks
    return checks


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    checks = config.stash.get(_CHECKS_KEY, None)
    if checks is None or not checks.records:
        return
    terminalreporter.section("specdec statistical checks (planned before sampling)")
    terminalreporter.write_line(
        f"family-wise alpha {checks.family_alpha:g} over at most {checks.max_checks} checks "
        f"(alpha per check {checks.alpha_per_check:.1e}); {len(checks.records)} checks ran"
    )
    for line in checks.summary_lines():
        terminalreporter.write_line(line)
