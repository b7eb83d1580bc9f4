"""``specdec bench run`` and the ``specdec_bench`` fixture on a decoder defined in a temporary module (issue 22).

The toy engine is a clock, not a model: every target pass sleeps 2 ms, a drafted token costs
nothing, and the speculative side accepts ``ACCEPT`` of its K drafts every step (it counts them, as
an engine's statistics do).  Its speedup is therefore known in advance, within the timer's noise:
tokens per pass over one pass, against one token per pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specdec.bench.paired import PairedRounds
from specdec.bench.run_plan import BenchPlan
from specdec.bench.pairs import SubjectPair, resolve_subject

TOY = textwrap.dedent('''
    import time

    PASS_SECONDS = 0.002
    ACCEPT = 2  # drafts kept per step


    class Toy:
        def __init__(self, num_draft_tokens):
            self.num_draft_tokens = num_draft_tokens
            self.name = "toy"
            self.counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}

        def __call__(self, prompts, max_new_tokens, seed):
            out = [[(p[-1] + seed + i) % 50 for i in range(max_new_tokens)] for p in prompts]
            made = 0
            while made < max_new_tokens:
                time.sleep(PASS_SECONDS)  # one target pass for every row of the call
                if self.num_draft_tokens:
                    kept = min(ACCEPT, self.num_draft_tokens)
                    self.counts["drafts"] += len(prompts)
                    self.counts["draft_tokens"] += self.num_draft_tokens * len(prompts)
                    self.counts["accepted_tokens"] += kept * len(prompts)
                    made += kept + 1
                else:
                    made += 1
            return out

        def speculation_counts(self):
            return dict(self.counts) if self.num_draft_tokens else None


    def toy(num_draft_tokens):
        return Toy(num_draft_tokens)


    lone = Toy(4)
    answer = 42


    def broken(num_draft_tokens):
        def decoder(prompts, max_new_tokens, seed):
            raise RuntimeError("the engine fell over\\nCUDA error: device-side assert triggered")
        return decoder
''')

FIXTURE_TEST = textwrap.dedent('''
    from toy_engine import toy
    from specdec.bench.pairs import resolve_subject


    def test_toy(specdec_bench):
        subject = resolve_subject(toy, num_draft_tokens=4)
        row = specdec_bench.measure(subject, [[1, 2, 3], [4, 5]], kind="qa", new_tokens=12, rounds=2)
        assert row["draft_utilisation"] == 0.5 and row["subject"] == "toy"
''')


@pytest.fixture
def toy_module(tmp_path):
    (tmp_path / "toy_engine.py").write_text(TOY)
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("toy_engine", None)


def _env(folder: Path) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(Path.cwd()), env.get("PYTHONPATH", "")])
    return env


def _cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specdec", "bench", *args], cwd=folder, env={**_env(folder), **env},
                          capture_output=True, text=True, timeout=600)


def test_paired_rounds_read_the_counters_and_predict_with_ideal_costs(toy_module):
    import toy_engine

    subject = resolve_subject(toy_engine.toy, num_draft_tokens=4)
    paired = PairedRounds(subject, [[1, 2], [3], [4, 5, 6]], new_tokens=12)
    paired.run(2)
    paired.check_lengths()
    row = paired.row("toy-K4", "qa")
    assert row["acceptance"] is None and row["acceptance_source"] == "counters"  # §6's rate needs the steps
    assert row["draft_utilisation"] == 0.5  # 2 of 4 drafts kept every step
    assert row["tokens_per_step"] == 3.0 and row["mean_draft_tokens"] == 4.0
    assert row["predicted_decode"] == 3.0 and row["cost_model"] == "ideal"  # F23 with rho = 0, v = 1: the acceptance length
    assert 0 < row["prefill_share"] < 1  # the twin's one-token calls over its whole calls
    assert row["predicted"] == pytest.approx(1 / (row["prefill_share"] + (1 - row["prefill_share"]) / 3.0))  # end to end
    assert row["optimal_k"] is None  # no measured costs: no K*
    assert row["draft_utilisation_spread"]["n"] == 3 and row["draft_utilisation_spread"]["min"] == 0.5
    assert row["ttft_ms"] > 0 and row["baseline_ttft_ms"] > 0
    assert 1.5 < row["speedup"]["median"] < 4.5, row["ratios"]  # 12 passes against 4, within the timer's noise


def test_subject_forms_and_refusals(toy_module):
    import toy_engine

    a, b = toy_engine.toy(4), toy_engine.toy(0)
    pair = resolve_subject(a, twin=b)
    assert pair.speculative is a and pair.autoregressive is b and pair.num_draft_tokens == 4
    assert resolve_subject(SubjectPair("p", a, b, 4)).speculative is a
    cache: dict = {}
    two, four = (resolve_subject(toy_engine.toy, num_draft_tokens=k, cache=cache) for k in (2, 4))
    assert two.autoregressive is four.autoregressive  # the K = 0 twin is built once
    with pytest.raises(ValueError, match="without a twin"):
        resolve_subject(a)
    with pytest.raises(ValueError, match="give num_draft_tokens"):
        resolve_subject(toy_engine.toy)
    with pytest.raises(ValueError, match="num_draft_tokens must be >= 1"):
        resolve_subject(toy_engine.toy, num_draft_tokens=0)
    with pytest.raises(ValueError, match="new_tokens"):
        PairedRounds(pair, [[1]], new_tokens=1)
    with pytest.raises(ValueError, match="lengths must be among"):
        BenchPlan("m:a", lengths=[100])
    with pytest.raises(ValueError, match="kinds must be among"):
        BenchPlan("m:a", kinds=["poetry"])
    with pytest.raises(ValueError, match="unknown fields"):
        BenchPlan.from_json('{"subject": "m:a", "colour": 1}')


def test_a_pair_that_does_not_generate_new_tokens_is_refused(toy_module):
    import toy_engine

    class Short(toy_engine.Toy):
        def __call__(self, prompts, max_new_tokens, seed):
            return [row[:-1] for row in super().__call__(prompts, max_new_tokens, seed)]

    paired = PairedRounds(SubjectPair("short", Short(4), toy_engine.toy(0)), [[1, 2]], new_tokens=6)
    paired.run(1)
    with pytest.raises(AssertionError, match="speculative side generated \\[5\\] tokens"):
        paired.check_lengths()


def test_bench_run_on_a_temporary_module_stores_a_run_that_gate_and_plot_read(toy_module):
    args = ["run", "toy_engine:toy", "--k", "2", "4", "--kinds", "qa", "retrieval", "--batch", "1", "4", "--mix-prompts", "8",
            "--new-tokens", "8", "--rounds", "3", "--storage", "store", "--latest", "latest"]
    first = _cli(toy_module, *args)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "8 benchmarks x 3 rounds" in first.stdout  # the plan is stated before it runs
    assert "best K per batch" in first.stdout and "acceptance per prompt" in first.stdout
    runs = sorted((toy_module / "store").rglob("*.json"))
    assert len(runs) == 1
    stored = json.loads(runs[0].read_text())
    names = sorted(b["name"] for b in stored["benchmarks"])
    assert names[0] == "test_subject[mix-K2-B1]" and len(names) == 8
    info = next(b["extra_info"] for b in stored["benchmarks"] if b["name"] == "test_subject[qa-K4-B1]")
    assert info["draft_utilisation"] == 0.5 and len(info["ratios"]["speedup"]["values"]) == 3
    rows = json.loads((toy_module / "latest" / "rows.json").read_text())
    assert {r["configuration"] for r in rows} >= {"toy-K2", "toy-K4", "toy-K2-B4", "toy-K4-B4"}

    # the gate reads two stored runs: the second a copy of the first under the next number (a second run of the toy
    # costs 15 s and stores the same benchmarks; the runs' numbering is pytest-benchmark's)
    copy = runs[0].with_name("0002" + runs[0].name[4:])
    assert runs[0].name.startswith("0001_") and not copy.exists()
    copy.write_text(runs[0].read_text())
    gate = _cli(toy_module, "gate", "--storage", "store", "--margin", "0.5", "--verbose")
    assert gate.returncode in (0, 1), gate.stdout + gate.stderr  # a verdict: the two runs share every benchmark
    assert "8 comparisons" in gate.stdout, gate.stdout
    pytest.importorskip("matplotlib")
    plot = _cli(toy_module, "plot", "--rows", "latest/rows.json", "--storage", "store", "--out", ".")
    assert plot.returncode == 0, plot.stdout + plot.stderr
    assert all((toy_module / name).exists() for name in ("speedup_vs_k.png", "speedup_vs_batch.png", "history.png"))


def test_bench_run_refuses_a_bad_subject_before_running(toy_module):
    bad = _cli(toy_module, "run", "toy_engine:nothing")
    assert bad.returncode == 2 and "has no attribute 'nothing'" in bad.stderr
    twinless = _cli(toy_module, "run", "toy_engine:lone")
    assert twinless.returncode == 2 and "without a twin" in twinless.stderr


def test_bench_run_of_a_subject_that_is_not_callable_says_what_it_is(toy_module):
    done = _cli(toy_module, "run", "toy_engine:answer")
    assert done.returncode == 2 and "toy_engine:answer is int 42, not a benchmark subject" in done.stderr, done.stderr
    assert "without a twin" not in done.stderr


def test_bench_run_of_a_subject_that_raises_is_one_error_line_and_exit_3(toy_module):
    """As specdec check says it: one line naming the case and the exception's last line, no pytest dump (issue 31);
    a PYTEST_ADDOPTS of the caller's (here --durations, which once broke this test under a timed CI run) is not read."""
    done = _cli(toy_module, "run", "toy_engine:broken", "--kinds", "qa", "multi-turn", "--k", "2", "--rounds", "1",
                "--new-tokens", "4", "--storage", "st", "--latest", "latest", PYTEST_ADDOPTS="--durations=5")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "ERROR: the subject raised during case qa-K2-B1 of toy_engine:broken: RuntimeError: CUDA error: device-side assert triggered"]
    assert "Traceback" not in done.stdout and "FAILURES" not in done.stdout and len(done.stdout.splitlines()) <= 5, done.stdout


def test_the_pytest_fixture_form(toy_module):
    (toy_module / "test_toy_bench.py").write_text(FIXTURE_TEST)
    done = subprocess.run([sys.executable, "-m", "pytest", "test_toy_bench.py", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--benchmark-enable", "--specdec-bench-latest", "latest", "-c", os.devnull, "--rootdir", "."],
                          cwd=toy_module, env=_env(toy_module), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "speculative vs its autoregressive twin" in done.stdout
    assert json.loads((toy_module / "latest" / "rows.json").read_text())[0]["configuration"] == "toy-K4"


@pytest.mark.parametrize("alpha, k", [(0.0, 4), (0.3, 2), (0.8, 8), (0.95, 4)])
def test_implied_acceptance_inverts_f22(alpha, k):
    from specdec.laws.speedup import implied_acceptance

    length = sum(alpha ** i for i in range(k + 1))  # F22: E[T] = (1 - a^(K+1)) / (1 - a)
    assert implied_acceptance(length, k) == pytest.approx(alpha, abs=1e-9)


def test_costs_of_a_batch_step_on_a_tiny_target():
    from fixtures.models import tiny_pair
    from specdec.bench.costs import calibrate

    target, draft = tiny_pair()
    costs = calibrate(target, [1, 2, 3, 4, 5], 3, draft_model=draft, rounds=1, batch=3)
    assert set(costs.target_seconds) == {0, 1, 2, 3} and costs.verify_cost_ratios[0] == 1.0
    assert costs.draft_step_ratio > 0


def test_best_k_per_batch_reads_the_load_rows():
    from specdec.bench.tables import best_k_per_batch, subject_report

    def row(k, batch, speedup, optimal_k):
        return {"configuration": f"s-K{k}-B{batch}", "kind": "mix", "subject": "s", "batch": batch, "speedup": {"median": speedup, "min": speedup, "max": speedup},
                "optimal_k": optimal_k, "acceptance": 0.5, "predicted": 1.0, "efficiency": 1.0, "peer_speedup": None, "tokens_per_step": 2.0,
                "mean_draft_tokens": k, "ttft_ms": 1.0, "itl_ms": {"p90": 1.0}, "delta_memory_mib": None,
                "tokens_per_second": {"speculative": {"median": 10.0}, "autoregressive": {"median": 5.0}}}

    rows = [row(2, 1, 1.2, 4), row(4, 1, 1.5, 4), row(2, 16, 1.1, 2), row(4, 16, 0.9, 2), row(2, 64, 0.95, 0), row(4, 64, 0.8, 0)]
    entries = best_k_per_batch(rows)
    assert [(e["batch"], e["measured_best_k"], e["predicted_k"]) for e in entries] == [(1, 4, 4), (16, 2, 2), (64, 2, 0)]
    report = subject_report(rows)
    assert "best K per batch" in report
    assert "0 (no K wins; least bad K2)" in report  # at B = 64 no K beat 1x: the measured best is autoregressive
