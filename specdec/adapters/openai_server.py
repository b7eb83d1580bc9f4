"""A running OpenAI-compatible server behind the Decoder Protocol: the whole serving stack as a subject.

``OpenAICompletionsDecoder(base_url, model, sampling=...)`` answers ``decoder(prompts, max_new_tokens,
seed)`` by POSTing to ``{base_url}/v1/completions`` (standard library only: ``urllib.request``,
``json``, ``concurrent.futures``):

* the rows of a call that carry the same prompt are grouped and asked in requests of up to
  ``samples_per_request`` samples (``"n"``); the requests are ordered round-robin over the prompts
  (so the server batches different prompts together, B13) and every request gets its own seed,
  derived from the call's seed in that order (:func:`request_seeds`): a call is reproducible and its
  rows are independent draws - provided the server's ``n`` samples of one request are independent
  (vLLM seeds the i-th sample of a request with ``seed + i``);
* at most ``max_in_flight`` requests are open at once, each with its own ``request_timeout``;
* ``sampling`` (a :class:`specdec.SamplingConfig`) becomes ``temperature``, ``top_p`` and, when set,
  ``top_k`` and ``min_p``: the warpers of the reference law (E6).  A field that is not sent takes the
  *server's* default, which may not be "off" (see below); ``ignore_eos=True`` by default (EOS an
  ordinary token; pass ``eos_token_id`` to the check otherwise, E8);
* every failure - refused connection, HTTP error, timeout, a body that is not JSON, the wrong number
  of choices, missing or non-integer token ids, a prompt echoed back that is not the one sent -
  raises :class:`ServerRequestError` naming the request (URL, first prompt row, n, seed, HTTP status,
  the first 200 characters of the body); a check's call guard turns it into the verdict ERROR;
* :meth:`speculation_counts` reads the server's Prometheus ``/metrics`` (vLLM's
  ``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
  ``..._num_accepted_tokens_total``, summed over label sets), so a check can say how much
  speculation it exercised.

What the server must provide, on ``POST /v1/completions``: a prompt given as token ids
(``"prompt": [ids]``), a per-request ``"seed"``, ``"n"`` samples per request, ``"ignore_eos"``, and the
generated token ids in the answer (``"return_token_ids": true`` -> ``choices[i].token_ids``).  Which
servers do, from their source (read for this adapter, not run unless said):

* **vLLM** (0.32, run in ``peers/test_vllm_server.py``): all of them; ``prompt_token_ids`` is echoed
  and checked; the i-th of ``n`` samples is exactly the sample of seed ``seed + i`` (measured).  Start
  it with ``--generation-config vllm``, or the model's ``generation_config.json`` supplies the
  defaults of the fields not sent, and, on 0.32's CPU build, ``--no-enable-chunked-prefill``: a seeded
  request whose prefill is split kills the engine ("CPU Generator does not use offset", every later
  request HTTP 500).  :func:`specdec.adapters.server_process.vllm_server_argv` does both.
* **SGLang** (``python/sglang/srt/entrypoints/openai/``, the stored version): ``/v1/completions``
  takes token-id prompts, ``n``, ``top_k`` and ``ignore_eos``, but its choices carry text (and
  logprobs), no token ids, and that version does not pass ``seed`` on to its sampling parameters.
* **llama.cpp's llama-server** (``tools/server/server-task.cpp``): reads ``seed``, ``n`` (at most its
  number of slots, ``-np``), ``ignore_eos`` and ``return_tokens``, but the generated ids come back in
  ``tokens`` only in its native ``/completion`` format; the OpenAI ``/v1/completions`` choice has text,
  index, logprobs and finish_reason.  Fields not sent take the server's command-line sampling
  defaults (top-k, min-p, repetition penalties).
* **llama-cpp-python's server** (``llama_cpp/server/``): the prompt is text only, ``n`` is accepted
  and dropped, ``seed`` is passed on, choices carry text only; defaults top_k=40, min_p=0.05,
  repeat_penalty=1.1.
* **TGI** (``router/src/lib.rs``): ``/v1/completions`` takes text prompts, ``seed``, no ``n`` and no
  ``top_k``, and answers text; its native ``/generate`` returns token ids in ``details.tokens[].id`` but
  takes a text input.

So of these only vLLM can be checked through this adapter as is.
"""

from __future__ import annotations

import concurrent.futures
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Sequence

from .._validation import as_float, as_int, as_seed
from ..errors import ServerRequestError
from ..warpers import SamplingConfig
from .vllm_engine import request_seeds as _base_seeds

COUNTERS = {
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted_tokens",
}
BODY_SHOWN = 200  # characters of a failing answer's body in an error message
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback servers: never through a proxy


def request_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent seeds below 2**62 derived from ``seed`` (:func:`specdec.adapters.vllm_engine.request_seeds`,
    halved: a server that seeds the i-th of n samples with ``seed + i``, as vLLM does, stays within int64)."""
    return [s >> 1 for s in _base_seeds(seed, count)]


@dataclass(frozen=True)
class _Request:
    """One POST: ``rows`` of the call (all with the same prompt) answered by its ``n`` choices."""

    number: int  # position in the call's request order (0-based)
    prompt: tuple[int, ...]
    rows: tuple[int, ...]
    seed: int


def parse_counters(text: str) -> dict | None:
    """vLLM's three speculation counters from Prometheus text (summed over label sets); None when absent."""
    counts = {key: 0.0 for key in COUNTERS.values()}
    found = False
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(None, 1)[0]
        key = COUNTERS.get(name)
        if key is None:
            continue
        value = line.rsplit("}", 1)[-1].split() if "{" in line else line.split()[1:]
        if not value:
            continue
        try:
            counts[key] += float(value[0])
        except ValueError:
            continue
        found = True
    return {key: int(round(v)) for key, v in counts.items()} if found else None


class OpenAICompletionsDecoder:
    """An OpenAI-compatible server's ``/v1/completions`` as a :class:`specdec.protocols.Decoder` (see the module docstring).

    ``base_url``: ``http(s)://host:port`` (a trailing ``/v1`` is accepted and dropped).  ``model``: the
    served model name.  ``samples_per_request``: the most ``n`` of one request.  ``max_in_flight``:
    concurrent requests.  ``request_timeout``: seconds per request.  ``metrics_url``: True for
    ``base_url + "/metrics"``, a URL, or None/False for none (then :meth:`speculation_counts` is None).
    """

    runs_in_process = False  # the work happens in the server: a benchmark measures no peak memory here

    def __init__(self, base_url: str, model: str, *, sampling: SamplingConfig = SamplingConfig(), samples_per_request: int = 16,
                 max_in_flight: int = 8, request_timeout: float = 120.0, ignore_eos: bool = True,
                 metrics_url: str | None | bool = True, name: str | None = None) -> None:
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a str such as 'http://127.0.0.1:8000', got {type(base_url).__name__} {base_url!r}")
        root = base_url.strip().rstrip("/")
        if root.endswith("/v1"):
            root = root[:-3]
        if not root.startswith(("http://", "https://")) or len(root.split("://", 1)[1]) == 0:
            raise ValueError(f"base_url must start with http:// or https:// and name a host, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise (TypeError if not isinstance(model, str) else ValueError)(f"model must be the served model's name (a non-empty str), got {model!r}")
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
        if not isinstance(ignore_eos, bool):
            raise TypeError(f"ignore_eos must be a bool, got {type(ignore_eos).__name__} {ignore_eos!r}")
        if metrics_url is True:
            metrics = root + "/metrics"
        elif metrics_url is None or metrics_url is False:
            metrics = None
        elif isinstance(metrics_url, str) and metrics_url.startswith(("http://", "https://")):
            metrics = metrics_url
        else:
            raise ValueError(f"metrics_url must be True (base_url + '/metrics'), None/False (none) or an http(s) URL, got {metrics_url!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__} {name!r}")
        self.base_url = root
        self.url = root + "/v1/completions"
        self.model = model
        self.sampling = sampling
        self.samples_per_request = as_int("samples_per_request", samples_per_request, minimum=1)
        self.max_in_flight = as_int("max_in_flight", max_in_flight, minimum=1)
        self.request_timeout = as_float("request_timeout", request_timeout, minimum=0.0, low_open=True)
        self.ignore_eos = ignore_eos
        self.metrics_url = metrics
        self.metrics_error: str | None = None  # why the last read of /metrics failed, if it did
        self.name = name or self.settings

    @property
    def settings(self) -> str:
        """One line: the server, model and sampling."""
        s = self.sampling
        warp = f"T={s.temperature:g}" + (f", top_k={s.top_k}" if s.top_k else "") + (f", top_p={s.top_p:g}" if s.top_p else "") \
            + (f", min_p={s.min_p:g}" if s.min_p else "")
        return f"OpenAI server {self.base_url} (model {self.model}; {warp}; n<={self.samples_per_request}, {self.max_in_flight} in flight)"

    def payload(self, request: _Request, max_new_tokens: int) -> dict:
        """The JSON body of one request."""
        s = self.sampling
        body = {"model": self.model, "prompt": list(request.prompt), "max_tokens": max_new_tokens,
                "temperature": float(s.temperature), "top_p": float(s.top_p or 1.0), "seed": request.seed, "n": len(request.rows),
                "ignore_eos": self.ignore_eos, "return_token_ids": True, "logprobs": None, "stream": False}
        if s.top_k:
            body["top_k"] = int(s.top_k)
        if s.min_p:
            body["min_p"] = float(s.min_p)
        return body

    def plan(self, prompts: Sequence[Sequence[int]], seed: int) -> list[_Request]:
        """The requests of one call, in order, with their seeds."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for row, prompt in enumerate(prompts):
            groups.setdefault(tuple(int(t) for t in prompt), []).append(row)
        chunks = [[tuple(rows[i:i + self.samples_per_request]) for i in range(0, len(rows), self.samples_per_request)]
                  for rows in groups.values()]
        ordered = [(prompt, chunk[j]) for j in range(max(map(len, chunks), default=0))
                   for prompt, chunk in zip(groups, chunks) if j < len(chunk)]
        seeds = request_seeds(seed, len(ordered))
        return [_Request(i, prompt, rows, s) for i, ((prompt, rows), s) in enumerate(zip(ordered, seeds))]

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
            raise TypeError(f"prompts must be a list of token-id lists, got {type(prompts).__name__}")
        rows = [tuple(as_int(f"prompts[{i}][{j}]", t, minimum=0) for j, t in enumerate(p)) for i, p in enumerate(prompts)]
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
        requests = self.plan(rows, as_seed(seed))
        out: list[list[int] | None] = [None] * len(rows)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(self.max_in_flight, max(len(requests), 1)),
                                                     thread_name_prefix="specdec-openai")
        try:
            futures = [pool.submit(self._ask, r, max_new_tokens, len(requests)) for r in requests]
            for future in concurrent.futures.as_completed(futures):
                request, tokens = future.result()  # the first failure ends the call
                for row, ids in zip(request.rows, tokens):
                    out[row] = ids
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return out  # type: ignore[return-value]

    def _describe(self, request: _Request, total: int) -> str:
        return (f"request {request.number + 1} of {total}: POST {self.url} (prompt row {request.rows[0]}, "
                f"{len(request.prompt)} tokens; n={len(request.rows)}, seed={request.seed})")

    def _ask(self, request: _Request, max_new_tokens: int, total: int) -> tuple[_Request, list[list[int]]]:
        what = self._describe(request, total)
        data = json.dumps(self.payload(request, max_new_tokens)).encode()
        http = urllib.request.Request(self.url, data=data, method="POST",
                                      headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with _open(http, self.request_timeout) as answer:
                status, body = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            body = _read_quietly(error)
            raise ServerRequestError(f"{what}: HTTP {error.code} {error.reason}: {_shown(body)}") from None
        except (socket.timeout, TimeoutError) as error:
            raise ServerRequestError(f"{what}: no answer within request_timeout={self.request_timeout:g} s ({error})") from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise ServerRequestError(f"{what}: no answer within request_timeout={self.request_timeout:g} s ({reason})") from None
            raise ServerRequestError(f"{what}: {type(reason).__name__}: {reason}") from None
        except (ConnectionError, OSError) as error:  # a connection reset or closed mid-answer
            raise ServerRequestError(f"{what}: {type(error).__name__}: {error}") from None
        return request, self._tokens(request, body, status, what)

    def _tokens(self, request: _Request, body: bytes, status: int, what: str) -> list[list[int]]:
        def bad(why: str) -> ServerRequestError:
            return ServerRequestError(f"{what}: HTTP {status}, {why}: {_shown(body)}")

        try:
            answer = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            raise bad(f"the body is not JSON ({error})") from None
        choices = answer.get("choices") if isinstance(answer, dict) else None
        if not isinstance(choices, list):
            raise bad("the answer has no 'choices' list")
        n = len(request.rows)
        if len(choices) != n:
            raise bad(f"{len(choices)} choices for n={n}")
        by_index: dict[int, list[int]] = {}
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict):
                raise bad(f"choices[{position}] is {type(choice).__name__}, not an object")
            index = choice.get("index")
            if not _is_int(index) or not 0 <= index < n or index in by_index:
                raise bad(f"choices[{position}].index is {index!r}: expected each of 0..{n - 1} once")
            ids = choice.get("token_ids")
            if not isinstance(ids, list) or not all(_is_int(t) and t >= 0 for t in ids):
                raise bad(f"choices[{position}].token_ids is missing or not a list of token ids "
                          f"(got {_short(ids)}; does the server support return_token_ids?)")
            echoed = choice.get("prompt_token_ids")
            if echoed is not None and list(echoed) != list(request.prompt):
                raise bad(f"choices[{position}].prompt_token_ids {_short(echoed)} is not the prompt sent")
            by_index[index] = [int(t) for t in ids]
        return [by_index[i] for i in range(n)]

    def speculation_counts(self) -> dict | None:
        """The server's cumulative speculation counters (drafts, draft_tokens, accepted_tokens) from its
        Prometheus ``/metrics``; None without a metrics URL, when the endpoint has no such counters, or
        when it cannot be read (the reason is kept in :attr:`metrics_error`)."""
        if self.metrics_url is None:
            return None
        try:
            with _open(urllib.request.Request(self.metrics_url), self.request_timeout) as answer:
                text = answer.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError, socket.timeout) as error:
            self.metrics_error = f"GET {self.metrics_url}: {type(error).__name__}: {error}"
            return None
        self.metrics_error = None
        return parse_counters(text)

    def __repr__(self) -> str:
        return f"OpenAICompletionsDecoder({self.base_url!r}, {self.model!r}, {self.settings})"


def _open(request: urllib.request.Request, timeout: float):
    """``urlopen``, bypassing any proxy of the environment for a loopback host."""
    host = (urllib.parse.urlsplit(request.full_url).hostname or "").lower()
    if host in ("127.0.0.1", "localhost", "::1"):
        return _DIRECT.open(request, timeout=timeout)
    return urllib.request.urlopen(request, timeout=timeout)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_quietly(error: urllib.error.HTTPError) -> bytes:
    try:
        return error.read() or b""
    except Exception:  # noqa: BLE001 - the body of an error is a courtesy
        return b""


def _shown(body: bytes) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body)
    return repr(text[:BODY_SHOWN]) + ("..." if len(text) > BODY_SHOWN else "")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["OpenAICompletionsDecoder", "ServerRequestError", "parse_counters", "request_seeds", "COUNTERS"]
