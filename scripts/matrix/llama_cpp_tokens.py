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

from fixtures import llama_subjects

from .llama_cpp import ENGINE, METHODS, all_settings
from .token_driver import TokenMatrix, run_matrix

N_CTX = 512  # the longest prompt (104 tokens) and its answer, with room
MATRIX = TokenMatrix(__doc__, ENGINE, "llama.cpp", METHODS, all_settings(), "llama-cpp-tokens.json",
                     seconds_per_cell=3000,  # control and subject about 25 minutes each at TV 0.03 (40,264 tokens in 25 minutes, stop 35)
                     ab_n=100)  # answers per prompt and side of the A/B check (400 per side over the 4 prompts)


def build(method, settings):
    def decoder(k, name):
        return LlamaCppDecoder(llama_subjects.gguf_path(), settings=settings, num_pred_tokens=k, n_ctx=N_CTX, name=name,
                               llama_args={"n_threads": 1})

    return decoder(4, "llama.cpp, prompt lookup K=4"), decoder(None, "llama.cpp, no draft")


def oracle_of(settings):
    return LlamaCppOracle(llama_subjects.gguf_path(), settings=settings, n_ctx=N_CTX)


def main(argv=None) -> int:
    return run_matrix(MATRIX, build, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
