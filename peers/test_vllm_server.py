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
  against a law specdec computes);
* every token (issue 29, ``check_tokens``): the plain server's raw prompt log-probabilities are the law oracle
  (:class:`specdec.adapters.vllm.server_oracle.VLLMServerOracle`; temperature 1, whose law the top-20 raw
  log-probabilities and one rest cell give: ``TOKENS`` says why not a truncated law), its floor measured against
  the log-probabilities of the tokens it samples; the n-gram server with the workaround PASSes every token of 16-token answers at a per-token TV of
  0.07 in under 3 minutes (0.03 in under 10 under ``slow``), and as shipped it FAILs within a minute.
* every token under a whole sampling record (issue 38): the plain server - the control - against
  :class:`specdec.adapters.vllm.settings_oracle.VLLMSettingsOracle` (vLLM's sampler restated on SmolLM2's float32 rows),
  under the matrix's presence penalty and its minimum length before a stop token, on the matrix's per-token prompts:
  PASS (``SLICE_CELLS``); then, only where that control PASSed in the run, the n-gram server with the workaround under the
  same record (the per-token slice of issue 38): PASS, with drafts accepted; the speculative server refuses a logit
  bias by name (HTTP 400);
* the log-probabilities it reports for its sampled tokens (issue 38): the raw law of each token at its prefix, with
  speculation on as off (equal to the plain server's prompt log-probabilities within 2.2e-16 nats).

Measured on 2 shared cores: servers ready ~50-70 s after start (three at once), about 18 samples/s
from the plain server and 11/s from a speculative one (each engine pinned to one core,
``VLLM_CPU_OMP_THREADS_BIND``); ``check_ab`` alternates the two sides, so n = 900 per side takes
about 3 minutes and reaches TV ~0.22 at the budget's per-check alpha: ``make peers`` judges the server with the
workaround per token instead (stronger, in the same time), the A/B PASS runs under ``slow``.  Per token (T = 1, answers of 16
tokens, the oracle scoring on the plain server's core while the n-gram server answers on its own): the PASS
at TV 0.03 takes about 8 minutes (35,632 tokens, 2026-11-25), the as-shipped FAIL 39 s.  The reports are kept
in ``.peers/`` (JSON).  The whole file: about 15 minutes (``make peers``, 2026-11-29), and about 4 more since the
speculative server's per-token settings slice (2026-12-06).
"""

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import specdec as sd
from fixtures import vllm_server, vllm_subjects
from fixtures.fault_proxy import FaultProxy
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.process import ServerProcess, free_port
from specdec.adapters.openai.retries import RetryPolicy
from specdec.adapters.vllm.server import vllm_server_argv
from specdec.adapters.vllm.server_oracle import FLOOR, VLLMServerOracle, law_from_logprobs
from specdec.decoding.models import smollm2_dir
from specdec.warpers import SamplingConfig

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / ".peers"
MODEL = "smollm2"
ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
# per side at most, looked at every FAIL_CHUNK samples (stops at the first look that rejects): #55005 warps with
# uninitialised memory, so its size varies by run - p = 2.4e-62 at 400 a side (2026-11-29), p = 1.3e-6 at 200 in
# CI's run of 2026-11-29 (a PASS at alpha 1e-6).  At that run's deviation 1,000 a side misses the FAIL with
# probability 3e-10, at half of it 2.5e-3 (scipy's ncx2, 3 degrees of freedom)
N_FAIL = 1000
FAIL_CHUNK = 200
N_LAW = 600  # one server against the exact law
N_SLOW = 6000  # per side, -m "peers and slow" (make peers-slow): about 15 minutes, TV about 0.08
N_FAULTS = 300  # per side, the check under a deployment's faults (issue 31): about 2 minutes with a restart, TV ~0.4
SOAK_SECONDS = 1200  # make peers-slow: a 20-minute check with a fault every FAULT_EVERY seconds
FAULT_EVERY = 180
# The per-token checks sample at temperature 1 without truncation: the raw top-20 log-probabilities and one rest
# cell are then the sampled law.  Truncated laws cost more here: top-p makes vLLM's CPU rejection sampler sort the
# whole 49,152-token vocabulary of every verified row (the n-gram server makes 41 tokens/s at T=0.7, top-k 20,
# top-p 0.8 against 94 at T=1, 256 answers of 16 tokens, measured 2026-11-25), and top-k alone crashes it (B16).
TOKENS = SamplingConfig(temperature=1.0)
TOKEN_LENGTH = 16  # tokens per answer of the per-token checks, every one tested
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


def test_the_servers_own_tokenize_gives_the_model_tokenizers_ids(servers):
    """``specdec check --server`` tokenises text and the embedded workload's chat messages with vLLM's ``POST /tokenize``
    (issue 38, item 6): the ids are those transformers gives with the same model folder (text with its special tokens,
    messages through the chat template with the assistant prefix), and the CLI's default prompts are those ids."""
    from transformers import AutoTokenizer

    from specdec.adapters.openai.tokenize import server_tokenize
    from specdec.cli import build_parser
    from specdec.cli.check import _validate
    from specdec.workload.prompt_inputs import DEFAULT_KINDS
    from specdec.workload.prompts import chat_ids
    from specdec.workload.texts import PROMPTS

    tokenizer, url = AutoTokenizer.from_pretrained(smollm2_dir()), servers["plain"].base_url
    text = "The old harbour of Calden was rebuilt in 1874."
    assert server_tokenize(url, MODEL, text=text) == tokenizer.encode(text)
    expected = [chat_ids(tokenizer, PROMPTS[kind][0]) for kind in DEFAULT_KINDS]
    args = build_parser().parse_args(["check", "--server", url, "--model", MODEL, "--reference-server", url, "--json", "/dev/null"])
    _validate(args)
    assert args.prompts == expected and args.prompt_record["tokenizer"] == f"POST {url}/tokenize"


def test_the_speculative_server_as_shipped_fails(servers):
    """vLLM #55005 through the server: expected FAIL, run outside the budget (it costs no alpha)."""
    report = sd.check_ab(decoder(servers, "ngram"), decoder(servers, "plain"), [vllm_subjects.PROMPT], length=2, n=N_FAIL,
                         chunk_size=FAIL_CHUNK, tv=None, max_new_tokens=2, seed=21,
                         name="vLLM server, n-gram as shipped vs no speculation")
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


def the_workaround_ran_in_the_fixed_server_only(servers) -> None:
    log = servers["ngram_fixed"].log_path.read_text(errors="replace")
    assert vllm_server.ACTIVE_LINE in log, "the workaround never ran in the server's processes"
    assert vllm_server.ACTIVE_LINE not in servers["ngram"].log_path.read_text(errors="replace")


@pytest.mark.slow  # make peers judges this server per token (below), a stronger check in the same time
def test_the_speculative_server_with_the_workaround_passes(servers, specdec_budget):
    report = fixed_vs_plain(servers, specdec_budget, n=N_SLOW, tv=0.1, seed=24, label=" (slow)")
    spec = report.speculation
    assert spec["drafts"] > 1000 and 0 < spec["accepted_tokens"] < spec["draft_tokens"], spec
    the_workaround_ran_in_the_fixed_server_only(servers)


def test_the_plain_server_follows_the_law_transformers_computes(servers, specdec_budget):
    report = sd.check_decoder(decoder(servers, "plain"), vllm_subjects.target(), [vllm_subjects.PROMPT], length=2, n=N_LAW,
                              tv=0.25, max_new_tokens=2, seed=23, budget=specdec_budget, name="vLLM server (no speculation) vs SmolLM2's law")
    keep("plain-vs-law", report)
    assert report.verdict == "PASS", report.format()
    assert report.speculation is None  # the plain server has no speculation counters


def _post(server: ServerProcess, body: dict) -> dict:
    request = urllib.request.Request(server.base_url + "/v1/completions", data=json.dumps({"model": MODEL, **body}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.loads(answer.read())


def test_the_oracles_floor_is_measured_below_its_default(servers):
    """The oracle reads prompt log-probabilities (one prefill of prompt + answer); the server samples at decode
    steps.  Both are raw float32 log-softmax: the floor is their difference, measured on 32 answers of the
    plain server (the top-20 log-probabilities of each sampled position against the prompt log-probabilities
    of the same position): the largest relative difference of a token's probability (tokens >= 1e-3) and the
    TV of the laws rebuilt from them."""
    worst, tvs = 0.0, []
    for seed in range(4):
        sampled = _post(servers["plain"], {"prompt": vllm_subjects.PROMPT, "max_tokens": TOKEN_LENGTH, "n": 8, "seed": 500 + seed,
                                           "temperature": 1.0, "ignore_eos": True, "logprobs": 20,
                                           "return_token_ids": True, "return_tokens_as_token_ids": True})
        for choice in sampled["choices"]:
            answer = choice["token_ids"]
            prefill = _post(servers["plain"], {"prompt": vllm_subjects.PROMPT + answer, "max_tokens": 1, "prompt_logprobs": 20})
            rows = prefill["choices"][0]["prompt_logprobs"][len(vllm_subjects.PROMPT):]
            for decoded, row in zip(choice["logprobs"]["top_logprobs"], rows):
                decode = {int(k.split(":")[1]): {"logprob": v} for k, v in decoded.items()}
                both = sorted(set(decode) & {int(k) for k in row})
                assert len(both) >= 20, (decoded, row)  # the top 20 of both sides, compared token by token
                a = np.exp([decode[t]["logprob"] for t in both])
                b = np.exp([row[str(t)]["logprob"] for t in both])
                big = np.maximum(a, b) >= 1e-3
                worst = max(worst, float(np.max(np.abs(a - b)[big] / np.maximum(a, b)[big], initial=0.0)))
                la, lb = law_from_logprobs(decode, TOKENS, 20), law_from_logprobs({int(k): v for k, v in row.items()}, TOKENS, 20)
                pa, pb = dict(zip(la.ids.tolist(), la.probs)), dict(zip(lb.ids.tolist(), lb.probs))
                tvs.append(0.5 * (sum(abs(pa.get(t, 0.0) - pb.get(t, 0.0)) for t in set(pa) | set(pb)) + abs(la.rest - lb.rest)))
    FLOORS["vllm"] = {"relative": worst, "mean_tv": float(np.mean(tvs)), "max_tv": float(np.max(tvs)), "positions": len(tvs)}
    print(f"\nvLLM oracle floor: largest relative difference {worst:.2e} (tokens >= 1e-3), law TV mean {np.mean(tvs):.2e}, "
          f"max {np.max(tvs):.2e}, over {len(tvs)} positions; the oracle's floor: {FLOOR:g}")
    (REPORTS / "vllm-oracle-floor.json").write_text(json.dumps(FLOORS["vllm"]))
    assert len(tvs) == 32 * TOKEN_LENGTH and worst < FLOOR, (worst, FLOOR)


FLOORS: dict = {}
REPORTED_BOUND = 0.01  # nats: the control's own bound (the floor test's largest relative difference is below 1e-4)


def _reported(server: ServerProcess, seeds) -> tuple[list, list, list]:
    """(prompts, answers, reported log-probabilities of each emitted token) of 8 samples per seed at the fixtures'
    sampling (T = 0.7, top-p 0.8), ``logprobs: 1``."""
    prompts, answers, reported = [], [], []
    for seed in seeds:
        out = _post(server, {"prompt": vllm_subjects.PROMPT, "max_tokens": TOKEN_LENGTH, "n": 8, "seed": seed, "ignore_eos": True,
                             "logprobs": 1, "return_token_ids": True, "temperature": vllm_subjects.SAMPLING.temperature,
                             "top_p": vllm_subjects.SAMPLING.top_p})
        for choice in out["choices"]:
            prompts.append(list(vllm_subjects.PROMPT))
            answers.append([int(t) for t in choice["token_ids"]])
            reported.append([float(x) for x in choice["logprobs"]["token_logprobs"]])
    return prompts, answers, reported


def test_the_speculative_server_reports_the_raw_law_of_the_tokens_it_emits(servers):
    """Issue 38, item 4: the log-probability vLLM reports for each sampled token (``logprobs: 1``; vLLM 0.32's default
    ``logprobs_mode`` is ``raw_logprobs``: the model's log-softmax before penalties, temperature and top-p) against
    the raw law of the same token at the same prefix (:class:`VLLMServerOracle`, the plain server's prompt
    log-probabilities), the plain server first (the control, which sets the tolerance), then the n-gram server with
    the #55005 workaround, 16 answers of 16 tokens each; the as-shipped server's deviation is printed.  Measured
    2026-11-27: every reported value equal to the oracle's within 2.2e-16 nats (256 tokens a side, plain, with the
    workaround and as shipped: B15 changes which rows are warped, not the raw rows reported), 264 s with the servers'
    start under load.  vLLM reports the raw law, not the one it samples from (T = 0.7, top-p 0.8): as documented."""
    from specdec.conformance.reported_logprobs import compare_logprobs, control_tolerance

    oracle = law_oracle(servers)
    control = compare_logprobs(oracle, *_reported(servers["plain"], (600, 601)), claims="raw")
    assert control.tokens >= 128 and control.max_deviation <= REPORTED_BOUND, control
    tolerance = control_tolerance(control)
    report = compare_logprobs(oracle, *_reported(servers["ngram_fixed"], (602, 603)), claims="raw", tolerance=tolerance)
    shipped = compare_logprobs(oracle, *_reported(servers["ngram"], (604, 605)), claims="raw", tolerance=tolerance)
    print(f"\nreported log-probabilities: control max {control.max_deviation:.3g} (n = {control.tokens}, unlisted "
          f"{control.unlisted}), tolerance {tolerance:.3g}; n-gram with the workaround max {report.max_deviation:.3g} "
          f"mean {report.mean_deviation:.3g} (n = {report.tokens}) -> {report.verdict}; as shipped max "
          f"{shipped.max_deviation:.3g} -> {shipped.verdict}")
    (REPORTS / "vllm-reported-logprobs.json").write_text(json.dumps({
        "tolerance": tolerance, **{name: {"max": r.max_deviation, "mean": r.mean_deviation, "tokens": r.tokens, "verdict": r.verdict}
                                   for name, r in (("plain", control), ("ngram_fixed", report), ("ngram", shipped))}}))
    assert report.tokens >= 128 and report.verdict == "PASS", report


def token_decoder(servers, name: str) -> OpenAICompletionsDecoder:
    return OpenAICompletionsDecoder(servers[name].base_url, MODEL, sampling=TOKENS, samples_per_request=64, max_in_flight=4,
                                    request_timeout=600, name=f"vLLM server ({name}), T=1")


def law_oracle(servers) -> VLLMServerOracle:
    return VLLMServerOracle(servers["plain"].base_url, MODEL, sampling=TOKENS, max_in_flight=4, request_timeout=600)


def per_token(servers, server: str, rows_per_call: int = 256, tv: float = 0.03, label: str = "", **settings):
    started = time.perf_counter()
    report = sd.check_tokens(token_decoder(servers, server), law_oracle(servers), [vllm_subjects.PROMPT], length=TOKEN_LENGTH,
                             tv=tv, rows_per_call=rows_per_call, **settings)
    seconds = time.perf_counter() - started
    keep(f"{server}-per-token{label}", report)
    print(f"-> {report.verdict} after {seconds:.0f} s, {report.checks[0].n if report.checks else 0:,} tokens, reached TV "
          f"{report.reached_tv}, speculation {report.speculation}")
    return report, seconds


def workaround_per_token(servers, budget, tv: float, seed: int, label: str):
    report, seconds = per_token(servers, "ngram_fixed", tv=tv, label=label, seed=seed, budget=budget,
                                name="vLLM server, n-gram with the #55005 workaround, per token vs the plain server's log-probabilities")
    assert report.verdict == "PASS" and report.reached_tv <= tv, report.format()
    assert report.speculation["drafts"] > 100 and 0 < report.speculation["accepted_tokens"] < report.speculation["draft_tokens"]
    return seconds


def test_every_token_of_the_server_with_the_workaround_follows_the_oracle(servers, specdec_budget):
    """CI's slice at a per-token TV of 0.07 (about 6.5 k tokens, 2-3 minutes; at 0.05, 12,784 tokens took 270 s on
    2026-11-29's AVX2 machine); TV 0.03 under ``slow`` (36 k, 8 minutes).  The time bound leaves CI's slower machines
    their margin."""
    assert workaround_per_token(servers, specdec_budget, tv=0.07, seed=26, label="") < 450
    the_workaround_ran_in_the_fixed_server_only(servers)


@pytest.mark.slow
def test_every_token_of_the_server_with_the_workaround_follows_the_oracle_at_tv_0_03(servers, specdec_budget):
    assert workaround_per_token(servers, specdec_budget, tv=0.03, seed=28, label="-0.03") < 600


def test_every_token_of_the_server_as_shipped_fails_within_a_minute(servers):
    """#55005 per token: expected FAIL, at the production level outside the budget, stopped at an early look."""
    report, seconds = per_token(servers, "ngram", rows_per_call=64, seed=27, family_alpha=1e-6,
                                name="vLLM server, n-gram as shipped, per token vs the plain server's log-probabilities")
    assert report.verdict == "FAIL" and report.stopped_early is not None, report.format()
    assert seconds < 60, seconds


def test_the_servers_are_gone_after_the_module(servers):
    """The fixture stops them by process id; here: their process groups are alive while in use."""
    for server in servers.values():
        os.killpg(server.pid, 0)


class _RestartedAt:
    """The subject, with its server SIGKILLed and restarted on its port while call ``call`` is in flight."""

    def __init__(self, decoder, server: ServerProcess, call: int) -> None:
        self.decoder, self.server, self.call, self.calls, self.pids, self.timer = decoder, server, call, 0, [server.pid], None
        self.num_draft_tokens = None

    def restart(self) -> None:
        self.server.restart(kill=True, down=1.0)
        self.pids.append(self.server.pid)

    def __call__(self, prompts, max_new_tokens, seed):
        self.calls += 1
        if self.calls == self.call:
            import threading

            self.timer = threading.Timer(2.0, self.restart)
            self.timer.start()
        return self.decoder(prompts, max_new_tokens, seed)

    def speculation_counts(self):
        return self.decoder.speculation_counts()


def _faulty_subject(proxy: FaultProxy) -> OpenAICompletionsDecoder:
    return OpenAICompletionsDecoder(proxy.base_url, MODEL, sampling=vllm_subjects.SAMPLING, samples_per_request=32, max_in_flight=4,
                                    request_timeout=600, name="vLLM server (ngram_fixed) behind the fault proxy",
                                    retry=RetryPolicy(budget=500.0, first=0.5, longest=10.0))


def _seeds_once(client: OpenAICompletionsDecoder, report) -> None:
    """Every request whose answer was used, once; together they hold the subject's samples."""
    used = [seed for seed, _ in client.answered]
    assert len(used) == len(set(used)), "a request counted twice"
    assert sum(n for _, n in client.answered) == report.samples // 2, (sum(n for _, n in client.answered), report.samples)


def test_the_checked_server_survives_a_deployments_faults(servers, specdec_budget):
    """The speculative server (with the workaround) behind a fault proxy: throttled (429, 503 with Retry-After),
    connections reset after the work was done, a slow phase, and SIGKILLed and restarted on its port mid-check.
    The check retries what failed in transport with the same seeds: PASS, each request counted once (issue 31)."""
    server = servers["ngram_fixed"]
    with FaultProxy(server.base_url) as proxy:
        client = _faulty_subject(proxy)
        for kind in ("throttle", "unavailable", "reset"):
            proxy.inject(kind, count=2)
        proxy.inject("slow", count=2, delay=10.0)
        subject = _RestartedAt(client, server, call=3)
        report = sd.check_ab(subject, decoder(servers, "plain"), [vllm_subjects.PROMPT], length=2, n=N_FAULTS, tv=0.45,
                             max_new_tokens=2, rows_per_call=128, seed=25, budget=specdec_budget,
                             name="vLLM server, n-gram with the workaround, under faults, vs no speculation")
        subject.timer.join()
    keep("ngram_fixed-under-faults", report)
    print(f"faults delivered {dict(proxy.injected_total)}; {len(client.faults)} transport failures retried; restart: pid "
          f"{subject.pids[0]} -> {subject.pids[-1]}; {len(client.answered)} requests used, {len(proxy.served)} forwarded")
    assert report.verdict == "PASS", report.format()
    assert len(subject.pids) == 2 and subject.pids[0] != subject.pids[1]
    assert set(proxy.injected_total) == {"throttle", "unavailable", "reset", "slow"}
    assert {"HTTP 429", "HTTP 503"} <= set(client.faults) and {"RemoteDisconnected", "ConnectionResetError"} & set(client.faults), \
        client.faults
    _seeds_once(client, report)
    assert report.speculation["drafts"] > 50, report.speculation  # counted across the restart


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@pytest.mark.slow
def test_a_twenty_minute_check_under_recurring_faults_keeps_its_verdict_and_every_sample(servers, specdec_budget):
    """The soak run (make peers-slow): a check with a 20-minute budget while a fault comes every 3 minutes -
    throttling, resets, a slow phase, and a SIGKILL and restart of the server.  The verdict stands, no sample is
    lost or doubled (per request seed), and this process's memory stays flat."""
    import threading

    server = servers["ngram_fixed"]
    stop, schedule = threading.Event(), [("throttle", 5), ("reset", 5), ("restart", 0), ("unavailable", 5), ("slow", 5), ("restart", 0)]
    restarts: list[int] = []
    rss_start = _rss_mib()
    with FaultProxy(server.base_url) as proxy:
        client = _faulty_subject(proxy)

        def faults():
            for kind, count in schedule:
                if stop.wait(FAULT_EVERY):
                    return
                if kind == "restart":
                    server.restart(kill=True, down=1.0)
                    restarts.append(server.pid)
                else:
                    proxy.inject(kind, count=count, delay=10.0)

        injector = threading.Thread(target=faults, daemon=True)
        injector.start()
        started = time.perf_counter()
        report = sd.check_ab(client, decoder(servers, "plain"), [vllm_subjects.PROMPT], length=2, time_budget=SOAK_SECONDS,
                             tv=None, max_new_tokens=2, rows_per_call=128, seed=26, budget=specdec_budget,
                             name="vLLM server, n-gram with the workaround, 20 minutes under recurring faults, vs no speculation")
        stop.set()
        injector.join()
    rss_end = _rss_mib()
    figures = {"seconds": time.perf_counter() - started, "requests_used": len(client.answered), "requests_forwarded": len(proxy.served),
               "faults_delivered": dict(proxy.injected_total), "restarts": len(restarts), "transport_failures_retried": len(client.faults),
               "samples": report.samples, "verdict": report.verdict, "reached_tv": report.reached_tv, "rss_mib_start": rss_start,
               "rss_mib_end": rss_end, "speculation": report.speculation}
    (REPORTS / "soak.json").write_text(json.dumps(figures, indent=2))
    keep("soak", report)
    print("soak:", json.dumps(figures))
    assert report.verdict in ("PASS", "INCONCLUSIVE"), report.format()
    assert restarts and set(proxy.injected_total) >= {"throttle", "reset", "unavailable", "slow"}
    _seeds_once(client, report)
    assert rss_end - rss_start < 150, (rss_start, rss_end)


# Per token under a whole sampling record (issue 38): the plain server - speculation off, the control - against
# VLLMSettingsOracle, vLLM 0.32's sampler restated on the same weights' float32 rows (transformers).  Only where the
# control PASSes may that oracle judge a speculative server under the record.
CAT, DOG = 2644, 2767  # " cat", " dog"
# make peers-slow's controls at TV 0.03, on the " cat"/" dog" prompt, answers of 8 tokens
SETTINGS_CELLS = {
    "penalties": sd.SamplingSettings(temperature=1.0, repetition_penalty=1.3, presence_penalty=0.5, frequency_penalty=0.3),
    # " dog" biased down; " cat" (the stop token) and the EOS masked for 4 tokens; " dog dog" banned (vLLM re-tokenizes
    # the text " dog dog" as [22676, 2767] and [2767, 2767])
    "bias, min tokens, bad words": sd.SamplingSettings(temperature=1.0, logit_bias={DOG: -1.5}, min_new_tokens=4, stop_token_ids=[CAT],
                                                       bad_words=[[DOG, DOG]]),
}
SETTINGS_LENGTH = 8  # tokens per answer (an answer of the second cell ends at " cat")
# make peers' slice: one penalty cell and one processor cell of the matrix (scripts/matrix/settings.py: T = 0.7, top-p
# 0.8 with a presence penalty of 1.5; with " dog" a stop token masked for the first 2 tokens), the control then the
# n-gram server with the workaround, on the matrix's per-token prompts (three chat-templated task kinds, one whose answer
# copies from its passage, and the " cat"/" dog" prompt), 32 answers a prompt of 16 tokens: about 2,000 tokens a check.
# Not the repetition penalty: at 1.3 it leaves n-gram almost nothing to draft (20 drafts in the matrix's whole cell;
# under penalties at T = 1, 1 draft in 4,096 tokens, 2026-12-06).  The speculative server refuses a logit bias (HTTP
# 400, tested below).
SLICE_CELLS = ("presence penalty", "minimum new tokens")
SLICE_LENGTH = 16
SETTINGS_TV = 0.15  # make peers; make peers-slow: 0.03


def settings_per_token(servers, server: str, cell: str, *, tv: float, seed: int, budget) -> tuple:
    """``server`` per token under ``SETTINGS_CELLS[cell]`` against VLLMSettingsOracle, on the " cat"/" dog" prompt."""
    import torch

    from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle
    from specdec.decoding.models import load_smollm2

    record = SETTINGS_CELLS[cell]
    model, tokenizer = load_smollm2()
    oracle = VLLMSettingsOracle(model, record, tokenizer=tokenizer)
    subject = OpenAICompletionsDecoder(servers[server].base_url, MODEL, settings=record, samples_per_request=64, max_in_flight=4,
                                       request_timeout=600, decode=tokenizer.decode, name=f"vLLM server ({server}), {cell}")
    started, threads = time.perf_counter(), torch.get_num_threads()
    torch.set_num_threads(1)  # the plain server's engine has core 0: two threads here on 2 shared cores ran the forward 9x slower
    try:
        report = sd.check_tokens(subject, oracle, [vllm_subjects.PROMPT], length=SETTINGS_LENGTH, tv=tv,
                                 eos_token_id=list(record.stop_token_ids) or None, rows_per_call=256, seed=seed, budget=budget,
                                 name=f"vLLM server ({server}) under {record.label}, per token vs VLLMSettingsOracle")
    finally:
        torch.set_num_threads(threads)
    seconds = time.perf_counter() - started
    keep(f"{server}-settings-{cell.split(',')[0].replace(' ', '_')}-tv{tv:g}", report)
    print(f"-> {cell}: {report.verdict} after {seconds:.0f} s, {report.checks[0].n if report.checks else 0:,} tokens, reached TV "
          f"{report.reached_tv}, speculation {report.speculation}")
    return report, seconds


@pytest.mark.parametrize("cell", SLICE_CELLS)
def test_the_speculative_server_follows_the_restated_sampler_under_a_whole_record(servers, specdec_budget, cell):
    """One per-token cell (``run_token_cell``): the plain server against vLLM's sampler restated on float32 rows (the
    control), then, only if it PASSes, the n-gram server with the #55005 workaround under the same record; drafts must
    have been verified and some accepted.  Measured 2026-12-06 (2 cores shared with a vLLM matrix cell): controls PASS at
    a reached TV of 0.132 (presence penalty, 2,048 tokens, 64 s) and 0.125 (minimum new tokens, 2,048, 70 s); the
    n-gram server after them PASS at 0.131 (2,048 tokens, 80 s; 454 of 1,296 drafted tokens accepted) and 0.128 (2,015
    tokens, 77 s; 644 of 1,159); as one cell each beside make test: PASS at 0.131 and 0.126 (149 s and 135 s)."""
    import torch

    from scripts.matrix.settings import SETTINGS
    from scripts.matrix.token_prompts import token_prompts
    from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle
    from specdec.conformance.token_cells import run_token_cell
    from specdec.decoding.models import load_smollm2

    model, tokenizer = load_smollm2()

    def client(name, settings):
        return OpenAICompletionsDecoder(servers[name].base_url, MODEL, settings=settings, samples_per_request=64, max_in_flight=4,
                                        request_timeout=600, decode=tokenizer.decode, name=f"vLLM server ({name}), {cell}")

    settings, threads = SETTINGS[cell], torch.get_num_threads()
    torch.set_num_threads(1)  # the plain server's engine has core 0: two threads here on 2 shared cores ran the forward 9x slower
    try:
        result = run_token_cell("vLLM server", "n-gram K=4 (#55005 workaround)", cell, settings,
                                lambda s: (client("ngram_fixed", s), client("plain", s)),
                                lambda s: VLLMSettingsOracle(model, s, tokenizer=tokenizer), prompts=[list(p) for p in token_prompts()],
                                length=SLICE_LENGTH, tv=SETTINGS_TV, seed=61, budget=specdec_budget,
                                eos_token_id=list(settings.stop_token_ids) or None, rows_per_call=128,
                                keep=lambda kind, report: keep(f"settings-{cell.replace(' ', '_')}-{kind}", report))
    finally:
        torch.set_num_threads(threads)
    print(f"-> {cell}: {result.summary()}")
    assert result.extra["control_verdict"] == "PASS", result  # only then may the oracle judge the speculative server
    assert result.verdict == "PASS" and result.reached_tv <= SETTINGS_TV, result
    assert result.draft_tokens > 100 and result.accepted_tokens > 0, result


def test_the_speculative_server_refuses_a_logit_bias_by_name(servers):
    """vLLM 0.32 refuses a logit bias (and min-p) with speculative decoding: the matrix's REFUSED cells, asked here."""
    from specdec.errors import ServerRequestError

    biased = sd.SamplingSettings(temperature=1.0, logit_bias={DOG: -1.5})
    subject = OpenAICompletionsDecoder(servers["ngram_fixed"].base_url, MODEL, settings=biased, samples_per_request=4, request_timeout=120,
                                       name="vLLM server (ngram_fixed), logit bias")
    with pytest.raises(ServerRequestError, match="logit_bias sampling parameters are not yet supported with speculative"):
        subject([vllm_subjects.PROMPT], 2, 0)


@pytest.mark.slow
@pytest.mark.parametrize("cell", list(SETTINGS_CELLS))
def test_the_plain_server_follows_the_restated_sampler_under_a_whole_record_at_tv_0_03(servers, specdec_budget, cell):
    """Measured 2026-11-27 (2 shared cores): PASS with 29,640 and 29,638 tokens in 339 s and 335 s."""
    report, seconds = settings_per_token(servers, "plain", cell, tv=0.03, seed=62, budget=specdec_budget)
    assert report.verdict == "PASS" and report.reached_tv <= 0.03, report.format()
