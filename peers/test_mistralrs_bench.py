"""``specdec bench run`` on mistral.rs 0.6.0 with a draft model (``specdec.adapters.mistralrs.bench_mistralrs:draft_model``, issue 39).

Runs in ``.venv-mistralrs``; slow (``-m "peers and slow"``, ``make peers-slow``): with its draft, 0.6.0 takes 14 s
or more per request on this 2-core machine, and longer with every request its Runner has served
(specdec/adapters/mistralrs/bench_mistralrs.py).  One subprocess, as a user runs it: K = 4 against the same engine
without a draft (the twin), the translation kind, one round of 24 tokens, greedy, one request at a time (batch 1):
the case of docs/bench.md's run.  What it shows: the run exits 0 and stores the case, and both sides emitted exactly
the tokens asked (the bench refuses a pair that does not: mistral.rs stops at EOS, and the prompt is sent as its text,
which 0.6.0 encodes itself).  Not the qa kind: there the speculative Runner panics
(scripts/findings/mistralrs_speculative_panic.py; at 4 tokens, K = 2 too).  90 s here (2026-11-27, 2 busy cores).
"""

import pytest

from fixtures.bench_cli import assert_one_case, rows, run_bench

pytestmark = [pytest.mark.peers, pytest.mark.slow]

SUBJECT = "specdec.adapters.mistralrs.bench_mistralrs:draft_model"
K = 4
KIND = "translation"  # its greedy answer ends at 26 tokens: 24 fit (mistral.rs 0.6.0 cannot ignore EOS)


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mistralrs-bench")
    done = run_bench(folder, SUBJECT, ["--k", str(K), "--kinds", KIND, "--rounds", "1", "--new-tokens", "24"], timeout=900)
    return folder, done


def test_the_run_exits_0_and_stores_the_case(bench_run):
    folder, done = bench_run
    assert_one_case(folder, done, f"test_subject[{KIND}-K{K}-B1]")


def test_the_row_is_the_draft_models_against_its_twin(bench_run):
    folder, done = bench_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = rows(folder)
    assert row["subject"] == "mistral.rs draft model (= target)" and row["configuration"].endswith(f"-K{K}"), row
    assert row["kind"] == KIND and row["new_tokens"] == 24 and row["speedup"]["median"] > 0, row
    assert row["speculation"] is None, row  # 0.6.0 reports no counters to Python
