"""``specdec bench run`` on llama.cpp's prompt lookup (``specdec.adapters.llama_cpp.lookup_subjects:prompt_lookup``, issue 22).

Runs in ``.venv-llama`` (``make peers``; the bench's prompts need transformers' tokenizer there).  One
subprocess, as a user runs it: K = 4 against the same engine without a draft, on the retrieval and qa kinds,
one round of 8 tokens.  What it shows: the run exits 0 and stores one benchmark per case; the speculative
side's counters give the row an acceptance; the engine's own ``step_costs`` (one ``eval`` of K + 1 tokens and
one lookup, timed) make the prediction ``cost_model: "measured"`` and finite.  About a minute on an idle
2-core machine (the costs' calibration, a warm-up and one paired round per case).
"""

import math

import pytest

from fixtures.bench_cli import rows, run_bench, stored_names

SUBJECT = "specdec.adapters.llama_cpp.lookup_subjects:prompt_lookup"


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama-bench")
    return folder, run_bench(folder, SUBJECT, ["--k", "4", "--kinds", "retrieval", "qa", "--rounds", "1", "--new-tokens", "8"])


def test_the_run_exits_0_and_stores_one_benchmark_per_case(bench_run):
    folder, done = bench_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 benchmarks x 1 rounds" in done.stdout  # the plan is stated before it runs
    assert stored_names(folder) == ["test_subject[qa-K4-B1]", "test_subject[retrieval-K4-B1]"]


def test_the_rows_hold_acceptance_and_a_prediction_from_measured_costs(bench_run):
    folder, done = bench_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    made = rows(folder)
    assert {r["configuration"] for r in made} == {"llama.cpp-lookup-K4"} and {r["kind"] for r in made} == {"retrieval", "qa"}
    assert all(r["cost_model"] == "measured" and r["subject"] == "llama.cpp-lookup" for r in made)
    drafted = [r for r in made if r["acceptance"] is not None]
    assert drafted, made  # the retrieval prompt repeats its text: prompt lookup drafts there
    for row in drafted:
        assert 0 <= row["acceptance"] <= 1 and math.isfinite(row["predicted"]) and row["predicted"] > 0, row
        assert row["draft_step_ratio"] >= 0 and row["verify_cost_ratio"] > 0, row
        assert row["speculation"]["draft_tokens"] >= row["speculation"]["accepted_tokens"], row
