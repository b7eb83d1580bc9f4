"""llama.cpp's own ``llama-server`` in the matrix, per token (issue 38): every setting of :mod:`.settings` on the
real prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly prompt, answers of 32
tokens, every emitted token counted), judged by :func:`specdec.conformance.token_cells.run_token_cell` through
:mod:`.token_driver`.

Per setting: the control (the server without speculation against
:class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle` under the record - llama.cpp's sampler chain restated on the
same GGUF's rows computed by llama-cpp-python 0.3.36, built from the same vendored llama.cpp commit, the penalties over
the prompt and the answer as the server's ``init_sampler`` has them, the end-of-generation tokens banned as its
``ignore_eos`` bans them), run once and
shared by the methods: only where it PASSes does the oracle judge ``ngram-simple`` and ``draft-simple`` (the servers
of :mod:`.llama_server`, K = 4, 4 slots, one thread each).  What the server has no field for is REFUSED by the adapter,
what the oracle cannot restate by the oracle.  Build the server first (``make llama-server``), then::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.matrix.llama_server_tokens [--tv 0.03] [--method ngram draft] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/llama-server-tokens.json``.
"""

from __future__ import annotations

from specdec.adapters.llama_cpp.llama_server import DEFAULT_BINARY
from specdec.adapters.llama_cpp.oracle import LlamaCppOracle

from fixtures import llama_subjects

from .llama_server import ENGINE, METHODS, client, start
from .settings import SETTINGS
from .token_driver import TokenMatrix, run_with_servers

N_CTX = 512  # the longest prompt (104 tokens) and its answer, with room
# llama-server turns flash attention on by default ("auto"), llama-cpp-python (the oracle) off; with it on the plain
# server's control FAILs on the real prompts at positions 17-32 (seed 8010, 16 answers: p < 1e-16, with -fa auto and
# -fa on alike), with it off the same control does not (2026-11-27): the servers are judged with flash attention off
FLASH_ATTENTION = ("-fa", "off")
MATRIX = TokenMatrix(__doc__, ENGINE, "llama.cpp", METHODS, SETTINGS, "llama-server-tokens.json", seconds_per_cell=1800,
                     seed_base=8000)


def main(argv=None) -> int:
    if not DEFAULT_BINARY.exists():
        raise SystemExit(f"{DEFAULT_BINARY} is missing: build it with `make llama-server`")

    def client_of(server, name, settings):
        return client(server, settings, "llama-server (no draft)" if name == "plain" else f"llama-server ({METHODS[name]})")

    def oracle_of(settings):
        # llama-server accepts the prompt into its chain: the penalties' window spans prompt and answer
        return LlamaCppOracle(llama_subjects.gguf_path(), settings=settings, n_ctx=N_CTX, prompt_accepted=True, eog_banned=True)

    return run_with_servers(MATRIX, lambda name: start(None if name == "plain" else name, FLASH_ATTENTION), client_of, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
