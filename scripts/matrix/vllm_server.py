"""vLLM 0.32's OpenAI server in the matrix: speculation against the same server without it, every setting of
:mod:`.settings`, plus the base setting amid a mixed batch.  Run in the peers environment::

    HF_HUB_OFFLINE=1 .venv-peers/bin/python -m scripts.matrix.vllm_server [--method ngram draft_model ngram_shipped]
        [--n 800] [--only SETTING ...] [--append]

Methods: ``ngram`` (K = 4, with the #55005 workaround), ``draft_model`` (SmolLM2 drafting for itself, K = 2,
probabilistic drafts, with the workaround) and ``ngram_shipped`` (as shipped: only the greedy settings, the
ones B15 leaves alone).  The plain server is pinned to core 0, the speculative ones to core 1; a server that
dies during a cell is restarted before the next, and the cell is an ERROR with the failure's first line.
"""

from __future__ import annotations

import sys

import specdec as sd
from fixtures import vllm_server, vllm_subjects
from specdec.adapters.background_load import AmidLoad, Load
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.process import ServerProcess, free_port
from specdec.adapters.vllm.server import vllm_server_argv
from specdec.conformance.matrix import run_cell
from specdec.decoding.models import smollm2_dir

from . import runner
from .settings import BASE, GREEDY, MIXED_LOAD, OTHER_PROMPT, SETTINGS, check_of, eos_of, length_of, logits_processor_setting

MODEL = "smollm2"
ENGINE = "vLLM 0.32 server"
MIXED = "mixed batch"
PROCESSOR = "user logits processor"  # refused by the adapter: a server takes processors by name at start-up
# name: (speculative config, #55005 workaround, core, the method's name in the table)
SERVERS = {"plain": (lambda: None, False, "0", "none"),
           "ngram": (lambda: vllm_subjects.NGRAM, True, "1", "n-gram K=4 (#55005 workaround)"),
           "draft_model": (vllm_subjects.draft_model_config, True, "1", "draft model K=2 (#55005 workaround)"),
           "ngram_shipped": (lambda: vllm_subjects.NGRAM, False, "1", "n-gram K=4 (as shipped)")}
SECONDS_PER_CELL = 150  # n = 800 per side on 2 shared cores


def start(name: str) -> ServerProcess:
    spec, fixed, core, _ = SERVERS[name]
    port = free_port()
    argv = vllm_server_argv(smollm2_dir(), port, python=sys.executable, speculative_config=spec(), served_model_name=MODEL,
                            max_model_len=vllm_subjects.ENGINE["max_model_len"], module="fixtures.vllm_server")
    env = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(runner.OUT.parents[1]),
           "VLLM_CPU_OMP_THREADS_BIND": core, **({vllm_server.FIX_ENV: "1"} if fixed else {})}
    runner.OUT.mkdir(parents=True, exist_ok=True)
    return ServerProcess(argv, port=port, env=env, startup_timeout=600, log_path=runner.OUT / f"vllm-{name}.log").start()


def alive(server: ServerProcess) -> ServerProcess:
    """The server, restarted if it died (a crashing setting must not take the next cells with it)."""
    if server.process is None or server.process.poll() is not None:
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
            load = [Load(client(servers[side], s, decode, f"load {s.label}"), [vllm_subjects.PROMPT if p == "same" else OTHER_PROMPT] * 8, 8)
                    for s, p in MIXED_LOAD]
            subject = AmidLoad(subject, load)
        return subject, client(servers["plain"], settings, decode, "vLLM server (plain)")

    return build


def main(argv=None) -> int:
    names = list(SETTINGS) + [MIXED, PROCESSOR]
    args = runner.arguments(__doc__, 800, [m for m in SERVERS if m != "plain"], names, argv)
    from transformers import AutoTokenizer

    decode = AutoTokenizer.from_pretrained(smollm2_dir()).decode
    plan = [(m, name) for m in args.method for name in (args.only or names) if m != "ngram_shipped" or name in GREEDY]
    all_settings = {**SETTINGS, MIXED: sd.SamplingSettings(**BASE), PROCESSOR: logits_processor_setting()}
    servers = {name: start(name) for name in ["plain", *args.method]}
    try:
        for server in servers.values():
            server.wait_ready()

        def cell_of(number, method, name, budget):
            chosen = all_settings[name]
            return run_cell(ENGINE, SERVERS[method][3], name, chosen, builder(servers, method, name, decode), check_of(chosen),
                            prompts=[vllm_subjects.PROMPT], length=length_of(name), max_new_tokens=length_of(name), n=args.n,
                            tv=None, seed=1000 + number, budget=budget, keep=runner.keeper(ENGINE, method, name), eos_token_id=eos_of(chosen),
                            name=f"{ENGINE}, {SERVERS[method][3]}, {name}")

        runner.run(plan, cell_of, file="vllm-server.json", engine="vLLM", n=args.n, append=args.append, seconds_per_cell=SECONDS_PER_CELL)
    finally:
        for server in servers.values():
            server.stop(keep_log=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
