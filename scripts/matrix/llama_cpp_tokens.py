"""llama-cpp-python 0.3.36 in the matrix, per token (issue 38): every setting of :mod:`.llama_cpp`, judged by
:func:`specdec.conformance.token_cells.run_token_cell` on real prompts (:mod:`.token_prompts`: three chat-templated
task kinds and the drafting-friendly prompt, answers of 32 tokens, every emitted token counted, strata by position).

Per cell: the control (llama.cpp without a draft against :class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle`
under the cell's record), then - only when the control PASSes - prompt lookup K = 4 against the same oracle, and
``check_ab`` beside it on the first two tokens.  Run in its environment::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.matrix.llama_cpp_tokens [--tv 0.03] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/llama-cpp-tokens.json``; ``--resume`` continues a stopped run at the next unfinished
cell.  llama-cpp-python decodes one answer at a time (about 25 tokens a second here, oracle included), so a cell at a
per-token TV of 0.03 (about 40,000 tokens for control and subject each) takes about 50 minutes on this 2-core CPU
(extrapolated from stop 35's 40,264 tokens in 25 minutes): the issue's 5 minutes per cell needs an engine that batches
answers.  ``--tv 0.1`` runs a cell in a few minutes.
"""

from __future__ import annotations

from specdec.adapters.llama_cpp.in_process import LlamaCppDecoder
from specdec.adapters.llama_cpp.oracle import LlamaCppOracle
from specdec.conformance.token_cells import run_token_cell

from fixtures import llama_subjects

from . import runner
from .llama_cpp import ENGINE, METHODS, all_settings
from .settings import eos_of
from .token_prompts import LENGTH, token_prompts

TV = 0.03  # the per-token TV
SECONDS_PER_CELL = 3000  # control and subject about 25 minutes each at TV 0.03 (40,264 tokens in 25 minutes, stop 35)
N_CTX = 512  # the longest prompt (104 tokens) and its answer, with room
AB_N = 100  # answers per prompt and side of the A/B check beside the per-token one (400 per side over the 4 prompts)
CHECKS_PER_CELL = 24  # the control's and the subject's per-token checks (P1, P3 strata, P7) and the A/B check's


def build(settings):
    def decoder(k, name):
        return LlamaCppDecoder(llama_subjects.gguf_path(), settings=settings, num_pred_tokens=k, n_ctx=N_CTX, name=name,
                               llama_args={"n_threads": 1})

    return decoder(4, "llama.cpp, prompt lookup K=4"), decoder(None, "llama.cpp, no draft")


def main(argv=None) -> int:
    settings = {name: s for name, s in all_settings().items() if not s.greedy}  # greedy cells: row-by-row equality (.llama_cpp)
    args = runner.arguments(__doc__, None, list(METHODS), list(settings), argv, default_tv=TV)
    prompts = [list(p) for p in token_prompts()]

    def cell_of(number, method, name, budget):
        built = []

        def make(s):
            built.extend(build(s))
            return built[0], built[1]

        def oracle_of(s):
            oracle = LlamaCppOracle(llama_subjects.gguf_path(), settings=s, n_ctx=N_CTX)
            built.append(oracle)
            return oracle

        try:
            return run_token_cell(ENGINE, METHODS[method], name, settings[name], make, oracle_of, prompts=prompts, length=LENGTH,
                                  tv=args.tv, seed=4000 + 10 * number, budget=budget, eos_token_id=eos_of(settings[name]),
                                  rows_per_call=16, ab_n=AB_N, keep=lambda kind, report: runner.keeper(ENGINE, method, f"{name} {kind}")(report))
        finally:
            for made in built:
                made.close()

    plan = [(m, name) for m in args.method for name in (args.only or list(settings))]
    runner.run(plan, cell_of, file="llama-cpp-tokens.json", engine="llama.cpp", n=None, append=args.append, resume=args.resume,
               seconds_per_cell=SECONDS_PER_CELL * (TV / args.tv) ** 2, out=args.out, checks_per_cell=CHECKS_PER_CELL, tv=args.tv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
