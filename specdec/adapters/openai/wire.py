"""HTTP for an OpenAI-compatible server subject: a request posted, its answer read by the contract, the
``/metrics`` counters read (standard library only: ``urllib.request``, ``json``).

Every failure - refused connection, HTTP error, timeout, a body that is not JSON, the wrong number of
choices, missing or non-integer token ids, a prompt echoed back that is not the one sent, a row of more
token ids than ``max_tokens`` asked (never cut to fit) - raises
:class:`~specdec.errors.ServerRequestError` naming the request (URL, first prompt row, n, seed, HTTP
status, the first 200 characters of the body); the transport failures a client may retry
(:mod:`.retries`) as its subclass :class:`TransportError`.  Loopback servers are never reached through a proxy.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request

from ...errors import ServerRequestError
from .retries import RETRIED_STATUS, retry_after_seconds

__all__ = ["COUNTERS", "TransportError", "decoded_answer", "get_text", "ids_in_order", "parse_counters", "post_json", "read_choices",
           "rows_within"]

COUNTERS = {  # vLLM's names, and llama.cpp's llama-server's (tools/server/server-task.cpp)
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted_tokens",
    "llamacpp:spec_decode_num_drafts_total": "drafts",
    "llamacpp:spec_decode_num_draft_tokens_total": "draft_tokens",
    "llamacpp:spec_decode_num_accepted_tokens_total": "accepted_tokens",
}
PER_POSITION = ("vllm:spec_decode_num_accepted_tokens_per_pos_total", "llamacpp:spec_decode_num_accepted_tokens_per_pos_total")
AT = "accepted_at_"  # "accepted_at_<i>": drafts whose i-th token (1-based) was accepted, from a per-position counter
BODY_SHOWN = 200  # characters of a failing answer's body in an error message
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback servers: never through a proxy


class TransportError(ServerRequestError):
    """A request that failed in transport (refused, reset, cut short, timed out, 429/502/503/504): the
    client may retry it (:mod:`.retries`); ``retry_after`` is the server's ``Retry-After`` in seconds."""

    def __init__(self, message: str, reason: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason  # the failure alone, e.g. "HTTP 503", "ConnectionRefusedError", "timeout"
        self.retry_after = retry_after


def post_json(url: str, payload: dict, timeout: float, what: str) -> tuple[int, bytes]:
    """POST ``payload`` as JSON; (HTTP status, body).  A transport failure is a :class:`TransportError`,
    any other HTTP error a :class:`ServerRequestError`, each naming ``what``."""
    data = json.dumps(payload).encode()
    posted = urllib.request.Request(url, data=data, method="POST",
                                    headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with _open(posted, timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        body = _read_quietly(error)
        message = f"{what}: HTTP {error.code} {error.reason}: {_shown(body)}"
        if error.code in RETRIED_STATUS:
            wait = retry_after_seconds(error.headers.get("Retry-After") if error.headers else None)
            raise TransportError(message, f"HTTP {error.code}", wait) from None
        raise ServerRequestError(message) from None
    except (socket.timeout, TimeoutError) as error:
        raise TransportError(f"{what}: no answer within request_timeout={timeout:g} s ({error})", "timeout") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            raise TransportError(f"{what}: no answer within request_timeout={timeout:g} s ({reason})", "timeout") from None
        raise TransportError(f"{what}: {type(reason).__name__}: {reason}", type(reason).__name__) from None
    except (ConnectionError, OSError, http.client.HTTPException) as error:  # reset, closed mid-answer, a body cut short
        raise TransportError(f"{what}: {type(error).__name__}: {error}", type(error).__name__) from None


def read_choices(request, body: bytes, status: int, what: str) -> list[list[int]]:
    """The token ids of each of the request's ``n`` choices, by index; a ServerRequestError for any answer the contract refuses."""
    answer, bad = decoded_answer(body, status, what)
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list):
        raise bad("the answer has no 'choices' list")

    def echo(choice: dict, position: int) -> None:
        echoed = choice.get("prompt_token_ids")
        if echoed is not None and list(echoed) != list(request.prompt):
            raise bad(f"choices[{position}].prompt_token_ids {_short(echoed)} is not the prompt sent")

    return ids_in_order(choices, len(request.rows), bad, ids_key="token_ids", label="choices[{}]", index_of=lambda c, _: c.get("index"),
                        hint="does the server support return_token_ids?", check=echo)


def rows_within(rows: list[list[int]], max_tokens: int, request, what: str) -> list[list[int]]:
    """``rows`` (a request's answer, one token-id list per row) when none is longer than ``max_tokens``; a row longer than
    the request asked (a server echoing the prompt in its token ids, or ignoring ``max_tokens``) breaks the server's
    contract: a ServerRequestError naming the request, never a row cut to fit."""
    for position, ids in enumerate(rows):
        if len(ids) > max_tokens:
            raise ServerRequestError(f"{what}: the server broke the contract: its answer for row {request.rows[position]} has "
                                     f"{len(ids)} token ids, more than the max_tokens={max_tokens} asked ({_short(ids)}; "
                                     "does it echo the prompt in its token ids?)")
    return rows


def decoded_answer(body: bytes, status: int, what: str):
    """(the JSON answer, ``bad``: why -> the ServerRequestError naming the request, its status and body)."""

    def bad(why: str) -> ServerRequestError:
        return ServerRequestError(f"{what}: HTTP {status}, {why}: {_shown(body)}")

    try:
        return json.loads(body), bad
    except (ValueError, UnicodeDecodeError) as error:
        raise bad(f"the body is not JSON ({error})") from None


def ids_in_order(items: list, n: int, bad, *, ids_key: str, label: str, index_of, hint: str, count: str = "{found} choices for n={n}",
                 check=None) -> list[list[int]]:
    """The ``ids_key`` token ids of ``n`` answer items, ordered by ``index_of(item, position)`` (each of 0..n-1 once);
    ``bad(why)`` raises for a count, an index or ids the contract refuses; ``check(item, position)`` may refuse more."""
    if len(items) != n:
        raise bad(count.format(found=len(items), n=n))
    by_index: dict[int, list[int]] = {}
    for position, item in enumerate(items):
        name = label.format(position)
        if not isinstance(item, dict):
            raise bad(f"{name} is {type(item).__name__}, not an object")
        index = index_of(item, position)
        if not _is_int(index) or not 0 <= index < n or index in by_index:
            raise bad(f"{name}.index is {index!r}: expected each of 0..{n - 1} once")
        ids = item.get(ids_key)
        if not isinstance(ids, list) or not all(_is_int(t) and t >= 0 for t in ids):
            raise bad(f"{name}.{ids_key} is missing or not a list of token ids (got {_short(ids)}; {hint})")
        if check is not None:
            check(item, position)
        by_index[index] = [int(t) for t in ids]
    return [by_index[i] for i in range(n)]


def _label(line: str, name: str) -> str | None:
    """The value of label ``name`` in a Prometheus sample line (None when absent)."""
    found = re.search(r'[{,]\s*' + re.escape(name) + r'="([^"]*)"', line)
    return None if found is None else found.group(1)


def get_text(url: str, timeout: float) -> tuple[str | None, str | None]:
    """(the body of ``GET url`` as text, None), or (None, why it could not be read)."""
    try:
        with _open(urllib.request.Request(url), timeout) as answer:
            return answer.read().decode("utf-8", "replace"), None
    except (urllib.error.URLError, OSError, socket.timeout) as error:
        return None, f"GET {url}: {type(error).__name__}: {error}"


def parse_counters(text: str) -> dict | None:
    """vLLM's (or llama-server's) three speculation counters from Prometheus text (summed over label sets), the
    per-position accepted counts as ``"accepted_at_<i>"`` (i = 1 for the first draft position) when the server
    states them, and the server's ``process_start_time_seconds`` as ``"started"`` when it states one (a restart
    changes it); None when the counters are absent."""
    counts = {key: 0.0 for key in COUNTERS.values()}
    found, started = False, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(None, 1)[0]
        if name == "process_start_time_seconds":
            started = _number(line.split()[-1])
        key = COUNTERS.get(name)
        if name in PER_POSITION:
            position = _label(line, "position")
            key = None if position is None or not position.isdigit() else f"{AT}{int(position) + 1}"
            if key is not None:
                counts.setdefault(key, 0.0)
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
    if not found:
        return None
    out = {key: int(round(v)) for key, v in counts.items()}
    if started is not None:
        out["started"] = started
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


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
