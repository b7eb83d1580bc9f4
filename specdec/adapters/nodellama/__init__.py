"""node-llama-cpp 3.21.1 (npm) as a :class:`specdec.protocols.Decoder` (issue 39): a Node.js worker (``js/server.mjs``)
behind JSON lines (:mod:`.worker`), the Python decoder and its verification rule (:mod:`.nodellama_decoder`), the
engine's own per-token law (:mod:`.nodellama_oracle`), the sampling map (:mod:`.worker_sampling`).  node-llama-cpp is
installed by ``npm ci`` of ``js/package-lock.json`` in ``.peers/nodellama``."""

from .nodellama_decoder import SPECULATION, SUPPORTED_NODE_LLAMA_CPP, NodeLlamaDecoder
from .nodellama_oracle import NodeLlamaOracle
from .worker_sampling import sampling_object
from .worker import NodeWorker, WorkerError, installed_node_llama_cpp

__all__ = ["SPECULATION", "SUPPORTED_NODE_LLAMA_CPP", "NodeLlamaDecoder", "NodeLlamaOracle", "NodeWorker", "WorkerError",
           "installed_node_llama_cpp", "sampling_object"]
