"""vLLM 0.32's OpenAI server in the matrix: speculation against the same server without it, every setting of
:mod:`.settings`, plus the base setting amid a mixed batch.  Run in the peers environment::

    HF_HUB_OFFLINE=1 .venv-peers/bin/python -m scripts.matrix.vllm_server [--method ngram draft_model ngram_shipped ...]
        [--n 800] [--only SETTING ...] [--append]

Methods: ``ngram`` (K = 4, with the #55005 workaround), ``draft_model`` (SmolLM2 drafting for itself, K = 2,
probabilistic drafts, with the workaround), ``ngram_shipped`` and ``draft_model_shipped`` (as shipped: B15 where
rows are sampled), and two server conditions under which the law must not change (issue 30, item 3):

* ``ngram_preemption``: a KV cache of 12 blocks of 32 tokens, every cell amid a load of long answers, so that the
  scheduler preempts running requests and recomputes them (the cell's detail counts the preemptions, from
  ``vllm:num_preemptions_total``; a cell during which none happened says so);
* ``ngram_chunked``: chunked prefill on, 16 tokens per step, so the 18-token prompt is prefilled in two chunks;
  seeded requests kill 0.32's CPU engine there (B17), so its cells are asked unseeded, but the last ("base",
  seeded), whose ERROR shows B17.

The plain server is pinned to core 0, the speculative ones to core 1; a server that dies during a cell is
restarted before the next, and the cell is an ERROR with the failure's first line.
"""

from __future__ import annotations

import dataclasses
import sys

import specdec as sd
from fixtures import vllm_server, vllm_subjects
from specdec.adapters.background_load import AmidLoad, Load
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.process import ServerProcess, free_port
from specdec.adapters.openai.wire import get_text
from specdec.adapters.vllm.server import vllm_server_argv
from specdec.conformance.matrix import run_cell
from specdec.decoding.models import smollm2_dir

from . import runner
from .settings import BASE, MIXED_LOAD, OTHER_PROMPT, SETTINGS, check_of, eos_of, length_of, logits_processor_setting

MODEL = "smollm2"
ENGINE = "vLLM 0.32 server"
MIXED = "mixed batch"
PROCESSOR = "user logits processor"  # refused by the adapter: a server takes processors by name at start-up
PREEMPTION_ARGS = ["--block-size", "32", "--num-gpu-blocks-override", "12"]  # the CPU attention takes multiples of 32
CHUNKED_ARGS = ["--enable-chunked-prefill", "--max-num-batched-tokens", "16"]
# name: (speculative config, #55005 workaround, core, the method's name in the table, more server arguments)
SERVERS = {"plain": (lambda: None, False, "0", "none", []),
           "ngram": (lambda: vllm_subjects.NGRAM, True, "1", "n-gram K=4 (#55005 workaround)", []),
           "draft_model": (vllm_subjects.draft_model_config, True, "1", "draft model K=2 (#55005 workaround)", []),
           "ngram_shipped": (lambda: vllm_subjects.NGRAM, False, "1", "n-gram K=4 (as shipped)", []),
           "draft_model_shipped": (vllm_subjects.draft_model_config, False, "1", "draft model K=2 (as shipped)", []),
           "ngram_preemption": (lambda: vllm_subjects.NGRAM, True, "1", "n-gram K=4 (#55005 workaround), 12 KV blocks of 32, preempted",
                                PREEMPTION_ARGS),
           "ngram_chunked": (lambda: vllm_subjects.NGRAM, True, "1", "n-gram K=4 (#55005 workaround), chunked prefill 16",
                             CHUNKED_ARGS)}
# The settings each method runs (None: all of them); as shipped, the crashing top-k last (B16 can take the engine down).
ONLY = {"draft_model_shipped": ["base", "presence penalty", "greedy"],
        "ngram_preemption": ["base", "frequency penalty", "bad words", "stop token", "greedy"],
        "ngram_chunked": ["unseeded", "presence penalty", "bad words", "greedy", "base"]}
LAST = {"ngram_shipped": ["top-k"], "ngram_chunked": ["base"]}
# Chunked prefill: seeded requests kill 0.32's CPU engine (B17), so the cells are asked unseeded but "base", which shows B17.
UNSEEDED = {"ngram_chunked": ["presence penalty", "bad words"]}
# The load of the preemption cells: long answers on a long prompt (7 blocks each), enough of them to overflow 12 blocks.
LONG_PROMPT = vllm_subjects.PROMPT * 5
SECONDS_PER_CELL = 150  # n = 800 per side on 2 shared cores


def start(name: str) -> ServerProcess:
    spec, fixed, core, _, extra = SERVERS[name]
    port = free_port()
    argv = vllm_server_argv(smollm2_dir(), port, python=sys.executable, speculative_config=spec(), served_model_name=MODEL,
                            max_model_len=vllm_subjects.ENGINE["max_model_len"], module="fixtures.vllm_server", extra=extra)
    env = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(runner.OUT.parents[1]),
           "VLLM_CPU_OMP_THREADS_BIND": core, **({vllm_server.FIX_ENV: "1"} if fixed else {})}
    runner.OUT.mkdir(parents=True, exist_ok=True)
    return ServerProcess(argv, port=port, env=env, startup_timeout=600, log_path=runner.OUT / f"vllm-{name}.log").start()


def alive(server: ServerProcess) -> ServerProcess:
    """The server, restarted if it died or its engine no longer answers ``/health`` (a crashing setting must not take
    the next cells with it; vLLM's API process outlives its dead engine by a few seconds)."""
    if server.process is None or server.process.poll() is not None or get_text(server.base_url + "/health", 30)[0] is None:
        print(f"  (restarting {server!r})", flush=True)
        server.restart(kill=True)
        server.wait_ready()
    return server


def client(server: ServerProcess, settings, decode, name: str) -> OpenAICompletionsDecoder:
    # vLLM refuses n > 1 at temperature 0 (HTTP 400): greedy rows are one request each
    return OpenAICompletionsDecoder(alive(server).base_url, MODEL, settings=settings, samples_per_request=1 if settings.greedy else 64,
                                    max_in_flight=4,
                                    request_timeout=300, name=name, decode=decode, retry=0)


def builder(servers: dict, side: str, setting: str, decode):
    def build(settings):
        subject = client(servers[side], settings, decode, f"vLLM server ({side})")
        if setting == MIXED:
            subject = amid_mixed_load(subject, servers[side], decode)
        elif side == "ngram_preemption":
            long = sd.SamplingSettings(temperature=1.0)
            subject = AmidLoad(subject, [Load(client(servers[side], long, decode, "load: long answers"), [LONG_PROMPT] * 4, 120)])
        return subject, client(servers["plain"], settings, decode, "vLLM server (plain)")

    return build


def amid_mixed_load(subject, server: ServerProcess, decode) -> AmidLoad:
    """``subject`` answered amid :data:`.settings.MIXED_LOAD` on the same ``server``: greedy rows, other temperatures,
    a presence penalty, on the cells' prompt and on one that drafts nothing, 8 rows of 8 tokens a request."""
    load = [Load(client(server, s, decode, f"load {s.label}"), [vllm_subjects.PROMPT if p == "same" else OTHER_PROMPT] * 8, 8)
            for s, p in MIXED_LOAD]
    return AmidLoad(subject, load)


def preemptions(server: ServerProcess) -> int | None:
    """The server's ``vllm:num_preemptions_total`` (None when it cannot be read)."""
    text, _ = get_text(server.base_url + "/metrics", 30)
    if text is None:
        return None
    total = None
    for line in text.splitlines():
        if line.startswith("vllm:num_preemptions_total"):
            total = (total or 0) + int(float(line.split()[-1]))
    return total


def with_preemptions(cell, before: int | None, after: int | None):
    """``cell`` with the preemptions its server counted from ``before`` to ``after`` (:func:`preemptions`) in its
    ``extra`` and detail ("?" when unread); a cell during which none happened says 0."""
    count = None if before is None or after is None else after - before
    cell.extra["preemptions"] = count
    cell.detail = f"{'?' if count is None else count} preemptions during the cell" + (f"; {cell.detail}" if cell.detail else "")
    return cell


def plan_of(methods, only) -> list[tuple[str, str]]:
    names = list(SETTINGS) + [MIXED, PROCESSOR]
    plan = []
    for method in methods:
        chosen = [n for n in (only or ONLY.get(method) or names) if n in (ONLY.get(method) or names)]
        plan += [(method, n) for n in sorted(chosen, key=lambda n: n in LAST.get(method, []))]
    return plan


def main(argv=None) -> int:
    names = list(SETTINGS) + [MIXED, PROCESSOR]
    args = runner.arguments(__doc__, 800, [m for m in SERVERS if m != "plain"], names, argv)
    from transformers import AutoTokenizer

    decode = AutoTokenizer.from_pretrained(smollm2_dir()).decode
    plan = plan_of(args.method, args.only)
    all_settings = {**SETTINGS, MIXED: sd.SamplingSettings(**BASE), PROCESSOR: logits_processor_setting()}
    servers = {name: start(name) for name in ["plain", *args.method]}
    try:
        for server in servers.values():
            server.wait_ready()

        def cell_of(number, method, name, budget):
            chosen = all_settings[name]
            if name in UNSEEDED.get(method, []):
                chosen = dataclasses.replace(chosen, seeded=False)
            before = preemptions(alive(servers[method]))
            cell = run_cell(ENGINE, SERVERS[method][3], name, chosen, builder(servers, method, name, decode), check_of(chosen),
                            prompts=[vllm_subjects.PROMPT], length=length_of(name), max_new_tokens=length_of(name), n=args.n,
                            tv=None, seed=1000 + number, budget=budget, keep=runner.keeper(ENGINE, method, name), eos_token_id=eos_of(chosen),
                            name=f"{ENGINE}, {SERVERS[method][3]}, {name}")
            return with_preemptions(cell, before, preemptions(servers[method])) if method == "ngram_preemption" else cell

        runner.run(plan, cell_of, file="vllm-server.json", engine="vLLM", n=args.n, append=args.append, resume=args.resume,
                   seconds_per_cell=SECONDS_PER_CELL, out=args.out, label=lambda m: SERVERS[m][3])
    finally:
        for server in servers.values():
            server.stop(keep_log=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
