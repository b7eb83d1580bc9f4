"""vLLM 0.32's in-process engine (``vllm.LLM``) in the matrix, per token (issue 38): every setting of :mod:`.settings`
on the real prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly prompt, answers
of 32 tokens, every emitted token counted), judged by :func:`specdec.conformance.token_cells.run_token_cell` through
:mod:`.token_driver`.  Run in the peers environment, one method per process (vLLM builds one engine per process)::

    HF_HUB_OFFLINE=1 .venv-peers/bin/python -m scripts.matrix.vllm_engine_tokens --method ngram [--tv 0.03] [--only SETTING ...] [--resume]

The subject is :class:`specdec.adapters.vllm.offline.VLLMDecoder` with the speculation of :mod:`.vllm_engine`
(n-gram K = 4 or the draft model K = 2, both with the #55005 workaround), built once and asked with each setting; a
call's 256 rows go to ``LLM.generate`` at once.  The oracle is the server matrix's
(:class:`specdec.adapters.vllm.settings_oracle.VLLMSettingsOracle`: vLLM 0.32's sampler restated on the same weights'
float32 rows, floor 1e-4, one torch thread).  The engine without speculation is the plain server of :mod:`.vllm_server`
(the same engine core; in process vLLM allows one engine): its controls are the server matrix's
(``vllm-server-tokens.json``, ``control_files``: same versions, oracle, prompts, length and TV), so the plain server
starts only for a setting that file has no PASSed control of (:class:`.token_driver.ServerOnDemand`).  The cells go
to ``docs/data/matrix/vllm-engine-tokens.json``.  A cell at TV 0.03 (about 31,000 tokens) took 13-15 minutes beside an
OpenVINO cell on the 2 cores (2026-11-30).
"""

from __future__ import annotations

from . import runner, vllm_engine, vllm_server
from .settings import SETTINGS
from .token_driver import ServerOnDemand, TokenMatrix, run_matrix

METHODS = {name: vllm_engine.METHODS[name][2] for name in ("ngram", "draft_model")}
MATRIX = TokenMatrix(__doc__, vllm_engine.ENGINE, "vLLM", METHODS, SETTINGS, "vllm-engine-tokens.json",
                     seconds_per_cell=900,  # the subject alone: the server matrix's draft-model cells (control shared) took 434-1,273 s
                     seed_base=8000, rows_per_call=256, control_files=("vllm-server-tokens.json",))


def main(argv=None) -> int:
    args = runner.arguments(MATRIX.doc, None, list(METHODS), list(MATRIX.settings), argv, default_tv=MATRIX.default_tv)
    method = vllm_engine.one_method(args)
    import torch

    from specdec.decoding.models import load_smollm2

    model, tokenizer = load_smollm2()
    torch.set_num_threads(1)  # the engine has core 1, the plain server (when it runs) core 0
    plain = ServerOnDemand(lambda: vllm_server.start("plain"),
                           lambda server, settings: vllm_server.client(server, settings, tokenizer.decode, "vLLM server (plain)"))
    subject = vllm_engine.engine(method)
    try:
        def build(method_name, settings):
            return subject.with_settings(settings, name=f"vLLM in process ({method_name})"), plain.with_settings(settings)

        def oracle_of(settings):
            from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle

            return VLLMSettingsOracle(model, settings, tokenizer=tokenizer)

        return run_matrix(MATRIX, build, oracle_of, argv)
    finally:
        plain.stop()


if __name__ == "__main__":
    raise SystemExit(main())
