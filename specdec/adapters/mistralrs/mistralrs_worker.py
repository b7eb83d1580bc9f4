"""The mistral.rs worker: ``python -m specdec.adapters.mistralrs.mistralrs_worker CONFIG_JSON``, one Runner in a process of its own.

Config: ``{"gguf_path", "gamma", "max_seqs", "threads"}`` (:class:`.mistralrs_decoder.MistralRsDecoder`'s arguments).  On
start it builds that decoder's Runner and writes ``{"ready": true, "eos": [...]}``; then for each request line
``{"prompts", "max_new_tokens", "request_args"}`` (the keywords of :func:`.settings_map.request_args`, made and checked
by the parent) it answers, on the stdout it was started with (the engine's own prints go to stderr), ``{"rows": [...]}`` (or ``{"error": ...}``).  Why a process per Runner:
:mod:`.mistralrs_process`.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    import os

    out = os.fdopen(os.dup(1), "w")  # the protocol's stdout; the engine's own prints (fd 1) go to stderr, the log
    os.dup2(2, 1)
    from .mistralrs_decoder import MistralRsDecoder

    config = json.loads(argv[0])
    decoder = MistralRsDecoder(config["gguf_path"], gamma=config.get("gamma"), max_seqs=config.get("max_seqs", 16),
                               threads=config.get("threads"))
    print(json.dumps({"ready": True, "eos": list(decoder.eos_token_ids)}), file=out, flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            decoder.request_args = dict(request["request_args"])
            rows = decoder(request["prompts"], request["max_new_tokens"], 0)
            answer = {"rows": rows}
        except Exception as error:  # answered, not raised: the parent raises it as a WorkerError
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
