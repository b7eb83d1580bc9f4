"""vLLM 0.32's OpenAI server on SmolLM2-135M (CPU build), checked over HTTP through
specdec.adapters.openai.client: the whole serving stack - HTTP, request batching, the engine core
in its own processes - as a subject, speculation on against speculation off (``specdec.check_ab``).

Three servers start side by side (module fixture; each a :class:`ServerProcess`, stopped whatever
happens): ``plain`` (no speculation, the reference), ``ngram`` (n-gram speculation as shipped) and
``ngram_fixed`` (the same, run by ``fixtures.vllm_server`` with the vLLM #55005 workaround installed
in the worker process).  All use the sampling of ``fixtures.vllm_subjects`` (T = 0.7, top-p 0.8, the
" cat"/" dog" prompt: L = 2 has four outcomes and n-gram drafts at every request).  What the runs show:

* the n samples of one request are those of seeds seed, seed + 1, ..., so n > 1 gives independent rows;
* as shipped, the speculative server FAILs the A/B check against the plain one: #55005 (verified rows
  warped with uninitialised temperatures), reached through the server too; it accepts no draft;
* with the workaround it PASSes, with drafts verified and accepted;
* the plain server follows the law transformers computes for SmolLM2 (``check_decoder``, one server
  against a law specdec computes).

Measured on 2 shared cores: servers ready ~50-70 s after start (three at once), about 18 samples/s
from the plain server and 11/s from a speculative one (each engine pinned to one core,
``VLLM_CPU_OMP_THREADS_BIND``); ``check_ab`` alternates the two sides, so n = 1,400 per side takes
about 3.5 minutes and reaches TV ~0.17 at the budget's per-check alpha.  The reports are kept in
``.peers/`` (JSON).  The whole file: about 7-8 minutes.
"""

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import specdec as sd
from fixtures import vllm_server, vllm_subjects
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.process import ServerProcess, free_port
from specdec.adapters.vllm.server import vllm_server_argv
from specdec.decoding.models import smollm2_dir

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / ".peers"
MODEL = "smollm2"
ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
N_PASS = 1400  # per side: ~3.5 min at the measured rates, TV ~0.17
N_FAIL = 400  # per side: the shipped bug is far larger than the TV this reaches (~0.3)
N_LAW = 600  # one server against the exact law
N_SLOW = 6000  # per side, -m "peers and slow" (make peers-slow): about 15 minutes, TV about 0.08
# name: (speculative_config, #55005 workaround, the core its engine is pinned to)
SERVERS = {"plain": (None, False, "0"), "ngram": (vllm_subjects.NGRAM, False, "1"), "ngram_fixed": (vllm_subjects.NGRAM, True, "1")}


def _server(name: str) -> ServerProcess:
    spec, fixed, core = SERVERS[name]
    port = free_port()
    argv = vllm_server_argv(smollm2_dir(), port, python=sys.executable, speculative_config=spec, served_model_name=MODEL,
                            max_model_len=vllm_subjects.ENGINE["max_model_len"], module="fixtures.vllm_server")
    env = {**ENV, "VLLM_CPU_OMP_THREADS_BIND": core, **({vllm_server.FIX_ENV: "1"} if fixed else {})}
    REPORTS.mkdir(exist_ok=True)
    return ServerProcess(argv, port=port, env=env, startup_timeout=600, log_path=REPORTS / f"vllm-server-{name}.log")


@pytest.fixture(scope="module")
def servers():
    started = {}
    try:
        for name in SERVERS:  # all boot side by side
            started[name] = _server(name)
            (REPORTS / f"vllm-server-{name}.log").write_text("")
            started[name].start()
        began = time.perf_counter()
        for server in started.values():
            server.wait_ready()
        print(f"\nservers ready after {time.perf_counter() - began:.0f} s: "
              + ", ".join(f"{n} {s.startup_seconds:.0f} s (pid {s.pid})" for n, s in started.items()))
        yield started
    finally:
        for server in started.values():
            server.stop(keep_log=True)


def decoder(servers, name: str) -> OpenAICompletionsDecoder:
    return OpenAICompletionsDecoder(servers[name].base_url, MODEL, sampling=vllm_subjects.SAMPLING, samples_per_request=64,
                                    max_in_flight=4, request_timeout=600, name=f"vLLM server ({name})")


def keep(name: str, report) -> None:
    (REPORTS / f"vllm-server-{name}.json").write_text(report.to_json())
    print(report.format())


def ask(server: ServerProcess, seed: int, n: int) -> list[list[int]]:
    body = {"model": MODEL, "prompt": vllm_subjects.PROMPT, "max_tokens": 2, "temperature": 0.7, "top_p": 0.8, "seed": seed,
            "n": n, "ignore_eos": True, "return_token_ids": True}
    request = urllib.request.Request(server.base_url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return [c["token_ids"] for c in sorted(json.loads(answer.read())["choices"], key=lambda c: c["index"])]


@pytest.mark.parametrize("name", ["plain", "ngram_fixed"])
def test_the_n_samples_of_a_request_are_those_of_seeds_seed_plus_i(servers, name):
    """vLLM seeds the i-th of n samples with seed + i: n > 1 gives independent rows as long as the
    client's seeds are far apart (the client's are random 62-bit numbers)."""
    seed = 1000
    together = ask(servers[name], seed, 8)
    alone = [ask(servers[name], seed + i, 1)[0] for i in range(8)]
    assert together == alone and len(set(map(tuple, together))) > 1, (together, alone)


def test_the_speculative_server_as_shipped_fails(servers):
    """vLLM #55005 through the server: expected FAIL, run outside the budget (it costs no alpha)."""
    report = sd.check_ab(decoder(servers, "ngram"), decoder(servers, "plain"), [vllm_subjects.PROMPT], length=2, n=N_FAIL,
                         tv=None, max_new_tokens=2, seed=21, name="vLLM server, n-gram as shipped vs no speculation")
    keep("ngram-vs-plain", report)
    assert report.verdict == "FAIL", report.format()
    failed = [c for c in report.checks if not c.passed]
    assert failed and failed[0].location.startswith("position 1 "), failed[0].location  # the first verified token
    assert report.speculation["drafts"] > 100, report.speculation


def fixed_vs_plain(servers, budget, *, n: int, tv: float, seed: int, label: str):
    """The n-gram server with the #55005 workaround against the plain one (two samples), kept in .peers/."""
    report = sd.check_ab(decoder(servers, "ngram_fixed"), decoder(servers, "plain"), [vllm_subjects.PROMPT], length=2, n=n,
                         tv=tv, max_new_tokens=2, seed=seed, budget=budget,
                         name="vLLM server, n-gram with the #55005 workaround vs no speculation" + label)
    keep("ngram_fixed-vs-plain" + label.replace(" (", "-").rstrip(")"), report)
    assert report.verdict == "PASS", report.format()
    return report


def test_the_speculative_server_with_the_workaround_passes(servers, specdec_budget):
    report = fixed_vs_plain(servers, specdec_budget, n=N_PASS, tv=0.2, seed=22, label="")
    spec = report.speculation
    assert spec["drafts"] > 100 and 0 < spec["accepted_tokens"] < spec["draft_tokens"], spec
    log = servers["ngram_fixed"].log_path.read_text(errors="replace")
    assert vllm_server.ACTIVE_LINE in log, "the workaround never ran in the server's processes"
    assert vllm_server.ACTIVE_LINE not in servers["ngram"].log_path.read_text(errors="replace")


@pytest.mark.slow
def test_the_speculative_server_with_the_workaround_passes_at_a_lower_tv(servers, specdec_budget):
    report = fixed_vs_plain(servers, specdec_budget, n=N_SLOW, tv=0.1, seed=24, label=" (slow)")
    assert report.speculation["drafts"] > 1000


def test_the_plain_server_follows_the_law_transformers_computes(servers, specdec_budget):
    report = sd.check_decoder(decoder(servers, "plain"), vllm_subjects.target(), [vllm_subjects.PROMPT], length=2, n=N_LAW,
                              tv=0.25, max_new_tokens=2, seed=23, budget=specdec_budget, name="vLLM server (no speculation) vs SmolLM2's law")
    keep("plain-vs-law", report)
    assert report.verdict == "PASS", report.format()
    assert report.speculation is None  # the plain server has no speculation counters


def test_the_servers_are_gone_after_the_module(servers):
    """The fixture stops them by process id; here: their process groups are alive while in use."""
    for server in servers.values():
        os.killpg(server.pid, 0)
