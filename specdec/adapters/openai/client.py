"""A running OpenAI-compatible server behind the Decoder Protocol: the whole serving stack as a subject.

``OpenAICompletionsDecoder(base_url, model, sampling=...)`` answers ``decoder(prompts, max_new_tokens,
seed)`` by POSTing to ``{base_url}/v1/completions`` (standard library only: ``urllib.request``,
``json``, ``concurrent.futures``):

* the rows of a call that carry the same prompt are grouped and asked in requests of up to
  ``samples_per_request`` samples (``"n"``); the requests are ordered round-robin over the prompts
  (so the server batches different prompts together, B13) and every request gets its own seed,
  derived from the call's seed in that order (:func:`.requests.request_seeds`): a call is reproducible and its
  rows are independent draws - provided the server's ``n`` samples of one request are independent
  (vLLM seeds the i-th sample of a request with ``seed + i``);
* at most ``max_in_flight`` requests are open at once, each with its own ``request_timeout``;
* ``settings`` (a :class:`specdec.SamplingSettings`: warpers, penalties, logit bias, minimum tokens, bad
  words, allowed and stop token ids, n, seeds) or ``sampling`` (a :class:`specdec.SamplingConfig`, the
  warpers alone) becomes the request's sampling fields, every one sent, "off" included (:mod:`.fields`),
  so no server default stands in for a setting; ``ignore_eos=True`` by default (EOS an ordinary token;
  pass ``eos_token_id`` to the check otherwise, E8);
* every failure - refused connection, HTTP error, timeout, a body that is not JSON, the wrong number
  of choices, missing or non-integer token ids, a prompt echoed back that is not the one sent, a row of more
  token ids than ``max_tokens`` asked (a server echoing the prompt in them: never cut to fit) -
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
  request HTTP 500).  :func:`specdec.adapters.vllm.server.vllm_server_argv` does both.
* **SGLang** (0.5.23): ``/v1/completions`` takes token-id prompts, ``n``, ``top_k``, ``ignore_eos`` and
  ``seed``, and returns the generated token ids with ``return_token_ids`` (added in 2026-07), so it
  can be checked through this adapter; its wheel needs CUDA and does not run on this project's CPU
  machines, so that has not been run here.  (An older stored version answered text and logprobs only
  and did not pass ``seed`` on to its sampling parameters.)
* **llama.cpp's llama-server** (``tools/server/``, the build vendored in llama-cpp-python 0.3.36's sdist): its
  OpenAI ``/v1/completions`` choice has text, index, logprobs and finish_reason, not ``token_ids``; its native ``/completion`` returns the generated ids in ``tokens``
  (``return_tokens``), with ``seed``, ``n_cmpl`` (at most its slots) and every sampler as a field.  It is checked
  through that endpoint by :class:`specdec.adapters.llama_cpp.llama_server.LlamaServerDecoder`, this client
  with that body and answer (run in ``make peers-matrix`` and ``peers/test_llama_server.py``).
* **llama-cpp-python's server** (``llama_cpp/server/``): the prompt is text only, ``n`` is accepted
  and dropped, ``seed`` is passed on, choices carry text only; defaults top_k=40, min_p=0.05,
  repeat_penalty=1.1.
* **TGI** (``router/src/lib.rs``): ``/v1/completions`` takes text prompts, ``seed``, no ``n`` and no
  ``top_k``, and answers text; its native ``/generate`` returns token ids in ``details.tokens[].id`` but
  takes a text input.

So of these vLLM (run here) and SGLang 0.5.23 (not run here) can be checked through this adapter as is, and
llama-server (run here) through its subclass.

The pieces: :mod:`.requests` (a call's requests and their seeds), :mod:`.wire` (HTTP, answers read
by the contract, the ``/metrics`` counters), :mod:`.process` (a server subprocess that is always stopped).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Sequence

from ..._validation import as_float, as_int, as_seed
from ...errors import ServerRequestError
from ...sampling_settings import SamplingSettings, settings_from
from ...warpers import SamplingConfig
from .fields import completion_fields
from .requests import Request, plan_requests, request_seeds
from .retries import RetryPolicy, as_retry_policy
from .stream import stream_events, within_max_tokens
from .wire import COUNTERS, TransportError, get_text, parse_counters, post_json, read_choices, rows_within

__all__ = ["COUNTERS", "OpenAICompletionsDecoder", "ServerRequestError", "parse_counters", "request_seeds"]


def server_root(base_url) -> str:
    """``http(s)://host:port`` from ``base_url`` (a trailing ``/`` or ``/v1`` dropped); a TypeError/ValueError otherwise."""
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a str such as 'http://127.0.0.1:8000', got {type(base_url).__name__} {base_url!r}")
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    if not root.startswith(("http://", "https://")) or len(root.split("://", 1)[1]) == 0:
        raise ValueError(f"base_url must start with http:// or https:// and name a host, got {base_url!r}")
    return root


def metrics_address(root: str, metrics_url) -> str | None:
    """The ``/metrics`` URL: True for ``root + "/metrics"``, None/False for none, or an http(s) URL."""
    if metrics_url is True:
        return root + "/metrics"
    if metrics_url is None or metrics_url is False:
        return None
    if isinstance(metrics_url, str) and metrics_url.startswith(("http://", "https://")):
        return metrics_url
    raise ValueError(f"metrics_url must be True (base_url + '/metrics'), None/False (none) or an http(s) URL, got {metrics_url!r}")


def _in_flight(requests: list, ask, limit: int, ended: threading.Event):
    """The answers of ``ask(request)`` for every request, at most ``limit`` at a time, as they come; the first
    failure ends the call.  The workers are daemon threads: a call abandoned by its caller (a per-call timeout,
    Ctrl-C) never keeps the interpreter from exiting while its requests wait to be retried."""
    pending, answers, lock = list(requests), queue.Queue(), threading.Lock()

    def work() -> None:
        while not ended.is_set():
            with lock:
                if not pending:
                    return
                request = pending.pop(0)
            try:
                answers.put((True, ask(request)))
            except BaseException as error:  # noqa: BLE001 - handed to the calling thread
                answers.put((False, error))
                return

    for _ in range(min(limit, max(len(requests), 1))):
        threading.Thread(target=work, daemon=True, name="specdec-openai").start()
    for _ in requests:
        ok, value = answers.get()
        if not ok:
            raise value
        yield value


class _Monotone:
    """Cumulative counters across server restarts.  A restart shows as a new ``process_start_time_seconds``
    or as a counter that went down; what the server had counted up to the last read is then kept (what it
    counted between that read and the restart is lost, and unknowable)."""

    def __init__(self) -> None:
        self.last: dict | None = None
        self.offset: dict = {}

    def add(self, counts: dict) -> dict:
        started = counts.pop("started", None)
        if self.last is not None and (started != self.last.get("started") or any(counts[k] < self.last.get(k, 0) for k in counts)):
            self.offset = {k: self.offset.get(k, 0) + self.last.get(k, 0) for k in set(counts) | set(self.offset)}
        self.last = {**counts, "started": started}
        return {k: v + self.offset.get(k, 0) for k, v in counts.items()}


class OpenAICompletionsDecoder:
    """An OpenAI-compatible server's ``/v1/completions`` as a :class:`specdec.protocols.Decoder` (see the module docstring).

    ``base_url``: ``http(s)://host:port`` (a trailing ``/v1`` is accepted and dropped).  ``model``: the
    served model name.  ``samples_per_request``: the most ``n`` of one request.  ``max_in_flight``:
    concurrent requests.  ``request_timeout``: seconds per request.  ``metrics_url``: True for
    ``base_url + "/metrics"``, a URL, or None/False for none (then :meth:`speculation_counts` is None).
    ``retry``: how requests that fail in transport are retried (:class:`.retries.RetryPolicy`, or its budget
    in seconds; 0: never).  ``faults`` lists the failures met, by kind ("HTTP 503", "timeout",
    "ConnectionRefusedError", ...); ``answered`` the (seed, n) of every request whose answer was used - each
    seed once.
    """

    runs_in_process = False  # the work happens in the server: a benchmark measures no peak memory here

    def __init__(self, base_url: str, model: str, *, sampling: SamplingConfig | None = None, settings: SamplingSettings | None = None,
                 samples_per_request: int = 16, max_in_flight: int = 8, request_timeout: float = 120.0, ignore_eos: bool = True,
                 metrics_url: str | None | bool = True, name: str | None = None, retry: RetryPolicy | float = RetryPolicy(),
                 decode=None) -> None:
        root = server_root(base_url)
        if not isinstance(model, str) or not model:
            raise (TypeError if not isinstance(model, str) else ValueError)(f"model must be the served model's name (a non-empty str), got {model!r}")
        settings = settings_from(sampling, settings)
        self.fields = self.request_fields(settings, decode)  # refuses what no request can carry, here and not at the first call
        if not isinstance(ignore_eos, bool):
            raise TypeError(f"ignore_eos must be a bool, got {type(ignore_eos).__name__} {ignore_eos!r}")
        metrics = metrics_address(root, metrics_url)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__} {name!r}")
        self.base_url = root
        self.url = root + "/v1/completions"
        self.model = model
        self.sampling_settings = settings
        self.sampling = settings.sampling
        asked = as_int("samples_per_request", samples_per_request, minimum=1)  # checked even where settings give n
        self.samples_per_request = settings.samples_per_request or asked
        self.max_in_flight = as_int("max_in_flight", max_in_flight, minimum=1)
        self.request_timeout = as_float("request_timeout", request_timeout, minimum=0.0, low_open=True)
        self.ignore_eos = ignore_eos
        self.metrics_url = metrics
        self.metrics_error: str | None = None  # why the last read of /metrics failed, if it did
        self.retry = as_retry_policy(retry)
        self.faults: list[str] = []  # every transport failure retried (or given up on), in order
        self.answered: list[tuple[int, int]] = []  # (seed, n) of every request whose whole answer was used
        self._counters = _Monotone()
        self.name = name or self.settings

    @property
    def settings(self) -> str:
        """One line: the server, model and sampling."""
        return (f"OpenAI server {self.base_url} (model {self.model}; {self.sampling_settings.label}; n<={self.samples_per_request}, "
                f"{self.max_in_flight} in flight)")

    def request_fields(self, settings: SamplingSettings, decode) -> dict:
        """The sampling fields every request carries (:func:`.fields.completion_fields`; another endpoint overrides this)."""
        return completion_fields(settings, decode)

    def read_answer(self, request: Request, body: bytes, status: int, what: str) -> list[list[int]]:
        """The token ids of each of the request's rows (:func:`.wire.read_choices`; another endpoint overrides this)."""
        return read_choices(request, body, status, what)

    def payload(self, request: Request, max_new_tokens: int) -> dict:
        """The JSON body of one request: every sampling field sent, "off" included (:mod:`.fields`)."""
        body = {"model": self.model, "prompt": list(request.prompt), "max_tokens": max_new_tokens, **self.fields,
                "n": len(request.rows), "ignore_eos": self.ignore_eos, "return_token_ids": True, "logprobs": None, "stream": False}
        if self.sampling_settings.seeded:
            body["seed"] = request.seed
        return body

    def plan(self, prompts: Sequence[Sequence[int]], seed: int) -> list[Request]:
        """The requests of one call, in order, with their seeds (:func:`.requests.plan_requests`)."""
        return plan_requests(prompts, seed, self.samples_per_request)

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
            raise TypeError(f"prompts must be a list of token-id lists, got {type(prompts).__name__}")
        rows = [tuple(as_int(f"prompts[{i}][{j}]", t, minimum=0) for j, t in enumerate(p)) for i, p in enumerate(prompts)]
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
        requests = self.plan(rows, as_seed(seed))
        out: list[list[int] | None] = [None] * len(rows)
        ended = threading.Event()  # set when the call ends (answered, failed or interrupted): no request retries after it
        try:
            for request, tokens in _in_flight(requests, lambda r: self._ask(r, max_new_tokens, len(requests), ended),
                                              self.max_in_flight, ended):
                for row, ids in zip(request.rows, tokens):
                    out[row] = ids
        finally:
            ended.set()
        return out  # type: ignore[return-value]

    def _ask(self, request: Request, max_new_tokens: int, total: int, ended: threading.Event) -> tuple[Request, list[list[int]]]:
        """One request, retried while its transport fails (:mod:`.retries`, the same body and seed each time),
        until it is answered, the retry budget is spent, or the call has ended."""
        what, started, attempt = request.describe(self.url, total), time.monotonic(), 0
        while True:
            try:
                status, body = post_json(self.url, self.payload(request, max_new_tokens), self.request_timeout, what)
                break
            except TransportError as error:
                wait = self.retry.wait(attempt, error.retry_after, started)
                self.faults.append(error.reason)
                if wait is None:
                    raise ServerRequestError(f"{error} (gave up after {attempt + 1} attempt(s) in {time.monotonic() - started:.0f} s: "
                                             f"the retry budget is {self.retry.budget:g} s)") from None
                attempt += 1
                if ended.wait(wait):  # the call ended meanwhile (another request failed, or Ctrl-C): stop here
                    raise ServerRequestError(f"{error} (not retried: the call ended)") from None
        answer = rows_within(self.read_answer(request, body, status, what), max_new_tokens, request, what)  # never cut
        self.answered.append((request.seed, len(request.rows)))
        return request, answer

    def stream(self, prompt: Sequence[int], max_new_tokens: int, seed: int):
        """One request for ``prompt`` streamed (:func:`.stream.stream_events`): yields the number of tokens each
        event brought (:meth:`count_streamed`), as they arrive (the open-loop benchmark's
        :class:`specdec.bench.open_loop.StreamingDecoder`).  Not retried: a stream that fails is that request's failure;
        one that brings more than ``max_new_tokens`` tokens breaks the contract (:func:`.stream.within_max_tokens`)."""
        request = Request(0, tuple(as_int(f"prompt[{j}]", t, minimum=0) for j, t in enumerate(prompt)), (0,), as_seed(seed))
        what, max_new_tokens = request.describe(self.url, 1) + " (streamed)", as_int("max_new_tokens", max_new_tokens, minimum=1)
        events = stream_events(self.url, self.payload(request, max_new_tokens), self.request_timeout, what)
        for count in within_max_tokens((self.count_streamed(event) for event in events), max_new_tokens, what):
            if count:
                yield count

    def count_streamed(self, event: dict) -> int:
        """Tokens in one streamed event of ``/v1/completions``: its choice's ``token_ids`` (asked with ``return_token_ids``),
        or one for a chunk of text where the server sends no ids."""
        choices = event.get("choices") or []
        ids = [c.get("token_ids") for c in choices if isinstance(c, dict)]
        if any(isinstance(i, list) for i in ids):
            return sum(len(i) for i in ids if isinstance(i, list))
        return sum(1 for c in choices if isinstance(c, dict) and c.get("text"))

    def speculation_counts(self) -> dict | None:
        """The server's cumulative speculation counters (drafts, draft_tokens, accepted_tokens) from its
        Prometheus ``/metrics``; None without a metrics URL, when the endpoint has no such counters, or
        when it cannot be read (the reason is kept in :attr:`metrics_error`)."""
        if self.metrics_url is None:
            return None
        text, self.metrics_error = get_text(self.metrics_url, self.request_timeout)
        counts = None if text is None else parse_counters(text)
        return None if counts is None else self._counters.add(counts)

    def __repr__(self) -> str:
        return f"OpenAICompletionsDecoder({self.base_url!r}, {self.model!r}, {self.settings})"
