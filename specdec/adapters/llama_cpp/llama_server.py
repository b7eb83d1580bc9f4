"""llama.cpp's own ``llama-server`` behind the Decoder Protocol: its native ``/completion``, which returns token ids.

The binary is built from the llama.cpp sources vendored in llama-cpp-python 0.3.36's sdist
(``scripts/build_llama_server.sh``, ``make llama-server``; llama.cpp 0.5.0-dev, commit ``0c1e570``).  Read in those
sources (``tools/server``, ``common/``) for this adapter:

* **Speculation** is chosen at start-up with ``--spec-type`` (``-md`` alone enables none): ``draft-simple`` (a draft
  model, ``--spec-draft-n-max`` tokens, each the draft's most likely token while its probability is at least
  ``--spec-draft-p-min``) and ``ngram-simple`` (prompt lookup, ``--spec-ngram-simple-size-n`` tokens matched,
  ``--spec-ngram-simple-size-m`` drafted), among others.  The per-request ``speculative.*`` fields are compiled out.
* **Verification** (``common_sampler_sample_and_accept_n``): at each drafted position the target's sampler chain
  draws a token with the slot's one generator; the draft is kept while the draw equals it, and the first draw that
  differs is emitted in its place.  Every emitted token is a draw of the target's law given its prefix, with one
  random draw per token, so a seeded request gives the same tokens with speculation and without (up to the rounding
  of batched logits): a coupling, not only equal laws.  The draft's probabilities are not used, so it accepts less
  than the rejection rule (F1) would.
* **Answers**: ``POST /completion`` with ``"prompt": [ids]`` and ``"return_tokens": true`` answers ``tokens`` (the
  generated ids); ``"n_cmpl": n`` (at most the server's ``-np`` slots) answers a list of n such objects, the k-th
  seeded with ``seed + k``.  ``/metrics`` (``--metrics``) counts ``llamacpp:spec_decode_num_drafts_total``,
  ``..._draft_tokens_total`` and ``..._accepted_tokens_total`` (and per draft position).
* **Version**: ``GET /props`` names the build (``build_info``); the adapter refuses a server whose build is not the
  tested commit (:data:`TESTED_BUILD`), before its first request.

:class:`LlamaServerDecoder` is :class:`specdec.adapters.openai.client.OpenAICompletionsDecoder` (requests, seeds,
retries, counters, a streamed request) with this endpoint's body and answer; :func:`llama_server_argv` is the command
line; :func:`lookup` is a benchmark subject (``specdec bench run|load specdec.adapters.llama_cpp.llama_server:lookup``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from ..._validation import as_int
from ...errors import PeerVersionError, ServerRequestError
from ...sampling_settings import SamplingSettings
from ...warpers import SamplingConfig
from ..openai.client import OpenAICompletionsDecoder
from ..openai.requests import Request
from ..openai.wire import _shown, decoded_answer, get_text, ids_in_order
from .llama_server_fields import completion_fields, server_seed

__all__ = ["DEFAULT_BINARY", "SPECULATION", "TESTED_BUILD", "LlamaServerDecoder", "llama_server_argv", "lookup"]

TESTED_BUILD = "0c1e570"  # the llama.cpp commit vendored in llama-cpp-python 0.3.36's sdist
DEFAULT_BINARY = Path(__file__).resolve().parents[3] / ".peers" / "llama-server" / "build" / "bin" / "llama-server"
# name -> the command-line arguments of that speculation (K drafted tokens at most)
SPECULATION = {
    "ngram": lambda k: ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", str(k)],
    "draft": lambda k: ["--spec-type", "draft-simple", "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0"],
}


def llama_server_argv(model: str | os.PathLike, port: int, *, binary: str | os.PathLike = DEFAULT_BINARY, speculation: str | None = None,
                      num_draft_tokens: int = 4, draft_model: str | os.PathLike | None = None, slots: int = 4, threads: int = 1,
                      context: int = 4096, host: str = "127.0.0.1", extra: Sequence[str] = ()) -> list[str]:
    """``llama-server`` on ``model`` (a GGUF) at ``host:port`` with ``slots`` parallel slots, ``threads`` threads, the
    metrics endpoint on, and ``speculation`` (None, "ngram" or "draft": ``draft_model`` drafts, default the model
    itself) drafting ``num_draft_tokens`` at most.  Each slot gets ``context / slots`` tokens of context."""
    if speculation is not None and speculation not in SPECULATION:
        raise ValueError(f"speculation must be None or one of {sorted(SPECULATION)}, got {speculation!r}")
    argv = [str(binary), "-m", str(model), "--host", host, "--port", str(as_int("port", port, minimum=1, maximum=65535)),
            "-np", str(as_int("slots", slots, minimum=1)), "-t", str(as_int("threads", threads, minimum=1)),
            "-c", str(as_int("context", context, minimum=16)), "--metrics", "--no-warmup"]
    if speculation is not None:
        argv += SPECULATION[speculation](as_int("num_draft_tokens", num_draft_tokens, minimum=1))
        if speculation == "draft":
            argv += ["-md", str(draft_model or model)]
    return argv + [str(a) for a in extra]


class LlamaServerDecoder(OpenAICompletionsDecoder):
    """A running ``llama-server``'s ``/completion`` as a :class:`specdec.protocols.Decoder` (module docstring).

    ``samples_per_request`` is the most ``n_cmpl`` of one request (at most the server's slots); the other arguments
    are :class:`~specdec.adapters.openai.client.OpenAICompletionsDecoder`'s (``model`` is only a label: the server
    serves one model)."""

    def __init__(self, base_url: str, *, model: str = "llama-server", sampling: SamplingConfig | None = None,
                 settings: SamplingSettings | None = None, samples_per_request: int = 4, max_in_flight: int = 4,
                 request_timeout: float = 120.0, ignore_eos: bool = True, name: str | None = None, retry=0.0,
                 check_version: bool = True) -> None:
        super().__init__(base_url, model, sampling=sampling, settings=settings, samples_per_request=samples_per_request,
                         max_in_flight=max_in_flight, request_timeout=request_timeout, ignore_eos=ignore_eos, name=name, retry=retry)
        self.url = self.base_url + "/completion"
        self.check_version = bool(check_version)
        self._build: str | None = None

    @property
    def settings(self) -> str:
        return (f"llama-server {self.base_url} ({self.sampling_settings.label}; n_cmpl<={self.samples_per_request}, "
                f"{self.max_in_flight} in flight)")

    def build_info(self) -> str:
        """The server's ``build_info`` from ``/props`` (a ServerRequestError when it cannot be read)."""
        text, why = get_text(self.base_url + "/props", self.request_timeout)
        if text is None:
            raise ServerRequestError(f"GET {self.base_url}/props: {why}")
        try:
            return str(json.loads(text).get("build_info", ""))
        except (ValueError, AttributeError):
            raise ServerRequestError(f"GET {self.base_url}/props: not a JSON object: {_shown(text.encode())}") from None

    def _check_build(self) -> None:
        if self.check_version and self._build is None:
            build = self.build_info()
            if TESTED_BUILD not in build:
                raise PeerVersionError(f"specdec.adapters.llama_cpp.llama_server was tested on llama-server built from llama.cpp "
                                       f"{TESTED_BUILD} (llama-cpp-python 0.3.36's sdist); this server is {build!r}")
            self._build = build

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        self._check_build()
        return super().__call__(prompts, max_new_tokens, seed)

    def stream(self, prompt, max_new_tokens: int, seed: int):
        self._check_build()
        yield from super().stream(prompt, max_new_tokens, seed)

    def request_fields(self, settings: SamplingSettings, decode) -> dict:
        return completion_fields(settings)  # refuses by name what the endpoint cannot take

    def payload(self, request: Request, max_new_tokens: int) -> dict:
        body = {"prompt": list(request.prompt), "n_predict": max_new_tokens, **self.fields, "n_cmpl": len(request.rows),
                "ignore_eos": self.ignore_eos, "return_tokens": True, "cache_prompt": True, "stream": False, "n_probs": 0}
        body["seed"] = server_seed(request.seed) if self.sampling_settings.seeded else -1
        return body

    def read_answer(self, request: Request, body: bytes, status: int, what: str) -> list[list[int]]:
        """The ``tokens`` of each of the request's ``n_cmpl`` completions, in order (the k-th seeded with seed + k)."""
        answer, bad = decoded_answer(body, status, what)
        n = len(request.rows)
        return ids_in_order(answer if isinstance(answer, list) else [answer], n, bad, ids_key="tokens", label="completion[{}]",
                            index_of=lambda item, position: item.get("index", position) if n > 1 else 0,
                            hint="was return_tokens honoured?", count="{found} completions for n_cmpl={n}")

    def count_streamed(self, event: dict) -> int:
        """Tokens in one streamed event of ``/completion``: its ``tokens`` (``return_tokens``)."""
        tokens = event.get("tokens")
        return len(tokens) if isinstance(tokens, list) else 0

    def __repr__(self) -> str:
        return f"LlamaServerDecoder({self.base_url!r}, {self.settings})"


_SUBJECTS: dict = {}  # (speculation, K, temperature) -> (ServerProcess, LlamaServerDecoder): one server per configuration


def lookup(num_draft_tokens: int = 4, *, temperature: float = 0.0, threads: int = 1, slots: int = 4) -> LlamaServerDecoder:
    """A benchmark subject (a factory of ``num_draft_tokens``, :mod:`specdec.bench.pairs`): llama-server with
    ``ngram-simple`` prompt lookup drafting K tokens, or without speculation for K = 0 (the twin), started on first
    use on SmolLM2's GGUF (the binary of ``make llama-server``); ``close()`` stops it."""
    from ...decoding.models import GGUF_FILE, _gguf_dir
    from ..openai.process import ServerProcess, free_port

    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    key = ("ngram" if k else None, k, float(temperature))
    if key not in _SUBJECTS or _SUBJECTS[key][0].process is None or _SUBJECTS[key][0].process.poll() is not None:
        port = free_port()
        argv = llama_server_argv(_gguf_dir() / GGUF_FILE, port, speculation=key[0], num_draft_tokens=max(k, 1), threads=threads, slots=slots)
        server = ServerProcess(argv, port=port, ready_path="/health", startup_timeout=300).start().wait_ready()
        decoder = LlamaServerDecoder(server.base_url, settings=SamplingSettings(temperature=temperature), samples_per_request=1,
                                     max_in_flight=slots, request_timeout=600, name=f"llama-server-ngram-K{k}" if k else "llama-server")
        decoder.num_draft_tokens = k
        decoder.close = server.stop
        _SUBJECTS[key] = (server, decoder)
    return _SUBJECTS[key][1]


lookup.name = "llama-server-ngram"
