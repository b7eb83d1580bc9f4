"""``specdec bench run specdec.adapters.vllm.server_subjects:ngram``: vLLM 0.32's OpenAI server (CPU build) as a
benchmark subject, n-gram speculation against the same server without it (issue 22).

One ``specdec bench run`` process (module fixture) measures two cases with the servers it starts
once (the twin and K = 4): the retrieval prompt at batch 1 and a mix of 8 prompts at batch 4 (4
requests in flight per call), one round of 8 new tokens each.  It must exit 0 (so both sides generated
exactly 8 tokens per prompt: greedy, EOS ignored), store a pytest-benchmark run with both benchmarks,
and write rows whose draft utilisation and acceptance length come from the server's own counters
(vLLM counts drafts, drafted and accepted tokens, not each step's K: no §6 acceptance rate).  The rows are printed (``-s``).
The factories stop their servers at the end of the session; the test checks that none is left.

Measured on 2 busy shared cores (load ~10): the two servers ready after ~2 minutes (booting together),
the whole file 3 minutes: ``make peers-slow`` runs it (a benchmark, not a conformance check; CI's time goes to the checks).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = "specdec.adapters.vllm.server_subjects:ngram"
ARGS = ["--k", "4", "--kinds", "retrieval", "--batch", "4", "--mix-prompts", "8", "--rounds", "1", "--new-tokens", "8"]


def _servers() -> list[str]:
    """Command lines of vLLM servers on SmolLM2 started by specdec.adapters.vllm.server_subjects (its served name)."""
    listing = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if "vllm.entrypoints.openai.api_server" in line and "--served-model-name smollm2 " in line
            and "--no-enable-prefix-caching" in line]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm-bench")
    before = set(_servers())
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "specdec", "bench", "run", SUBJECT, *ARGS, "--storage", str(folder / "store"),
                           "--latest", str(folder / "latest")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    print(done.stdout[-4000:])
    return folder, done, before


def test_the_run_exits_0_and_stores_both_cases(bench):
    folder, done, _ = bench
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    runs = sorted((folder / "store").rglob("*.json"))
    assert len(runs) == 1, runs
    names = sorted(b["name"] for b in json.loads(runs[0].read_text())["benchmarks"])
    assert names == ["test_subject[mix-K4-B4]", "test_subject[retrieval-K4-B1]"], names


def test_the_rows_carry_the_servers_acceptance(bench):
    folder, done, _ = bench
    assert done.returncode == 0, done.stderr[-4000:]
    rows = {r["kind"]: r for r in json.loads((folder / "latest" / "rows.json").read_text())}
    for kind, batch in (("retrieval", 1), ("mix", 4)):
        row = rows[kind]
        print(f"{kind}: speedup {row['speedup']['median']:.2f}, draft utilisation {row['draft_utilisation']}, acceptance length "
              f"{row['tokens_per_step']}, tokens/s {row['tokens_per_second']['speculative']['median']:.1f} vs "
              f"{row['tokens_per_second']['autoregressive']['median']:.1f}")
        assert row["subject"] == "vllm-ngram" and row["batch"] == batch and row["new_tokens"] == 8
        # vLLM counts drafts, drafted and accepted tokens (no per-step K): utilisation and acceptance length, not §6's rate
        assert row["acceptance_source"] == "counters" and row["speculation"]["drafts"] > 0, row["speculation"]
        assert 0 <= row["draft_utilisation"] <= 1 and 1 <= row["tokens_per_step"] <= 5, row["speculation"]
        assert row["cost_model"] == "ideal"  # a server's passes cannot be timed from outside
    assert rows["retrieval"]["draft_utilisation"] > 0  # retrieval repeats its passage: prompt lookup drafts and is accepted


def test_no_server_is_left_running(bench):
    _, _, before = bench
    assert set(_servers()) <= before
