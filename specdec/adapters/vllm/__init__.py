"""vLLM 0.32, one module per piece (docs/peers.md):

* :mod:`.verifier` - its V1 rejection sampler and warping behind the verifier Protocols (the names
  below are re-exported here: ``specdec.adapters.vllm:vllm_rejection_sample`` is the CLI subject);
* :mod:`.offline` - its in-process engine (``vllm.LLM``) behind the Decoder Protocol;
* :mod:`.server` - its OpenAI server's command line and a server started per (method, K) as a Decoder;
* :mod:`.server_subjects` - the benchmark subjects built on those servers (``ngram``, ``draft_model``).
* :mod:`.server_oracle` - the plain server's raw prompt log-probabilities as a law oracle; :mod:`.settings_oracle` -
  vLLM's sampler under a whole SamplingSettings record, restated on the same weights' float32 rows (no vLLM import).

Every piece refuses a vLLM version it was not tested on (:data:`SUPPORTED_VLLM`; the restated sampler also works
where no vLLM is installed).
"""

from .verifier import (  # noqa: F401
    DISTRIBUTIONS,
    SUPPORTED_VLLM,
    PeerVersionError,
    rejection_sampler_module,
    sampling_metadata,
    vllm_rejection_sample,
    vllm_rejection_sample_greedy,
    vllm_warped_logits,
)

__all__ = ["DISTRIBUTIONS", "PeerVersionError", "SUPPORTED_VLLM", "rejection_sampler_module", "sampling_metadata",
           "vllm_rejection_sample", "vllm_rejection_sample_greedy", "vllm_warped_logits"]
