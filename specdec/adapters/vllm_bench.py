"""vLLM's OpenAI server as a benchmark subject: speculation on against off, the whole serving stack (issue 22).

::

    specdec bench run specdec.adapters.vllm_bench:ngram --k 2 4 8
    specdec bench run specdec.adapters.vllm_bench:draft_model --k 4

Each factory is a :mod:`specdec.bench.subject` factory of ``num_draft_tokens``: ``ngram(K)`` returns a
:class:`VLLMServerDecoder`, an :class:`~specdec.adapters.openai_server.OpenAICompletionsDecoder` talking
to a vLLM server started for that K, and ``ngram(0)`` the server without speculation (the twin).
Servers are kept per (method, K, settings) in this process, so a K sweep starts the twin once; a
server is started by the factory and waited for on first use (the twin and the speculative server
boot side by side), and :meth:`VLLMServerDecoder.close` stops it (the bench session closes every
decoder it built; :mod:`specdec.adapters.server_process` stops servers by process id on every other
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

import os
import sys

from .._validation import as_float, as_int
from ..warpers import SamplingConfig
from ._common import require_version
from .openai_server import OpenAICompletionsDecoder
from .server_process import ServerProcess, free_port, vllm_server_argv
from .vllm import DISTRIBUTIONS, SUPPORTED_VLLM

SERVED_MODEL = "smollm2"
MAX_MODEL_LEN = 4608  # the 4096-token bucket plus new tokens
MAX_NUM_SEQS = 128  # vLLM's CPU default for its server: requests decoded together
KV_CACHE_GIB = 2  # VLLM_CPU_KVCACHE_SPACE: ~45k float32 tokens of SmolLM2 (46 KiB each), shared with a draft model
STARTUP_TIMEOUT = 600.0  # seconds; 120-130 s measured for two servers booting together on 2 busy shared cores
REQUEST_TIMEOUT = 900.0  # seconds per request (a 4096-token prompt at batch 64 on 2 cores)
METHODS = ("ngram", "draft_model")

_SERVERS: dict[tuple, "VLLMServerDecoder"] = {}  # (method, K, settings) -> the running decoder


def worker_cores() -> str:
    """vLLM's bind list for the worker's threads: this process's CPUs (the cores our loop's threads use)
    but the first, which stays for the engine core and the API server, as vLLM's own automatic binding
    reserves one (measured on 2 shared cores: binding the worker to both made the same calls 2.5x to 4x
    slower, its engine core busy beside the worker's two threads); all of them when there is one."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = list(range(os.cpu_count() or 1))
    return ",".join(map(str, cpus[1:] if len(cpus) > 1 else cpus))


def server_env(kv_cache_gib: int = KV_CACHE_GIB, cores: str | None = None) -> dict[str, str]:
    """The server's environment: offline, its worker's threads bound to ``cores`` (vLLM's list, "0,1" or
    "0-3"; default :func:`worker_cores`), ``kv_cache_gib`` of KV cache."""
    if cores is not None and (not isinstance(cores, str) or not cores.strip()):
        raise ValueError(f"cores must be None or a CPU list such as '0,1' or '0-3', got {cores!r}")
    return {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "VLLM_CPU_OMP_THREADS_BIND": cores or worker_cores(),
            "VLLM_CPU_KVCACHE_SPACE": str(as_int("kv_cache_gib", kv_cache_gib, minimum=1))}


def speculative_config(method: str, num_draft_tokens: int, **options) -> dict | None:
    """vLLM's ``--speculative-config`` for ``method`` at K = ``num_draft_tokens`` (None for K = 0)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    if k == 0:
        return None
    if method == "ngram":
        return {"method": "ngram", "num_speculative_tokens": k, **options}
    from ..decoding.models import smollm2_dir

    return {"method": "draft_model", "model": str(smollm2_dir()), "num_speculative_tokens": k,
            "draft_sample_method": "greedy", **options}


class VLLMServerDecoder(OpenAICompletionsDecoder):
    """A vLLM OpenAI server on SmolLM2 for one (method, K), behind the Decoder Protocol (module docstring).

    The server starts in the constructor and is waited for on first use (:meth:`wait_ready`);
    ``startup_seconds`` is its time to readiness.  ``num_draft_tokens``: K (0: no speculation).
    """

    def __init__(self, method: str, num_draft_tokens: int, *, name: str, sampling: SamplingConfig = SamplingConfig(),
                 spec_options: dict | None = None, max_model_len: int = MAX_MODEL_LEN, max_num_seqs: int = MAX_NUM_SEQS,
                 kv_cache_gib: int = KV_CACHE_GIB, cores: str | None = None, startup_timeout: float = STARTUP_TIMEOUT) -> None:
        require_version("specdec.adapters.vllm_bench", DISTRIBUTIONS, SUPPORTED_VLLM)
        from ..decoding.models import smollm2_dir

        self.method = method
        self.num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
        self.max_num_seqs = as_int("max_num_seqs", max_num_seqs, minimum=1)
        max_model_len = as_int("max_model_len", max_model_len, minimum=2)
        spec = speculative_config(method, self.num_draft_tokens, **(spec_options or {}))
        port = free_port()
        argv = vllm_server_argv(smollm2_dir(), port, python=sys.executable, speculative_config=spec, served_model_name=SERVED_MODEL,
                                max_model_len=max_model_len,
                                extra=["--max-num-seqs", str(self.max_num_seqs), "--max-num-batched-tokens", str(max_model_len),
                                       "--no-enable-prefix-caching"])
        self.server = ServerProcess(argv, port=port, env=server_env(kv_cache_gib, cores),
                                    startup_timeout=as_float("startup_timeout", startup_timeout, minimum=0.0, low_open=True))
        super().__init__(self.server.base_url, SERVED_MODEL, sampling=sampling, samples_per_request=self.max_num_seqs,
                         max_in_flight=self.max_num_seqs, request_timeout=REQUEST_TIMEOUT, ignore_eos=True,
                         metrics_url=True, name=name)
        self.server.start()

    @property
    def startup_seconds(self) -> float | None:
        return self.server.startup_seconds

    def wait_ready(self) -> "VLLMServerDecoder":
        """Block until the server answers (raises :class:`~specdec.adapters.server_process.ServerStartError`
        with its log's tail if it exits or times out first)."""
        if self.server.startup_seconds is None:
            self.server.wait_ready()
        return self

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        if hasattr(prompts, "__len__") and len(prompts) > self.max_num_seqs:
            raise ValueError(f"a call of {len(prompts)} prompts is {len(prompts)} requests in flight; this server decodes at most "
                             f"max_num_seqs={self.max_num_seqs} together: build it with a larger max_num_seqs")
        self.wait_ready()
        return super().__call__(prompts, max_new_tokens, seed)

    def speculation_counts(self) -> dict | None:
        """vLLM's cumulative speculation counters (None for the server without speculation)."""
        if not self.num_draft_tokens:
            return None
        self.wait_ready()
        return super().speculation_counts()

    def close(self) -> None:
        """Stop the server (idempotent) and forget it."""
        self.server.stop()
        for key, decoder in list(_SERVERS.items()):
            if decoder is self:
                del _SERVERS[key]

    def __repr__(self) -> str:
        return f"VLLMServerDecoder({self.name!r}, K={self.num_draft_tokens}, {self.server!r})"


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

__all__ = ["VLLMServerDecoder", "draft_model", "ngram", "server_env", "speculative_config", "worker_cores", "MAX_MODEL_LEN"]
