"""vLLM 0.32's rejection sampler and warping, real code (its CPU build: C++ kernels), through the adapters.

* the fake that CI's plumbing tests use has exactly the installed function's signature;
* the sampled path passes the whole default campaign through ``specdec check`` and through the
  pytest plugin (the TV is the run's ``--specdec-tv``; ``make peers`` asks 0.005);
* the greedy path is ``verify_greedy`` token for token (deterministic: exact, ties included);
* vLLM's warping on the CPU build reads uninitialised memory (vLLM #55005, found by this harness),
  and equals specdec's warpers once the expand shim is fixed (``fixtures.vllm_faults``).
"""

import inspect
import json
import subprocess
import sys
import time

import pytest
import torch

import specdec as sd
from fixtures import vllm_faults
from fixtures.fakes import fake_vllm_rejection_sample
from specdec.adapters import vllm as vllm_adapter

VERIFIER = "specdec.adapters.vllm:vllm_rejection_sample"

PLUGIN_TV = 0.02


def test_the_fake_has_the_installed_signature():
    real = vllm_adapter.rejection_sampler_module().rejection_sample
    assert inspect.signature(fake_vllm_rejection_sample) == inspect.signature(real), (
        f"fixtures.fakes.fake_vllm_rejection_sample{inspect.signature(fake_vllm_rejection_sample)} != "
        f"vllm rejection_sample{inspect.signature(real)}: update the fake and the adapter together"
    )


def test_the_installed_version_is_the_supported_one():
    import vllm

    assert vllm.__version__.split("+")[0] in vllm_adapter.SUPPORTED_VLLM


def test_the_sampled_path_passes_through_the_plugin(specdec_report):
    """The plugin's form of the check, at TV 0.02 (the CLI test below goes to the run's --specdec-tv)."""
    started = time.perf_counter()
    report = specdec_report.verifier(vllm_adapter.vllm_rejection_sample, device="cpu", name="vLLM 0.32 rejection_sample (plugin)", tv=PLUGIN_TV)
    print(f"\n{report.format()}\nreached TV {report.reached_tv:.4f} in {time.perf_counter() - started:.0f} s, n = {report.samples:,}")
    assert report.reached_tv <= PLUGIN_TV * (1 + 1e-9)


def test_the_sampled_path_passes_through_specdec_check(tmp_path, specdec_budget, pytestconfig):
    from specdec.conformance import chain_cases, token_cases

    tv = pytestconfig.getoption("specdec_tv")
    checks = 2 * len(token_cases()) + len(chain_cases())  # the default campaign: token cases 2 checks each, chains 1
    entry = specdec_budget.allot(checks, "specdec check vLLM rejection_sample")  # from this run's budget
    path = tmp_path / "vllm.json"
    argv = [sys.executable, "-m", "specdec", "check", VERIFIER, "--tv", str(tv), "--device", "cpu", "--seed", "1",
            "--family-alpha", repr(entry.alpha), "--json", str(path)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1500, cwd=pytestconfig.rootpath)
    print(done.stdout[-3000:], f"\n{time.perf_counter() - started:.0f} s")
    subject = json.loads(path.read_text())["subjects"][0]
    assert done.returncode == 0 and subject["verdict"] == "PASS", done.stdout[-4000:] + done.stderr[-2000:]
    assert len(subject["checks"]) == checks and subject["reached_tv"] <= tv * (1 + 1e-9)


def greedy_inputs(batch, k, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    target = torch.rand(batch, k + 1, vocab, generator=g, dtype=torch.float64).softmax(-1)
    tied = torch.randint(0, vocab, (batch // 4, k + 1, 2), generator=g)  # a quarter of the rows: two argmaxes tie
    target[: batch // 4].scatter_(2, tied, 2.0)
    target = (target / target.sum(-1, keepdim=True)).to(torch.float32)
    drafts = torch.randint(0, vocab, (batch, k), generator=g)
    drafts[batch // 2 :] = target[batch // 2 :, :k].argmax(-1)  # half the rows draft the argmax: long accepted runs
    return drafts, target


@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_the_greedy_path_is_verify_greedy_token_for_token(k):
    drafts, target = greedy_inputs(4096, k, 13, seed=k)
    theirs = vllm_adapter.vllm_rejection_sample_greedy(drafts, None, target, torch.Generator())
    ours = sd.verify_greedy(drafts, target)
    mismatched = int((theirs.tokens != ours.tokens).any(1).sum())
    assert mismatched == 0 and torch.equal(theirs.num_accepted, ours.num_accepted), f"{mismatched} of 4096 rows differ (K={k})"


WARPERS = [sd.SamplingConfig(temperature=0.7), sd.SamplingConfig(top_p=0.8), sd.SamplingConfig(top_k=5),
           sd.SamplingConfig(temperature=0.5, top_k=8, top_p=0.9), sd.SamplingConfig(temperature=1.3, top_p=0.5)]


def logits_for_warping(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(64, 200, generator=g) * 3


def tv_rows(a, b):
    return 0.5 * (a - b).abs().sum(-1)


def test_vllm_032_cpu_warping_uses_uninitialised_values_vllm_55005():
    """As shipped, every sampled row of the CPU build is warped with garbage temperatures/top-p
    (vLLM issue #55005): the warped laws are not specdec's (nor transformers')."""
    logits = logits_for_warping()
    config = sd.SamplingConfig(temperature=0.7, top_p=0.8)
    theirs = vllm_adapter.vllm_warped_logits(logits, config).softmax(-1)
    ours = sd.warped_probs(logits, config, dtype=torch.float32)
    broken = ~torch.isfinite(theirs).all(-1) | (tv_rows(theirs, ours) > 0.05)
    assert int(broken.sum()) > 32, f"only {int(broken.sum())} of 64 rows differ: has vLLM #55005 been fixed in this build?"


@pytest.mark.parametrize("config", WARPERS, ids=str)
def test_vllm_warping_is_specdecs_once_the_expand_shim_is_fixed(config, monkeypatch):
    kernel = vllm_faults._override("expand_kernel") if vllm_adapter.rejection_sampler_module() else None
    monkeypatch.setattr(kernel, "_impl", vllm_faults.expand_at_dtype)
    logits = logits_for_warping(1)
    theirs = vllm_adapter.vllm_warped_logits(logits, config).softmax(-1)
    ours = sd.warped_probs(logits, config, dtype=torch.float32)
    assert torch.equal(torch.isfinite(vllm_adapter.vllm_warped_logits(logits, config)), ours > 0), "the same support (top-k, top-p)"
    assert float(tv_rows(theirs, ours).max()) < 1e-5
