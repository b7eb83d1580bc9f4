"""Compatibility alias (until 0.3): this module moved to specdec.adapters.openai.client; CHANGELOG 0.2.

Which servers that client can check is in its docstring; among them SGLang 0.5.23, whose ``/v1/completions``
returns the generated token ids with ``return_token_ids`` (added in 2026-07), though its wheel needs CUDA and has
not been run here."""

from .openai.client import COUNTERS, OpenAICompletionsDecoder, ServerRequestError, parse_counters, request_seeds  # noqa: F401

__all__ = ["COUNTERS", "OpenAICompletionsDecoder", "ServerRequestError", "parse_counters", "request_seeds"]
