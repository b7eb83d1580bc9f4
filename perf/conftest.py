"""perf/ session: options, the shared workbench, machine info for pytest-benchmark, and the one table.

Options (``make bench`` uses the defaults):

--bench-new-tokens N   tokens generated per prompt (default 24)
--bench-rounds R       interleaved rounds per test (default 3: median, min, max)
--bench-prompts P      prompts per task kind (default 1 of 11)
--bench-grid G         "default" (about 12 minutes on a 2-core CPU) or "full" (every configuration)
--bench-device D       cpu (default) or cuda (there the static-cache regime runs a K sweep on every kind)
--bench-threads T      torch threads on CPU (default: every CPU this process may use)

With ``--benchmark-disable`` (the test suite's default) every benchmark runs once on a tiny
workload (4 tokens, 1 round), so the suite keeps the code paths alive without timing them, and each
configuration on one task kind (the kinds in turn over the grid, so every kind's prompts still run),
its costs calibrated in 2 rounds (9 when timed): the whole configuration x kind grid is ``make bench``'s.
At the end the table of every row measured is printed and written, with the rows as JSON,
to ``.benchmarks/latest/`` (``specdec bench plot`` reads it): both files name the run (commit and
start time, :func:`specdec.bench.latest.run_stamp`) and are replaced atomically.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from perf.harness import (CALIBRATION_ROUNDS, CUDA_STATIC_GRID, FULL_PEER_GRID, KINDS, PEER_GRID, STATIC_GRID, STATIC_KINDS,
                          Plan, Workbench, default_grid, full_grid)
from specdec.workload.prompts import PROMPTS

ROWS_KEY = pytest.StashKey[list]()
PEERS_KEY = pytest.StashKey[dict]()
STAMP_KEY = pytest.StashKey[dict]()
LATEST = Path(".benchmarks") / "latest"
PROMPTS_PER_KIND = min(len(prompts) for prompts in PROMPTS.values())  # --bench-prompts' upper bound


def pytest_addoption(parser):
    group = parser.getgroup("specdec-bench", "specdec benchmarks (perf/)")
    group.addoption("--bench-new-tokens", type=int, default=24, help="tokens generated per prompt (default 24)")
    group.addoption("--bench-rounds", type=int, default=3, help="interleaved rounds per benchmark (default 3)")
    group.addoption("--bench-prompts", type=int, default=1, help=f"prompts per task kind, 1..{PROMPTS_PER_KIND} (default 1)")
    group.addoption("--bench-grid", choices=("default", "full"), default="default", help="configurations to run")
    group.addoption("--bench-device", default="cpu", help="torch device for the end-to-end benchmarks (default cpu)")
    group.addoption("--bench-threads", type=int, default=None, help="torch threads on CPU (default: all allowed CPUs)")


def pytest_configure(config):
    from specdec.bench.latest import run_stamp

    config.stash[ROWS_KEY] = []
    config.stash[PEERS_KEY] = {}
    config.stash[STAMP_KEY] = run_stamp()  # the commit and this session's start, in every file of latest/
    for name, low in (("bench_new_tokens", 2), ("bench_rounds", 1), ("bench_prompts", 1)):
        value = config.getoption(name)
        if value < low or (name == "bench_prompts" and value > PROMPTS_PER_KIND):
            bound = f"in [1, {PROMPTS_PER_KIND}]" if name == "bench_prompts" else f">= {low}"
            raise pytest.UsageError(f"--{name.replace('_', '-')} must be {bound}, got {value}")


def _benchmarks_disabled(config) -> bool:
    """pytest-benchmark's own rule (its BenchmarkSession): --benchmark-disable unless --benchmark-enable."""
    return bool(config.getoption("benchmark_disable") and not config.getoption("benchmark_enable"))


def _parametrize_grid(metafunc, name: str, grid, kinds) -> None:
    """``name`` x kind over the grid; with benchmarks disabled (the test suite) one kind per configuration, in turn."""
    if _benchmarks_disabled(metafunc.config):
        pairs = [(config, kinds[index % len(kinds)]) for index, config in enumerate(grid)]
    else:
        pairs = [(config, kind) for config in grid for kind in kinds]
    metafunc.parametrize((name, "kind"), pairs, ids=[f"{config.name}-{kind}" for config, kind in pairs])


def pytest_generate_tests(metafunc):
    if "static_config" in metafunc.fixturenames:  # the static-cache regime: a K sweep over every kind on CUDA
        cuda = torch.device(metafunc.config.getoption("bench_device")).type == "cuda"
        grid, kinds = (CUDA_STATIC_GRID, KINDS) if cuda else (STATIC_GRID, STATIC_KINDS)
        _parametrize_grid(metafunc, "static_config", grid, kinds)
    elif "config" in metafunc.fixturenames:
        full = metafunc.config.getoption("bench_grid") == "full"
        if "peer" in metafunc.function.__name__:
            grid = FULL_PEER_GRID if full else PEER_GRID
        else:
            grid = full_grid() if full else default_grid()
        if "kind" in metafunc.fixturenames:
            _parametrize_grid(metafunc, "config", grid, KINDS)
        else:
            metafunc.parametrize("config", grid, ids=[c.name for c in grid])


def pytest_benchmark_update_machine_info(config, machine_info):
    from specdec.bench.environment import machine_info as ours

    machine_info.update(ours())


@pytest.fixture(scope="session")
def bench_device(request) -> torch.device:
    device = torch.device(request.config.getoption("bench_device"))
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("--bench-device cuda: CUDA is not available")
    return device


@pytest.fixture(scope="session")
def workbench(request, bench_device) -> Workbench:
    opt = request.config.getoption
    rounds = 2 if _benchmarks_disabled(request.config) else CALIBRATION_ROUNDS  # the suite times nothing
    return Workbench(bench_device, opt("bench_threads"), max_new_tokens=opt("bench_new_tokens"), calibration_rounds=rounds)


@pytest.fixture
def plan(request, benchmark, bench_device) -> Plan:
    """The workload: the options', or a tiny one when benchmarks are disabled (the suite keeps paths alive)."""
    opt = request.config.getoption
    if benchmark.disabled:
        return Plan(new_tokens=4, rounds=1, prompts=1, device=bench_device)
    return Plan(opt("bench_new_tokens"), opt("bench_rounds"), opt("bench_prompts"), bench_device)


@pytest.fixture
def record_row(request):
    """Adds a row (dict) to the session's table, and replaces .benchmarks/latest/rows.json (atomically) so a
    run cut short keeps the rows it measured."""
    from specdec.bench.latest import write_rows

    rows = request.config.stash[ROWS_KEY]

    def record(row: dict) -> None:
        rows.append(row)
        write_rows(LATEST, rows, request.config.stash[STAMP_KEY])

    return record


@pytest.fixture
def record_peer(request):
    """Stores a peer's speedup (and both sides' tokens per second) for (configuration, kind)."""
    peers = request.config.stash[PEERS_KEY]

    def record(configuration: str, kind: str, speedup: dict, tokens_per_second: dict | None = None) -> None:
        peers[(configuration, kind)] = (speedup, tokens_per_second)

    return record


def pytest_terminal_summary(terminalreporter, config):
    rows = config.stash.get(ROWS_KEY, [])
    if not rows:
        return
    from specdec.bench.latest import write_rows, write_table
    from specdec.bench.tables import choosing_k, entropy_table, format_choosing_k, format_peer_rates, format_table, position_table

    peers = config.stash.get(PEERS_KEY, {})
    for row in rows:
        row["peer_speedup"], row["peer_tokens_per_second"] = peers.get((row["configuration"], row["kind"]), (None, None))
    terminalreporter.section("speculative vs autoregressive decoding (perf/, one run)")
    terminalreporter.write_line(format_table(rows))
    terminalreporter.write_line(
        "speedup: autoregressive / speculative seconds per round, median [min-max]; predicted: F23 with the measured "
        "draft cost and verify term, end to end (docs/reference.md §6): the prefill share of the autoregressive time "
        "counted on both sides, [its interval over the calibration rounds]; prefill: that share; efficiency = measured / predicted; peer: transformers' speculative generate over its "
        "own generate; acceptance: pooled (docs/reference.md §6); k-bar: tokens per step; K*: F24 from the measured alpha and costs; "
        "TTFT, ITL p90: speculative side; dM: speculative minus autoregressive peak memory."
    )
    rates = format_peer_rates(rows)
    if rates:
        terminalreporter.section("tokens per second: ours and the peer, each side (medians over rounds)")
        terminalreporter.write_line(rates)
    entries = choosing_k(rows)
    if entries:
        terminalreporter.section("choosing K: the sweep's best fixed K (named when it clears its rounds' noise), F24's K*, the adaptive K")
        terminalreporter.write_line(format_choosing_k(entries))
    for title, text in (("acceptance by draft position: measured / F22's alpha^i", position_table(rows)),
                        ("speedup by the answers' entropy (low / mixed / high: specdec.workload.entropy)", entropy_table(rows))):
        if text:
            terminalreporter.section(title)
            terminalreporter.write_line(text)
    stamp = config.stash[STAMP_KEY]
    write_rows(LATEST, rows, stamp)
    write_table(LATEST, rows, stamp)
    terminalreporter.write_line(f"rows: {LATEST / 'rows.json'}, table: {LATEST / 'table.md'} (commit {stamp['commit']}, "
                                f"started {stamp['started']})")
