"""vLLM's OpenAI server as a benchmark subject: speculation on against off, the whole serving stack (issue 22).

::

    specdec bench run specdec.adapters.vllm.server_subjects:ngram --k 2 4 8
    specdec bench run specdec.adapters.vllm.server_subjects:draft_model --k 4

Each factory is a :mod:`specdec.bench.pairs` factory of ``num_draft_tokens``: ``ngram(K)`` returns a
:class:`VLLMServerDecoder`, an :class:`~specdec.adapters.openai.client.OpenAICompletionsDecoder` talking
to a vLLM server started for that K, and ``ngram(0)`` the server without speculation (the twin).
Servers are kept per (method, K, settings) in this process, so a K sweep starts the twin once; a
server is started by the factory and waited for on first use (the twin and the speculative server
boot side by side), and :meth:`VLLMServerDecoder.close` stops it (the bench session closes every
decoder it built; :mod:`specdec.adapters.openai.process` stops servers by process id on every other
exit path too).  What the two sides share, so that the speedup is speculation's alone:

* the model: SmolLM2-135M-Instruct in float32 (:func:`specdec.decoding.models.smollm2_dir`), eager,
  engine seed 0, ``max_model_len`` 4608 (4096-token prompts plus new tokens), chunked prefill and
  prefix caching off (every round pays its prefill, as our loop does);
* the cores: each server runs on this process's CPUs (the cores our loop uses), its worker's OpenMP
  threads bound to all of them but the first, left to the engine core and the API server
  (``VLLM_CPU_OMP_THREADS_BIND``, :func:`worker_cores`; ``cores=`` to choose); the bench runs one side
  at a time, and an idle server takes ~1% of a core;
* the requests: greedy (temperature 0) by default, EOS ignored (``ignore_eos``), so both sides
  generate exactly ``max_new_tokens``; a call of B prompts is B requests in flight (the bench's batch
  is concurrency; at most ``max_num_seqs`` = 128 per call).

The methods (vLLM 0.32's ``SpeculativeConfig.method``): ``ngram`` - prompt lookup, n-gram sizes 3 down
to 1 (``prompt_lookup_max``/``_min``, the reference loop's ``lookup-n3``); ``draft_model`` - SmolLM2
itself as the draft (greedy drafts), a draft the target accepts almost always, so the row shows what a
full-size draft costs.  Speculation counters come from the server's ``/metrics``; vLLM's passes are
not observable from outside, so rows use the ideal cost model (no ``step_costs``).  At temperature > 0
vLLM 0.32's CPU build verifies drafts with uninitialised temperatures (#55005, see
``peers/test_vllm_server.py``): sampled rows measure a broken verifier.
"""

from __future__ import annotations

from ..._validation import as_float, as_int
from ...warpers import SamplingConfig
from .server import _SERVERS, KV_CACHE_GIB, MAX_NUM_SEQS, VLLMServerDecoder

__all__ = ["draft_model", "ngram"]


def _decoder(method: str, name: str, num_draft_tokens: int, temperature: float, spec_options: dict, **settings) -> VLLMServerDecoder:
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    sampling = SamplingConfig(temperature=as_float("temperature", temperature, minimum=0.0))
    key = (method, k, float(temperature), tuple(sorted(spec_options.items())) if k else (), tuple(sorted(settings.items())))
    decoder = _SERVERS.get(key)
    if decoder is None or decoder.server.process is None or decoder.server.process.poll() is not None:
        decoder = _SERVERS[key] = VLLMServerDecoder(method, k, name=name, sampling=sampling,
                                                     spec_options=spec_options if k else None, **settings)
    return decoder


def ngram(num_draft_tokens: int = 4, *, temperature: float = 0.0, prompt_lookup_max: int = 3, prompt_lookup_min: int = 1,
          max_num_seqs: int = MAX_NUM_SEQS, kv_cache_gib: int = KV_CACHE_GIB, cores: str | None = None) -> VLLMServerDecoder:
    """vLLM's n-gram speculation (prompt lookup) with K = ``num_draft_tokens`` (0: the twin without speculation)."""
    options = {"prompt_lookup_max": as_int("prompt_lookup_max", prompt_lookup_max, minimum=1),
               "prompt_lookup_min": as_int("prompt_lookup_min", prompt_lookup_min, minimum=1)}
    return _decoder("ngram", ngram.name, num_draft_tokens, temperature, options, max_num_seqs=max_num_seqs,
                    kv_cache_gib=kv_cache_gib, cores=cores)


def draft_model(num_draft_tokens: int = 4, *, temperature: float = 0.0, max_num_seqs: int = MAX_NUM_SEQS,
                kv_cache_gib: int = KV_CACHE_GIB, cores: str | None = None) -> VLLMServerDecoder:
    """vLLM's draft-model speculation, SmolLM2 drafting for itself, K = ``num_draft_tokens`` (0: the twin)."""
    return _decoder("draft_model", draft_model.name, num_draft_tokens, temperature, {}, max_num_seqs=max_num_seqs,
                    kv_cache_gib=kv_cache_gib, cores=cores)


ngram.name = "vllm-ngram"
draft_model.name = "vllm-draft"
