"""llama.cpp through llama-cpp-python 0.3.36, one module per piece (docs/peers.md):

* :mod:`.in_process` - :class:`LlamaCppDecoder`, a ``llama_cpp.Llama`` in this process behind the Decoder
  Protocol, with prompt-lookup drafts and its speculation counted;
* :mod:`.lookup_subjects` - the benchmark subject ``prompt_lookup`` (one engine shared by a K sweep, its
  own measured step costs).
"""

from .in_process import DISTRIBUTIONS, SUPPORTED_LLAMA_CPP, LlamaCppDecoder, row_seeds  # noqa: F401

__all__ = ["DISTRIBUTIONS", "SUPPORTED_LLAMA_CPP", "LlamaCppDecoder", "row_seeds"]
