"""OpenVINO GenAI (openvino-genai 2026.4.1.0) as a speculative decoding subject (issue 39): :mod:`.pipeline` (the
pipeline behind the Decoder Protocol, and how the engine verifies drafts), :mod:`.generation_config` (the sampling
record as a ``GenerationConfig``), :mod:`.ir_copy` (the IR folder a draft model needs), :mod:`.ir_oracle` (the engine's
own law of every next token), :mod:`.penalties` (its penalties, restated for that law)."""

from .pipeline import DISTRIBUTIONS, METHODS, SUPPORTED_OPENVINO_GENAI, OpenVINODecoder
from .generation_config import checked_settings, generation_config
from .ir_copy import default_ir_dir, ir_copy
from .ir_oracle import OpenVINOOracle, openvino_law
from .penalties import openvino_penalised

__all__ = ["DISTRIBUTIONS", "METHODS", "SUPPORTED_OPENVINO_GENAI", "OpenVINODecoder", "OpenVINOOracle", "checked_settings",
           "default_ir_dir", "generation_config", "ir_copy", "openvino_law", "openvino_penalised"]
