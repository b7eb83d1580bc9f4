"""Compatibility alias (until 0.3): this module moved to specdec.adapters.openai.process (vllm_server_argv: specdec.adapters.vllm.server); CHANGELOG 0.2."""

from .openai.process import ServerProcess, ServerStartError, free_port  # noqa: F401
from .vllm.server import vllm_server_argv  # noqa: F401

__all__ = ["ServerProcess", "ServerStartError", "free_port", "vllm_server_argv"]
