"""llama.cpp's own ``llama-server`` in the matrix: speculation against the same server without it, every setting of
:mod:`.settings`.  Build the server first (``make llama-server``), then run in llama.cpp's environment::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.matrix.llama_server [--method ngram draft] [--n 400] [--only SETTING ...] [--append]

Methods: ``ngram`` (``--spec-type ngram-simple``: 2 tokens matched, K = 4 drafted) and ``draft`` (``draft-simple``: the
same GGUF drafting for itself, K = 4).  Every server runs SmolLM2's Q4_1 GGUF with 4 slots and one thread; the
subject's requests ask ``n_cmpl`` = 4 completions each, 4 in flight, so its slots are batched together
(:mod:`specdec.adapters.llama_cpp.llama_server`).  llama-server drafts no further than the tokens an answer has
left, so each answer asks K more tokens than the check tests (the drafts then reach the tested positions).  The settings the server has no field for (minimum length, allowed ids,
stop ids, bad words of two tokens, a Python processor) are REFUSED by the adapter, by name.
"""

from __future__ import annotations

from fixtures import llama_subjects, vllm_subjects
from specdec.adapters.llama_cpp.llama_server import DEFAULT_BINARY, LlamaServerDecoder, llama_server_argv
from specdec.adapters.openai.process import ServerProcess, free_port
from specdec.conformance.matrix import run_cell

from . import runner
from .settings import SETTINGS, check_of, eos_of, length_of, logits_processor_setting

ENGINE = "llama.cpp llama-server (0c1e570)"
METHODS = {"ngram": "ngram-simple K=4", "draft": "draft-simple K=4 (itself)"}
PROCESSOR = "user logits processor"
SECONDS_PER_CELL = 70
K = 4  # drafted tokens at most; llama-server drafts no further than the tokens left, so each answer asks K more than it tests


def start(speculation: str | None, extra: tuple[str, ...] = ()) -> ServerProcess:
    port = free_port()
    argv = llama_server_argv(llama_subjects.gguf_path(), port, speculation=speculation, num_draft_tokens=K, extra=extra)
    runner.OUT.mkdir(parents=True, exist_ok=True)
    return ServerProcess(argv, port=port, ready_path="/health", startup_timeout=300,
                         log_path=runner.OUT / f"llama-server-{speculation or 'plain'}.log").start()


def client(server: ServerProcess, settings, name: str) -> LlamaServerDecoder:
    if server.process is None or server.process.poll() is not None:
        print(f"  (restarting {server!r})", flush=True)
        server.restart(kill=True)
        server.wait_ready()
    return LlamaServerDecoder(server.base_url, settings=settings, samples_per_request=4, max_in_flight=4, request_timeout=300,
                              name=name)


def main(argv=None) -> int:
    if not DEFAULT_BINARY.exists():
        raise SystemExit(f"{DEFAULT_BINARY} is missing: build it with `make llama-server`")
    names = list(SETTINGS) + [PROCESSOR]
    args = runner.arguments(__doc__, 400, list(METHODS), names, argv)
    all_settings = {**SETTINGS, PROCESSOR: logits_processor_setting()}
    servers = {name: start(None if name == "plain" else name) for name in ["plain", *args.method]}
    try:
        for server in servers.values():
            server.wait_ready()

        def cell_of(number, method, name, budget):
            chosen = all_settings[name]

            def build(settings):
                return (client(servers[method], settings, f"llama-server ({METHODS[method]})"),
                        client(servers["plain"], settings, "llama-server (no draft)"))

            return run_cell(ENGINE, METHODS[method], name, chosen, build, check_of(chosen), prompts=[vllm_subjects.PROMPT],
                            length=length_of(name), max_new_tokens=length_of(name) + K, n=args.n, tv=None, seed=4000 + number,
                            budget=budget, keep=runner.keeper(ENGINE, method, name), eos_token_id=eos_of(chosen),
                            name=f"{ENGINE}, {METHODS[method]}, {name}")

        plan = [(m, name) for m in args.method for name in (args.only or names)]
        runner.run(plan, cell_of, file="llama-server.json", engine="llama.cpp", n=args.n, append=args.append, resume=args.resume,
                   seconds_per_cell=SECONDS_PER_CELL, out=args.out, label=METHODS.get)
    finally:
        for server in servers.values():
            server.stop(keep_log=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
