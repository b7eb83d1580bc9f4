"""Compatibility alias (until 0.3): this module moved to specdec.adapters.llama_cpp.lookup_subjects; CHANGELOG 0.2."""

from .llama_cpp.lookup_subjects import LookupDecoder, prompt_lookup  # noqa: F401

__all__ = ["LookupDecoder", "prompt_lookup"]
