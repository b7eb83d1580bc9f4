"""ONNX Runtime GenAI (onnxruntime-genai 0.18.0) in the matrix, per token (issues 38, 39): every setting of
:mod:`.settings` on the real prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly
prompt, answers of 32 tokens, every emitted token counted), judged by
:func:`specdec.conformance.token_cells.run_token_cell` through :mod:`.token_driver`.

Per setting: the control (the engine without speculation against
:class:`specdec.adapters.ortgenai.OrtGenAIOracle`, the engine's own logits through its CPU sampler restated in numpy,
the repetition penalty over the true prefix included; floor 1e-3), run once and shared by the methods; then each
method against the same oracle: n-gram (n = 3, K = 4), the 4-layer draft (K = 4), the target as its own draft (K = 4).
What the engine has no search option for (min-p, presence and frequency penalties, bias, bad words, allowed ids, a
minimum of new tokens, stop tokens other than its EOS, samples per request) is a ``REFUSED`` cell naming the adapter.
Rows end after the model's EOS (id 2): the checks absorb it.  Run in its environment::

    HF_HUB_OFFLINE=1 .venv-ortgenai/bin/python -m scripts.matrix.ortgenai_tokens [--tv 0.03] [--method ngram draft_model self_draft] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/ortgenai-tokens.json``; ``--resume`` continues a stopped run at the next unfinished cell.
"""

from __future__ import annotations

from specdec.adapters.ortgenai import OrtGenAIOracle

from fixtures import ortgenai_subjects as subjects

from .settings import SETTINGS
from .token_driver import TokenMatrix, run_matrix

ENGINE = "onnxruntime-genai 0.18.0"
METHODS = {"ngram": "n-gram n=3 K=4", "draft_model": "draft model (4 layers) K=4", "self_draft": "self draft K=4"}
MATRIX = TokenMatrix(__doc__, ENGINE, "onnxruntime-genai", METHODS, SETTINGS, "ortgenai-tokens.json",
                     seconds_per_cell=3600, seed_base=6000,
                     eos=lambda settings: list(settings.stop_token_ids) or [subjects.EOS])


def build(method, settings):
    return subjects.build(method, settings)


def oracle_of(settings):
    return OrtGenAIOracle(subjects.model_dir(), settings=settings)


def main(argv=None) -> int:
    return run_matrix(MATRIX, build, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
