"""vLLM 0.32's OpenAI server in the matrix, per token (issue 38): every setting of :mod:`.settings` on the real
prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly prompt, answers of 32
tokens, every emitted token counted), judged by :func:`specdec.conformance.token_cells.run_token_cell` through
:mod:`.token_driver`.

Per setting: the control (the plain server against
:class:`specdec.adapters.vllm.settings_oracle.VLLMSettingsOracle` - vLLM 0.32's sampler restated on the same weights'
float32 rows through transformers, floor 1e-4), run once and shared by the methods; then each speculative server
(:data:`.vllm_server.SERVERS`: n-gram K = 4 and the draft model K = 2, both with the #55005 workaround) against the same
oracle.  The servers are those of :mod:`.vllm_server` (plain on core 0, speculative on core 1), 64 samples per request,
4 requests in flight; the oracle runs one torch thread.  A user logits processor is refused by the adapter (a server
takes processors by name at start-up).  Run in the peers environment::

    HF_HUB_OFFLINE=1 .venv-peers/bin/python -m scripts.matrix.vllm_server_tokens [--tv 0.03] [--method ngram draft_model] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/vllm-server-tokens.json``.  At the base setting the n-gram server's cell at TV 0.03
took about 8 minutes (issue 38); under penalties on real prompts the n-gram server drafts rarely (18 drafts in 10,640
tokens under a repetition penalty of 1.3): such a cell's drafted tokens say how much of it speculation made.
"""

from __future__ import annotations

from specdec.decoding.models import load_smollm2

from .settings import SETTINGS
from .token_driver import TokenMatrix, run_with_servers
from .vllm_server import ENGINE, SERVERS, client, start

METHODS = {name: SERVERS[name][3] for name in ("ngram", "draft_model")}
MATRIX = TokenMatrix(__doc__, ENGINE, "vLLM", METHODS, SETTINGS, "vllm-server-tokens.json", seconds_per_cell=900,
                     seed_base=7000, rows_per_call=256)


def main(argv=None) -> int:
    import torch

    model, tokenizer = load_smollm2()
    torch.set_num_threads(1)  # the plain server's engine has core 0: two threads here ran the oracle's forward 9x slower

    def pair(servers, method, settings):
        return (client(servers[method], settings, tokenizer.decode, f"vLLM server ({method})"),
                client(servers["plain"], settings, tokenizer.decode, "vLLM server (plain)"))

    def oracle_of(settings):
        from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle

        return VLLMSettingsOracle(model, settings, tokenizer=tokenizer)

    return run_with_servers(MATRIX, start, pair, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
