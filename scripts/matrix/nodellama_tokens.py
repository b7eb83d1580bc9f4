"""node-llama-cpp 3.21.1 (npm, its prebuilt CPU addon) in the matrix, per token (issue 39): every setting of
:mod:`.settings` on the real prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly
prompt, answers of 32 tokens, every emitted token counted), judged by
:func:`specdec.conformance.token_cells.run_token_cell` through :mod:`.token_driver`.

Per setting: the control (node-llama-cpp without a token predictor against
:class:`specdec.adapters.nodellama.NodeLlamaOracle` - the engine's own law of each position on the true prefix, one
token at a time on its own build: :mod:`specdec.adapters.nodellama.nodellama_oracle` says why not llama-cpp-python's
build), run once and shared by the methods; then input lookup (``InputLookupTokenPredictor``, K = 4) and the draft model
(``DraftSequenceTokenPredictor`` on the same GGUF, K = 4, the target waiting for the K drafts) against the same oracle.
Both verify by a coupling (the target draws every position, a draft kept while it equals the draw before it:
:mod:`specdec.adapters.nodellama.nodellama_decoder`), lossless for temperature, top-k, top-p and min-p; under a
repetition, presence or frequency penalty a drafted position is sampled under its step's first history (a finding,
``scripts/findings/nodellama_penalty_at_drafted_positions.py``), so those cells should FAIL where drafts are kept.
What node-llama-cpp's ``evaluate`` cannot take is a ``REFUSED`` cell naming the adapter.  Run in ``.venv-llama``
(node-llama-cpp installed in ``.peers/nodellama`` by ``make peers-nodellama``)::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.matrix.nodellama_tokens [--tv 0.03] [--method lookup draft] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/nodellama-tokens.json``; ``--resume`` continues a stopped run at the next unfinished
cell.  Each side of a cell is one answer at a time through the worker (one sequence) and the oracle one token at a
time: about 20 tokens a second here, so a cell at TV 0.03 (about 70,000 tokens a side) takes about two hours.
"""

from __future__ import annotations

from specdec.decoding.models import GGUF_FILE, _gguf_dir

from .settings import SETTINGS
from .token_driver import TokenMatrix, run_matrix

ENGINE = "node-llama-cpp 3.21.1"
K = 4
METHODS = {"lookup": "input lookup K=4", "draft": "draft model (= target) K=4"}
MATRIX = TokenMatrix(__doc__, ENGINE, "node-llama-cpp", METHODS, SETTINGS, "nodellama-tokens.json", seconds_per_cell=7200,
                     seed_base=9000)


def gguf() -> str:
    return str(_gguf_dir() / GGUF_FILE)


def build(method, settings):
    from specdec.adapters.nodellama import NodeLlamaDecoder

    extra = dict(draft_min_tokens=K, min_confidence=0.0) if method == "draft" else {}
    control = NodeLlamaDecoder(gguf(), settings=settings)  # refuses what it cannot map before any process starts
    return NodeLlamaDecoder(gguf(), settings=settings, speculation=method, num_draft_tokens=K, **extra), control


def oracle_of(settings):
    from specdec.adapters.nodellama import NodeLlamaOracle

    return NodeLlamaOracle(gguf(), settings=settings)


def main(argv=None) -> int:
    return run_matrix(MATRIX, build, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
