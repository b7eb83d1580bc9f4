"""ONNX Runtime GenAI (onnxruntime-genai 0.18.0 on onnxruntime 1.32.0, CPU), one module per piece (issue 39):

* :mod:`.speculation` - :class:`Speculation`, the n-gram and draft-model methods and their options (MTP refused);
* :mod:`.search_options` - a :class:`specdec.SamplingSettings` record as the engine's search options, refusals by name;
* :mod:`.engine_law` - the law the engine samples from, given a logits row (its CPU sampler in numpy);
* :mod:`.genai_decoder` - :class:`OrtGenAIDecoder`, the engine behind the Decoder Protocol, its verification rule cited;
* :mod:`.genai_oracle` - :class:`OrtGenAIOracle`, the engine's own per-token law from its logits.

The model is an ONNX export made locally: ``make .peers/ortgenai/.exported`` (``scripts/export_ortgenai.py``).
"""

from .genai_decoder import DISTRIBUTIONS, SUPPORTED_ONNXRUNTIME, SUPPORTED_ORTGENAI, OrtGenAIDecoder, row_seeds  # noqa: F401
from .genai_oracle import FLOOR, OrtGenAIOracle  # noqa: F401
from .speculation import Speculation  # noqa: F401

__all__ = ["DISTRIBUTIONS", "FLOOR", "SUPPORTED_ONNXRUNTIME", "SUPPORTED_ORTGENAI", "OrtGenAIDecoder", "OrtGenAIOracle",
           "Speculation", "row_seeds"]
