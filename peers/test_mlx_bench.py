"""``specdec bench run`` on mlx-lm 0.32.2 with the draft model (``specdec.adapters.mlx.bench_mlx:draft_model``, issue 39).

Runs with ``.venv-mlx``'s Python; slow (``-m "peers and slow"``).  One subprocess, as a user runs it: K = 4 against the
same engine without a draft model (the twin), the retrieval kind, one round of 16 tokens, greedy, batch 1.  What it
shows: the run exits 0 and stores the case, and the row holds mlx-lm's counters (steps with drafts, drafted and kept).
"""

import pytest

from fixtures.bench_cli import assert_one_case, rows, run_bench

pytestmark = [pytest.mark.peers, pytest.mark.slow]

SUBJECT = "specdec.adapters.mlx.bench_mlx:draft_model"
K = 4
KIND = "retrieval"


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlx-bench")
    return folder, run_bench(folder, SUBJECT, ["--k", str(K), "--kinds", KIND, "--rounds", "1", "--new-tokens", "16"], timeout=900)


def test_the_run_exits_0_and_stores_the_case(bench_run):
    folder, done = bench_run
    assert_one_case(folder, done, f"test_subject[{KIND}-K{K}-B1]")


def test_the_row_holds_the_engines_counters(bench_run):
    folder, done = bench_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = rows(folder)
    assert row["subject"] == "mlx-lm draft model (= target)" and row["kind"] == KIND and row["new_tokens"] == 16, row
    assert row["speedup"]["median"] > 0, row
    counts = row["speculation"]
    assert counts["draft_tokens"] >= counts["accepted_tokens"] > 0 and counts["drafts"] >= 1, counts
