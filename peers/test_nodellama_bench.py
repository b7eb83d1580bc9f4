"""``specdec bench run`` on node-llama-cpp 3.21.1 with input lookup (``specdec.adapters.nodellama.bench_nodellama:lookup``, issue 39).

Runs with ``.venv-llama``'s Python; slow (``-m "peers and slow"``).  One subprocess, as a user runs it: K = 4 against the
same engine without a predictor (the twin), the retrieval kind (its answer copies from its passage: lookup finds
matches), one round of 24 tokens, greedy, one sequence (batch 1).  What it shows: the run exits 0 and stores the case,
and the row holds node-llama-cpp's counters (steps with drafts, drafted and kept predictions).
"""

import pytest

from fixtures.bench_cli import assert_one_case, rows, run_bench

pytestmark = [pytest.mark.peers, pytest.mark.slow]

SUBJECT = "specdec.adapters.nodellama.bench_nodellama:lookup"
K = 4
KIND = "retrieval"


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nodellama-bench")
    return folder, run_bench(folder, SUBJECT, ["--k", str(K), "--kinds", KIND, "--rounds", "1", "--new-tokens", "24"], timeout=600)


def test_the_run_exits_0_and_stores_the_case(bench_run):
    folder, done = bench_run
    assert_one_case(folder, done, f"test_subject[{KIND}-K{K}-B1]")


def test_the_row_holds_the_engines_counters(bench_run):
    folder, done = bench_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = rows(folder)
    assert row["subject"] == "node-llama-cpp input lookup" and row["kind"] == KIND and row["new_tokens"] == 24, row
    assert row["speedup"]["median"] > 0, row
    counts = row["speculation"]
    assert counts["draft_tokens"] >= counts["accepted_tokens"] >= 0 and counts["drafts"] >= 1, counts
    # 3.21.1 keeps at most one prediction per step (scripts/findings/nodellama_one_draft_per_step.py)
    assert counts["accepted_tokens"] <= counts["drafts"], counts
