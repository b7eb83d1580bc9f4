"""Compatibility alias (until 0.3): this module moved to specdec.adapters.openai.client; CHANGELOG 0.2."""

from .openai.client import COUNTERS, OpenAICompletionsDecoder, ServerRequestError, parse_counters, request_seeds  # noqa: F401

__all__ = ["COUNTERS", "OpenAICompletionsDecoder", "ServerRequestError", "parse_counters", "request_seeds"]
