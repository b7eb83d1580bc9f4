"""OpenAI-compatible servers as subjects: the client behind the Decoder Protocol and the server process.

* :mod:`.client` - :class:`OpenAICompletionsDecoder`, a server's ``/v1/completions`` as a Decoder
  (which servers can be checked through it: its docstring);
* :mod:`.requests` - a call's requests and their seeds; :mod:`.wire` - HTTP, answers read by the
  contract, the ``/metrics`` counters;
* :mod:`.tokenize` - a server's own ``POST /tokenize`` (vLLM's text and chat forms, llama-server's text form);
* :mod:`.process` - :class:`ServerProcess`, a server subprocess that is always stopped, by process id.
"""

from .client import OpenAICompletionsDecoder  # noqa: F401
from .process import ServerProcess, free_port  # noqa: F401

__all__ = ["OpenAICompletionsDecoder", "ServerProcess", "free_port"]
