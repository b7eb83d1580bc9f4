"""OpenVINO GenAI (openvino-genai 2026.4.1.0) in the matrix, per token (issues 38, 39): every setting of
:mod:`.settings` on the real prompts of :mod:`.token_prompts` (three chat-templated task kinds and the drafting-friendly
prompt, answers of 32 tokens, every emitted token counted), judged by
:func:`specdec.conformance.token_cells.run_token_cell` through :mod:`.token_driver`.

Per setting: the control (the pipeline without speculation against
:class:`specdec.adapters.openvino.ir_oracle.OpenVINOOracle`, OpenVINO's own IR forward of the same GGUF under its
sampler's stages; pipeline and oracle both under ``ir_oracle.EXACT_PROPERTIES`` - f32, an f32 KV cache, no dynamic
quantisation - where they agree to 3e-4 in log-probability, against up to 1.2 under the CPU's defaults), run once and
shared by the methods; then prompt lookup (K = 4, n-grams up to 2) and the draft model
(the IR copy of the same GGUF: draft = target, K = 4) against the same oracle.  Prompt lookup's rule is sample-match
(lossless); the draft model's is not (``Sampler::validate_candidate``: :mod:`specdec.adapters.openvino.pipeline`), so its
cells should FAIL.  What ``GenerationConfig`` cannot take (bias, bad words, allowed ids, a user processor, stop tokens
and a minimum of new tokens, samples per request, unseeded requests) is a ``REFUSED`` cell naming the adapter; what the
oracle does not restate, naming the oracle.  Run in its environment::

    HF_HUB_OFFLINE=1 .venv-openvino/bin/python -m scripts.matrix.openvino_tokens [--tv 0.03] [--method prompt_lookup draft_model] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/openvino-tokens.json``; ``--resume`` continues a stopped run at the next unfinished cell.
"""

from __future__ import annotations

from fixtures import openvino_subjects as ovs

from .settings import SETTINGS
from .token_driver import TokenMatrix, run_matrix

ENGINE = "OpenVINO GenAI 2026.4.1.0"
METHODS = {"prompt_lookup": "prompt lookup K=4", "draft_model": "draft model (= target) K=4"}
MATRIX = TokenMatrix(__doc__, ENGINE, "OpenVINO GenAI", METHODS, SETTINGS, "openvino-tokens.json", seconds_per_cell=5400,
                     seed_base=5000)


def build(method, settings):
    from specdec.adapters.openvino.ir_oracle import EXACT_PROPERTIES

    return ovs.engine(method, settings, properties=EXACT_PROPERTIES), ovs.engine(None, settings, properties=EXACT_PROPERTIES)


def oracle_of(settings):
    from specdec.adapters.openvino.ir_oracle import EXACT_PROPERTIES, OpenVINOOracle

    return OpenVINOOracle(ovs.draft_dir(), settings=settings, properties=EXACT_PROPERTIES)


def main(argv=None) -> int:
    return run_matrix(MATRIX, build, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
