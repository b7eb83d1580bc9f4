"""vLLM 0.32's OpenAI server in the matrix, per token (issue 38): every setting of :mod:`.settings` on the real
prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly prompt, answers of 32
tokens, every emitted token counted), judged by :func:`specdec.conformance.token_cells.run_token_cell` through
:mod:`.token_driver`.

Per setting: the control (the plain server against
:class:`specdec.adapters.vllm.settings_oracle.VLLMSettingsOracle` - vLLM 0.32's sampler restated on the same weights'
float32 rows through transformers, floor 1e-4), run once and shared by the methods; then each speculative server
against the same oracle: n-gram K = 4 and the draft model K = 2 (:data:`.vllm_server.SERVERS`, both with the #55005
workaround), and the n-gram server under three conditions that must not change the law - preemption (12 KV blocks of
32 tokens, which the cell's own requests overflow; the preemptions counted), chunked prefill of 16 tokens (asked
unseeded: seeded requests kill it, B17) and a mixed batch (every request amid other settings' requests,
:func:`.vllm_server.amid_mixed_load`).  The servers are those of :mod:`.vllm_server` (plain on core 0, started only
when a control is not stored; speculative on core 1), 64 samples per request, 4 requests in flight; the oracle runs
one torch thread.  A user logits processor is refused by the adapter (a server takes processors by name at start-up).
Run in the peers environment::

    HF_HUB_OFFLINE=1 .venv-peers/bin/python -m scripts.matrix.vllm_server_tokens [--tv 0.03] [--method ngram draft_model ngram_preemption ngram_chunked ngram_mixed] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/vllm-server-tokens.json``.  At the base setting the n-gram server's cell at TV 0.03
took about 8 minutes (issue 38); under penalties on real prompts the n-gram server drafts rarely (18 drafts in 10,640
tokens under a repetition penalty of 1.3): such a cell's drafted tokens say how much of it speculation made.
"""

from __future__ import annotations

import dataclasses

from specdec.decoding.models import load_smollm2

from .settings import SETTINGS
from .token_driver import TokenMatrix, run_with_servers
from .vllm_server import ENGINE, SERVERS, alive, amid_mixed_load, client, preemptions, start, with_preemptions

# The server conditions under which the law must not change (issue 38, item 3): a KV cache of 12 blocks of 32 tokens,
# which the cells' own 256 answers in flight overflow (the cell counts the preemptions), and chunked prefill in
# chunks of 16 tokens, where seeded requests kill 0.32's CPU engine (B17): its requests go unseeded; and the n-gram
# server (a server of its own) with every cell amid a mixed load (greedy rows, other temperatures, a penalty).
UNSEEDED_METHODS = {"ngram_chunked"}
SERVER_OF = {"ngram_mixed": "ngram"}  # a method whose server is another method's configuration
METHODS = {**{name: SERVERS[name][3] for name in ("ngram", "draft_model", "ngram_preemption")},
           "ngram_chunked": SERVERS["ngram_chunked"][3] + ", unseeded (B17)",
           "ngram_mixed": SERVERS["ngram"][3] + ", amid a mixed batch"}
MATRIX = TokenMatrix(__doc__, ENGINE, "vLLM", METHODS, SETTINGS, "vllm-server-tokens.json", seconds_per_cell=900,
                     seed_base=7000, rows_per_call=256)


def main(argv=None) -> int:
    import torch

    model, tokenizer = load_smollm2()
    torch.set_num_threads(1)  # the plain server's engine has core 0: two threads here ran the oracle's forward 9x slower

    def client_of(server, name, settings):
        if name in UNSEEDED_METHODS:
            settings = dataclasses.replace(settings, seeded=False)
        made = client(server, settings, tokenizer.decode, f"vLLM server ({name})")
        return amid_mixed_load(made, server, tokenizer.decode) if name == "ngram_mixed" else made

    def oracle_of(settings):
        from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle

        return VLLMSettingsOracle(model, settings, tokenizer=tokenizer)

    return run_with_servers(MATRIX, lambda name: start(SERVER_OF.get(name, name)), client_of, oracle_of, argv,
                            watch=count_preemptions)


def count_preemptions(servers, method):
    """For the preemption server: the cell with the preemptions its server counted while it ran."""
    if method != "ngram_preemption":
        return lambda cell: cell
    before = preemptions(alive(servers[method]))
    return lambda cell: with_preemptions(cell, before, preemptions(servers[method]))


if __name__ == "__main__":
    raise SystemExit(main())
