"""specdec's pytest plugin (entry point ``pytest11``): markers, GPU skipping, one error budget per run.

Imports only pytest when pytest loads it; torch and specdec are imported by the
fixtures, when a test asks for them.

* Markers: ``slow`` (large-n tests; this project's default run deselects them,
  ``pytest -m slow`` runs them), ``gpu`` (skipped cleanly without CUDA) and ``peers`` (tests that
  run a real peer package; this project runs them with ``make peers``).
* Marker ``specdec``: added to every test that uses ``specdec_report`` or
  ``specdec_budget`` (``-m "not specdec"`` deselects the statistical checks).
* Options (group ``specdec``): ``--specdec-alpha`` (family-wise false-alarm rate of
  the whole run), ``--specdec-max-checks`` (the budget's capacity M: each check
  gets alpha / M), ``--specdec-seed``, ``--specdec-tv`` (the TV each check must
  detect at power 0.99), ``--specdec-budget`` (seconds per report instead) and
  ``--specdec-device``; the last four are what ``specdec_report`` uses.
* Fixtures:

  - ``specdec_budget``: the session's :class:`specdec.conformance.ErrorBudget`; pass it
    as ``budget=`` to ``check_verifier`` / ``check_multidraft`` / ``check_decoder`` /
    ``check_law``.  Every check it allots is listed at the end of the run, with n,
    alpha, detectable TV, p-value and result.
  - ``specdec_report``: a :class:`specdec.conformance.pytest_items.SpecdecRunner` with
    the run's options and budget: ``specdec_report.verifier(fn)``,
    ``.multidraft(fn)``, ``.decoder(dec, target, prompts)`` return the report and
    fail the test on FAIL or INCONCLUSIVE with the report's table.
  - ``specdec_cases`` / ``specdec_multidraft_cases``: parametrised over the versioned
    catalogue (token and chain cases; multi-draft cases), one item per case.
  - ``specdec_tiny_pair``: a seeded tiny Llama (target, draft) pair, V = 8;
    ``specdec_target_law``: the target's exact next-token law (a TargetLaw).
  - ``specdec_strategies``: the public Hypothesis strategies (``specdec.strategies``).
  - ``specdec_bench``: benchmarks any speculative decoder against its autoregressive twin
    (:class:`specdec.bench.pytest_bench.SubjectBench`): ``specdec_bench.measure(subject, prompts,
    kind=...)`` under pytest-benchmark's ``benchmark`` fixture; the rows of the run are printed at
    the end and written to ``--specdec-bench-latest`` (``rows.json``, ``table.md``).  Options
    ``--specdec-bench-plan`` (JSON, written by ``specdec bench run``) and ``--specdec-bench-latest``.

  ``specdec.conformance.pytest_items.conformance_suite(subject, kind)`` expands the whole
  campaign into parametrised items in a user's own test module.
"""

from __future__ import annotations

import pytest

_BUDGET = pytest.StashKey()
_BENCH = pytest.StashKey()


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
    group.addoption("--specdec-seed", type=int, default=0, help="campaign seed of specdec_report's checks. Default: %(default)r")
    group.addoption(
        "--specdec-tv",
        type=float,
        default=0.01,
        help="TV deviation each of specdec_report's checks must detect with power 0.99. Default: %(default)r",
    )
    group.addoption(
        "--specdec-budget",
        type=float,
        default=None,
        help="seconds of sampling per specdec_report check, instead of planning n for --specdec-tv",
    )
    group.addoption("--specdec-device", default=None, help="device of specdec_report's checks (default: cuda when available)")
    group.addoption("--specdec-bench-plan", default=None, help="JSON plan of specdec bench run (specdec.bench.run_plan.BenchPlan)")
    group.addoption("--specdec-bench-latest", default=".benchmarks/latest",
                    help="folder for the specdec_bench rows of the run (rows.json, table.md). Default: %(default)r")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: large-n statistical tests and long benchmarks; run with `pytest -m slow`")
    config.addinivalue_line("markers", "gpu: needs CUDA; skipped when torch.cuda.is_available() is False")
    config.addinivalue_line("markers", "peers: runs a real peer package (vLLM); `make peers` runs them in .venv-peers")
    config.addinivalue_line("markers", "specdec: a statistical check under the run's error budget (uses specdec_report or specdec_budget)")
    for name in ("specdec_alpha", "specdec_tv"):
        value = config.getoption(name)
        if not 0 < value < 1:
            raise pytest.UsageError(f"--{name.replace('_', '-')} must be in (0, 1), got {value}")
    for name in ("specdec_max_checks", "specdec_budget"):
        value = config.getoption(name)
        if value is not None and not value > 0:
            raise pytest.UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")


def pytest_generate_tests(metafunc):
    """``specdec_cases`` and ``specdec_multidraft_cases``: one item per case of the catalogue."""
    for fixture, kind in (("specdec_cases", "verifier"), ("specdec_multidraft_cases", "multidraft")):
        if fixture in metafunc.fixturenames:
            from specdec.conformance.pytest_items import suite_cases

            cases = suite_cases(kind)
            metafunc.parametrize(fixture, cases, ids=[c.name for c in cases])


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"specdec_report", "specdec_budget"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.specdec)
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


@pytest.fixture
def specdec_report(specdec_budget, pytestconfig):
    """Runs checks under the run's options and error budget; a FAIL fails the test with the report."""
    from specdec.conformance.pytest_items import SpecdecRunner

    get = pytestconfig.getoption
    return SpecdecRunner(specdec_budget, seed=get("specdec_seed"), tv=get("specdec_tv"),
                         time_budget=get("specdec_budget"), device=get("specdec_device"))


@pytest.fixture(scope="session")
def specdec_tiny_pair():
    """A seeded tiny Llama (target, draft) pair, V = 8 (real transformers code, exact laws by enumeration)."""
    from specdec.decoding.models import TinyPairConfig, tiny_llama_pair

    return tiny_llama_pair(1, TinyPairConfig(vocab_size=8))


@pytest.fixture(scope="session")
def specdec_target_law(specdec_tiny_pair):
    """The tiny target's exact next-token law (a :class:`specdec.protocols.TargetLaw`, no warping)."""
    from specdec.laws.target import as_target_law

    return as_target_law(specdec_tiny_pair[0])


@pytest.fixture(scope="session")
def specdec_strategies():
    """The public Hypothesis strategies: ``specdec.strategies``."""
    import specdec.strategies

    return specdec.strategies


@pytest.fixture(scope="session")
def _specdec_bench_session(pytestconfig):
    from specdec.bench.latest import run_stamp
    from specdec.bench.pytest_bench import BenchSession

    session = BenchSession(stamp=run_stamp())
    pytestconfig.stash[_BENCH] = session
    yield session
    session.close()


@pytest.fixture
def specdec_bench(request, benchmark, _specdec_bench_session):
    """Benchmarks a speculative decoder against its twin under pytest-benchmark's ``benchmark`` (needs
    pytest-benchmark; asking for ``benchmark`` by name keeps the test under ``--benchmark-only``)."""
    from specdec.bench.pytest_bench import SubjectBench

    from pathlib import Path

    from specdec.bench.latest import write_rows

    session, config = _specdec_bench_session, request.config

    def record(row: dict) -> None:  # rows.json replaced after every row: a run cut short keeps what it measured
        session.rows.append(row)
        write_rows(Path(config.getoption("specdec_bench_latest")), session.rows, session.stamp)

    return SubjectBench(benchmark, session, record)


def _bench_summary(terminalreporter, config) -> None:
    session = config.stash.get(_BENCH, None)
    if session is None or not session.rows:
        return
    from pathlib import Path

    from specdec.bench.latest import write_rows, write_table
    from specdec.bench.tables import subject_report

    terminalreporter.section("specdec bench: speculative vs its autoregressive twin (one run)")
    terminalreporter.write_line(subject_report(session.rows))
    folder, stamp = Path(config.getoption("specdec_bench_latest")), session.stamp
    write_rows(folder, session.rows, stamp)
    write_table(folder, session.rows, stamp)
    terminalreporter.write_line(f"rows: {folder / 'rows.json'}, table: {folder / 'table.md'} (commit {stamp['commit']})")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    _bench_summary(terminalreporter, config)
    budget = config.stash.get(_BUDGET, None)
    if budget is None or not budget.entries:
        return
    terminalreporter.section("specdec: every statistical check of this run (planned before sampling)")
    for line in budget.summary_lines():
        terminalreporter.write_line(line)
