"""``specdec bench run`` on llama.cpp's ``llama-speculative`` example (``specdec.adapters.llama_cpp.speculative_subjects:draft_model``, issue 39).

Runs in ``.venv-llama`` (``make peers-llama_speculative``: slow, as every llama-speculative test; skipped, saying so,
where the binary has not been built).  One subprocess, as a user runs it: K = 2 against the same binary with
``--spec-draft-n-max 0`` (the twin), the qa kind, one round of 4 tokens, greedy.  What it shows: the run exits 0 and
stores the case; both sides emitted exactly the tokens asked (the bench refuses a pair that does not); the speculative
side's counters (the example's ``n_drafted`` / ``n_accept``) give the row a draft utilisation and an acceptance length
within their ranges.  34 s here (2026-11-27, 2 busy cores; every answer is one process: 3 a side).
"""

import pytest

from fixtures.bench_cli import assert_one_case, rows, run_bench
from specdec.adapters.llama_cpp.speculative_example import DEFAULT_BINARY

pytestmark = [pytest.mark.peers, pytest.mark.slow,
              pytest.mark.skipif(not DEFAULT_BINARY.exists(), reason=f"{DEFAULT_BINARY} not built (make llama-speculative)")]

SUBJECT = "specdec.adapters.llama_cpp.speculative_subjects:draft_model"
K = 2


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama-speculative-bench")
    return folder, run_bench(folder, SUBJECT, ["--k", str(K), "--kinds", "qa", "--rounds", "1", "--new-tokens", "4"])


def test_the_run_exits_0_and_stores_the_case(bench_run):
    folder, done = bench_run
    assert_one_case(folder, done, f"test_subject[qa-K{K}-B1]")


def test_the_row_holds_the_examples_counters(bench_run):
    folder, done = bench_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = rows(folder)
    assert row["subject"] == "llama-speculative draft model (= target)" and row["kind"] == "qa", row
    assert row["new_tokens"] == 4 and row["speedup"]["median"] > 0, row
    counts = row["speculation"]
    assert counts["draft_tokens"] >= counts["accepted_tokens"] >= 0 and counts["drafts"] >= 1, counts
    assert 0 <= row["draft_utilisation"] <= 1 and 1 <= row["acceptance_length"] <= K + 1, row
