"""HTTP for an OpenAI-compatible server subject: a request posted, its answer read by the contract, the
``/metrics`` counters read (standard library only: ``urllib.request``, ``json``).

Every failure - refused connection, HTTP error, timeout, a body that is not JSON, the wrong number of
choices, missing or non-integer token ids, a prompt echoed back that is not the one sent - raises
:class:`~specdec.errors.ServerRequestError` naming the request (URL, first prompt row, n, seed, HTTP
status, the first 200 characters of the body).  Loopback servers are never reached through a proxy.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from ...errors import ServerRequestError

__all__ = ["COUNTERS", "get_text", "parse_counters", "post_json", "read_choices"]

COUNTERS = {
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted_tokens",
}
BODY_SHOWN = 200  # characters of a failing answer's body in an error message
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback servers: never through a proxy


def post_json(url: str, payload: dict, timeout: float, what: str) -> tuple[int, bytes]:
    """POST ``payload`` as JSON; (HTTP status, body).  Every failure is a :class:`ServerRequestError` naming ``what``."""
    data = json.dumps(payload).encode()
    http = urllib.request.Request(url, data=data, method="POST",
                                  headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with _open(http, timeout) as answer:
            status, body = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        body = _read_quietly(error)
        raise ServerRequestError(f"{what}: HTTP {error.code} {error.reason}: {_shown(body)}") from None
    except (socket.timeout, TimeoutError) as error:
        raise ServerRequestError(f"{what}: no answer within request_timeout={timeout:g} s ({error})") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            raise ServerRequestError(f"{what}: no answer within request_timeout={timeout:g} s ({reason})") from None
        raise ServerRequestError(f"{what}: {type(reason).__name__}: {reason}") from None
    except (ConnectionError, OSError) as error:  # a connection reset or closed mid-answer
        raise ServerRequestError(f"{what}: {type(error).__name__}: {error}") from None
    return status, body


def read_choices(request, body: bytes, status: int, what: str) -> list[list[int]]:
    """The token ids of each of the request's ``n`` choices, by index; a ServerRequestError for any answer the contract refuses."""

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


def get_text(url: str, timeout: float) -> tuple[str | None, str | None]:
    """(the body of ``GET url`` as text, None), or (None, why it could not be read)."""
    try:
        with _open(urllib.request.Request(url), timeout) as answer:
            return answer.read().decode("utf-8", "replace"), None
    except (urllib.error.URLError, OSError, socket.timeout) as error:
        return None, f"GET {url}: {type(error).__name__}: {error}"


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
