"""Compatibility alias (until 0.3): this module moved to specdec.adapters.vllm.offline; CHANGELOG 0.2."""

from .vllm.offline import VLLMDecoder, request_seeds  # noqa: F401

__all__ = ["VLLMDecoder", "request_seeds"]
