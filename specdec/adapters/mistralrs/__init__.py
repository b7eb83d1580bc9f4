"""mistral.rs (the ``mistralrs`` Python package, 0.6.0) as a :class:`specdec.protocols.Decoder` (issue 39): :mod:`.mistralrs_decoder`."""

from .mistralrs_decoder import DISTRIBUTIONS, SUPPORTED_MISTRALRS, MistralRsDecoder
from .settings_map import request_args

__all__ = ["DISTRIBUTIONS", "SUPPORTED_MISTRALRS", "MistralRsDecoder", "request_args"]
