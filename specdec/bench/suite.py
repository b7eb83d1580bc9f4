"""The pytest module that ``specdec bench run`` runs: one benchmark per case of the plan.

The plan arrives as JSON in ``--specdec-bench-plan`` (:class:`specdec.bench.run_plan.BenchPlan`); each
case (prompt set, K, batch) is one test, measured by the ``specdec_bench`` fixture, so the run is
stored by pytest-benchmark like perf/'s and read by ``specdec bench gate`` and ``plot``.

A subject that raises is the run's ERROR, as in ``specdec check``: the case fails with one line naming
the call and the exception's last line (no traceback), the line is kept in :data:`ERRORS` for the CLI
to print, and the CLI stops the run there (``-x``).
"""

from __future__ import annotations

import pytest

ERRORS: list[str] = []  # one line per case whose subject raised, in this process (the CLI reads and clears it)


def _plan(config):
    from specdec.bench.run_plan import BenchPlan

    text = config.getoption("specdec_bench_plan")
    return None if text is None else BenchPlan.from_json(text)


def pytest_generate_tests(metafunc):
    if "bench_case" in metafunc.fixturenames:
        plan = _plan(metafunc.config)
        cases = [] if plan is None else plan.cases()
        metafunc.parametrize("bench_case", cases, ids=[c.id for c in cases])


def test_subject(specdec_bench, bench_case, pytestconfig):
    plan = _plan(pytestconfig)
    if plan is None:
        pytest.skip("no --specdec-bench-plan: specdec bench run writes one")
    try:
        row = specdec_bench.measure_case(plan, bench_case)
    except Exception as error:  # noqa: BLE001 - the subject's exception is the subject's: one line, the ERROR verdict
        from specdec.conformance.calls import last_line

        line = f"ERROR: the subject raised during case {bench_case.id} of {plan.subject}: {last_line(error)}"
        ERRORS.append(line)
        pytest.fail(line, pytrace=False)
    if not row["speedup"]["median"] > 0:
        pytest.fail(f"{bench_case.id}: a speedup of {row['speedup']['median']} (the rounds' ratios: {row['ratios']})")
