"""llama-cpp-python 0.3.36 in the matrix: prompt lookup (K = 4) against the same engine without a draft, every
setting of :mod:`.settings` plus a user logits processor that reads the history.  Run in its environment::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.matrix.llama_cpp [--n 500] [--only SETTING ...] [--append]

Both sides are :class:`specdec.adapters.llama_cpp.in_process.LlamaCppDecoder` on SmolLM2's Q4_1 GGUF in this
process (one thread each); rows are decoded one at a time, so there is no mixed batch to test here.
"""

from __future__ import annotations

import specdec as sd
from fixtures import llama_subjects, vllm_subjects
from specdec.adapters.llama_cpp.in_process import LlamaCppDecoder
from specdec.conformance.matrix import run_cell

from . import runner
from .settings import SETTINGS, check_of, eos_of, length_of, logits_processor_setting

ENGINE = "llama-cpp-python 0.3.36"
METHODS = {"lookup": "prompt lookup K=4"}
SECONDS_PER_CELL = 90


def all_settings() -> dict:
    return {**SETTINGS, "user logits processor": logits_processor_setting()}


def build(settings):
    def decoder(k, name):
        return LlamaCppDecoder(llama_subjects.gguf_path(), settings=settings, num_pred_tokens=k, n_ctx=256, name=name,
                               llama_args={"n_threads": 1})

    return decoder(4, "llama.cpp, prompt lookup K=4"), decoder(None, "llama.cpp, no draft")


def main(argv=None) -> int:
    settings = all_settings()
    args = runner.arguments(__doc__, 500, list(METHODS), list(settings), argv)

    def cell_of(number, method, name, budget):
        built = []

        def make(s):
            built.extend(build(s))
            return built[0], built[1]

        try:
            return run_cell(ENGINE, METHODS[method], name, settings[name], make, check_of(settings[name]), prompts=[vllm_subjects.PROMPT],
                            length=length_of(name), max_new_tokens=length_of(name), n=args.n, tv=None, seed=2000 + number,
                            budget=budget, keep=runner.keeper(ENGINE, method, name), rows_per_call=100, eos_token_id=eos_of(settings[name]), name=f"{ENGINE}, {METHODS[method]}, {name}")
        finally:
            for decoder in built:
                decoder.close()

    plan = [(m, name) for m in args.method for name in (args.only or list(settings))]
    runner.run(plan, cell_of, file="llama-cpp.json", engine="llama.cpp", n=args.n, append=args.append, resume=args.resume,
               seconds_per_cell=SECONDS_PER_CELL, out=args.out, label=METHODS.get)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
