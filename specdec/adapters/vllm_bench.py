"""Compatibility alias (until 0.3): this module moved to specdec.adapters.vllm.server and specdec.adapters.vllm.server_subjects; CHANGELOG 0.2."""

from .vllm.server import MAX_MODEL_LEN, VLLMServerDecoder, server_env, speculative_config, worker_cores  # noqa: F401
from .vllm.server_subjects import draft_model, ngram  # noqa: F401

__all__ = ["MAX_MODEL_LEN", "VLLMServerDecoder", "draft_model", "ngram", "server_env", "speculative_config", "worker_cores"]
