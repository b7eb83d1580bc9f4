"""A streamed answer (server-sent events) read event by event: what an open-loop benchmark times (issue 33).

``POST`` with ``"stream": true``: the server answers ``data: {json}`` lines, one event per chunk of tokens, ending with
``data: [DONE]`` (OpenAI's servers) or an event whose ``"stop"`` is true (llama-server's native ``/completion``).
:func:`stream_events` yields each event's JSON object as it arrives; a transport failure, an HTTP error or an event
that is not JSON raises :class:`~specdec.errors.ServerRequestError` naming the request, as does a stream cut before
its end (no ``[DONE]``, no last event).  An answer with no streamed event at all - a server that ignored ``"stream":
true`` and answered in one body - broke the streaming Protocol: a :class:`~specdec.errors.ContractError` naming the
request and what came instead.  Loopback servers are never reached through a proxy (:func:`.wire._open`).
:func:`within_max_tokens` refuses a stream that brings more tokens than the request asked (the server's contract
broken: never cut to fit).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Iterable, Iterator

from ...errors import ContractError, ServerRequestError
from .wire import _open, _read_quietly, _shown

__all__ = ["stream_events", "within_max_tokens"]


def stream_events(url: str, payload: dict, timeout: float, what: str) -> Iterator[dict]:
    """The events of one streamed answer to ``payload`` (``"stream": true`` is set here), as they arrive."""
    body = json.dumps({**payload, "stream": True}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
    try:
        with _open(request, timeout) as answer:
            events, other = 0, b""
            for raw in answer:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    other = other or raw.strip()
                    continue  # blank separators, comments, "event:" lines
                events += 1
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except ValueError:
                    raise ServerRequestError(f"{what}: a streamed event is not JSON: {_shown(data.encode())}") from None
                if not isinstance(event, dict):
                    raise ServerRequestError(f"{what}: a streamed event is {type(event).__name__}, not an object")
                if "error" in event:
                    raise ServerRequestError(f"{what}: the stream carried an error: {_shown(data.encode())}")
                yield event
                if event.get("stop") is True:  # llama-server's last event
                    return
            if not events:
                kind = answer.headers.get("Content-Type", "no Content-Type")
                raise ContractError(f"{what}: the server answered ({kind}) with no streamed event (no 'data:' line): it ignored "
                                    f"\"stream\": true, and an answer in one body has no token arrivals to time: {_shown(other)}")
            raise ServerRequestError(f"{what}: the stream ended after {events} event(s) without its end (no [DONE], no last event)")
    except urllib.error.HTTPError as error:
        raise ServerRequestError(f"{what}: HTTP {error.code} {error.reason}: {_shown(_read_quietly(error))}") from None
    except (urllib.error.URLError, OSError, socket.timeout) as error:
        raise ServerRequestError(f"{what}: {type(error).__name__}: {error}") from None


def within_max_tokens(counts: Iterable[int], max_tokens: int, what: str) -> Iterator[int]:
    """``counts`` (tokens per streamed event) as they come, while their running total stays within ``max_tokens``; a
    :class:`~specdec.errors.ServerRequestError` naming the request when the stream brings more than it asked."""
    total = 0
    for count in counts:
        total += count
        if total > max_tokens:
            raise ServerRequestError(f"{what}: the server broke the contract: its stream brought {total} tokens, more than the "
                                     f"max_tokens={max_tokens} asked (does it echo the prompt in its token ids?)")
        yield count
