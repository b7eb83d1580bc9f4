"""An OpenAI-compatible server that breaks its side of the contract (issue 40, items 2 and 7): a hostile
``Retry-After`` never takes the client past its retry budget, and an answer of more token ids than
``max_tokens`` asked (a server echoing the prompt in them) is the server's error, never cut to fit."""

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.retries import RetryPolicy, retry_after_seconds
from specdec.errors import ServerRequestError
from specdec.sampling_settings import SamplingSettings

RUNAWAY = 200  # a client still asking after this many refusals is stopped with an HTTP 400 (the test fails, it does not hang)


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, code: int, body: bytes, headers=()) -> None:
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 - http.server's name
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        plan = self.server.plan  # type: ignore[attr-defined]
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.count += 1  # type: ignore[attr-defined]
            count = self.server.count  # type: ignore[attr-defined]
        if "retry_after" in plan:
            if count > RUNAWAY:
                return self._send(400, b'{"error": "runaway client"}')
            return self._send(429, b'{"error": "throttled"}', [("Retry-After", plan["retry_after"])])
        rows = [list(request["prompt"]) * plan["echo"] + [1] * request["max_tokens"] for _ in range(request["n"])]
        if request.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for ids in ([3] * request["max_tokens"], list(request["prompt"]) * plan["echo"]):
                self.wfile.write(f"data: {json.dumps({'choices': [{'index': 0, 'token_ids': ids}]})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
            return None
        choices = [{"index": i, "token_ids": row, "text": ""} for i, row in enumerate(rows)]
        return self._send(200, json.dumps({"choices": choices}).encode(), [("Content-Type", "application/json")])


@contextmanager
def hostile(**plan):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.plan, server.lock, server.count, server.daemon_threads = plan, threading.Lock(), 0, True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _client(server, **kwargs) -> OpenAICompletionsDecoder:
    return OpenAICompletionsDecoder(f"http://127.0.0.1:{server.server_address[1]}", "m", request_timeout=5.0, metrics_url=None,
                                    **kwargs)


@pytest.mark.parametrize("header", ["nan", "NaN", "inf", "-inf", "-5", "1e3", "9" * 400])
def test_a_retry_after_that_is_no_delay_is_a_backoff_within_the_budget(header):
    """``Retry-After: nan`` made the client retry at once, its budget never checked (4,513 requests in 4 s);
    ``-5`` was read as 0 and ``inf`` as the longest wait: each is now absent, the backoff applies."""
    assert retry_after_seconds(header) is None
    policy = RetryPolicy(budget=1.0, first=0.05, longest=0.2, longest_wait=0.5)
    with hostile(retry_after=header) as server:
        client = _client(server, retry=policy)
        started = time.monotonic()
        with pytest.raises(ServerRequestError) as caught:
            client([[1, 2]], 2, 0)
        spent = time.monotonic() - started
    message = str(caught.value)
    assert "gave up after" in message and "the retry budget is 1 s" in message and "HTTP 429" in message, message
    assert "request 1 of 1: POST http://127.0.0.1:" in message and "seed=" in message
    # the backoff 0.05, 0.1, 0.2, 0.2, ...: about 7 waits fit 1 s; never a storm, never past the budget
    assert 3 <= server.count <= 12 and spent < 1.0 + 1.5, (server.count, spent)


def test_the_backoff_never_overflows_whatever_the_attempt():
    """After ~1,100 answers of 429 with ``Retry-After: 0`` a 503 without one raised OverflowError from 0.5 * 2**attempt."""
    policy = RetryPolicy()
    now = time.monotonic()
    assert [policy.wait(a, None, now) for a in (0, 1, 6, 1_100, 10**6, 10**30)] == [0.5, 1.0, 30.0, 30.0, 30.0, 30.0]
    assert policy.wait(5, float("nan"), now) == 16.0 and policy.wait(5, -1.0, now) == 16.0 and policy.wait(5, 0.0, now) == 0.0
    assert policy.wait(0, 0.0, now - 300.0) is None  # the budget spent: no wait, even of zero seconds
    assert RetryPolicy(budget=0).wait(0, 0.0, time.monotonic()) is None  # 0: never retry
    with pytest.raises(ValueError, match="attempt"):
        policy.wait(-1, None, now)


@pytest.mark.parametrize("echo", [1, 2])
def test_an_answer_longer_than_max_tokens_is_the_servers_error_not_cut(echo):
    """A server echoing the prompt in ``token_ids``: rows of len(prompt) + 3 ids for max_tokens=3 were accepted."""
    with hostile(echo=echo) as server:
        client = _client(server, settings=SamplingSettings(samples_per_request=2))
        with pytest.raises(ServerRequestError) as caught:
            client([[7, 8]] * 2, 3, 0)
    message = str(caught.value)
    assert "broke the contract" in message and "more than the max_tokens=3 asked" in message, message
    assert f"has {3 + 2 * echo} token ids" in message and "POST http://127.0.0.1:" in message and "n=2, seed=" in message
    assert not client.answered  # nothing of the answer was used


def test_an_answer_of_max_tokens_is_read_whole():
    with hostile(echo=0) as server:
        assert _client(server)([[7, 8]] * 2, 3, 0) == [[1, 1, 1], [1, 1, 1]]


def test_a_stream_longer_than_max_tokens_is_the_servers_error():
    with hostile(echo=1) as server:
        counts = []
        with pytest.raises(ServerRequestError) as caught:
            for count in _client(server).stream([7, 8], 3, 0):
                counts.append(count)
    assert counts == [3]  # what the contract allows is yielded as it came; the rest is refused, not cut
    message = str(caught.value)
    assert "(streamed)" in message and "its stream brought 5 tokens, more than the max_tokens=3 asked" in message, message
    with hostile(echo=0) as server:
        assert list(_client(server).stream([7, 8], 3, 0)) == [3]


def test_samples_per_request_is_checked_even_where_the_settings_give_n():
    with pytest.raises(ValueError, match="samples_per_request must be an integer >= 1, got 0"):
        OpenAICompletionsDecoder("http://127.0.0.1:1", "m", samples_per_request=0, settings=SamplingSettings(samples_per_request=2))
    with pytest.raises(TypeError, match="samples_per_request"):
        OpenAICompletionsDecoder("http://127.0.0.1:1", "m", samples_per_request="4", settings=SamplingSettings(samples_per_request=2))
    assert OpenAICompletionsDecoder("http://127.0.0.1:1", "m", samples_per_request=4,
                                    settings=SamplingSettings(samples_per_request=2)).samples_per_request == 2
