"""A server's own tokenizer, over HTTP: text, or chat messages through the server's chat template, to token ids.

Two request forms, read in the servers' source (standard library only, through :func:`.wire.post_json`):

* **vLLM** (0.32, ``vllm/entrypoints/serve/tokenize/protocol.py``: ``TokenizeCompletionRequest``,
  ``TokenizeChatRequest``, ``TokenizeResponse``; route ``POST /tokenize`` in ``.../tokenize/api_router.py``):
  ``{"model", "prompt": text, "add_special_tokens": true}`` tokenises text as ``/v1/completions`` does with a text
  prompt (BOS where the tokenizer adds one; true is vLLM's default too), and ``{"model", "messages": [...],
  "add_generation_prompt": true}`` applies the served model's chat template with the assistant prefix (special tokens
  come from the template only, vLLM's default for this form); the answer is ``{"count", "max_model_len", "tokens"}``.
* **llama-server** (llama.cpp ``tools/server/server-context.cpp``, ``post_tokenize``): ``{"content": text,
  "add_special": true, "parse_special": true}`` answers ``{"tokens": [...]}``.  ``add_special`` is sent because the
  route's default is false while its completion path tokenises a text prompt with ``add_special = true`` (and
  ``parse_special = true``), so the ids are those ``/completion`` would decode from.  Its ``/tokenize`` has no chat
  form: messages are refused by name (``ValueError``), never flattened into text.

A failure - refused connection, timeout, an HTTP error (a server without the route answers 404), a body that is not
JSON or has no list of non-negative integer ``tokens`` - is a :class:`~specdec.errors.ServerRequestError` naming the
URL and the answer's first 200 characters.
"""

from __future__ import annotations

from ..._validation import as_float
from .client import server_root
from .wire import _short, decoded_answer, post_json

__all__ = ["DIALECTS", "server_tokenize"]

DIALECTS = ("vllm", "llama-server")


def server_tokenize(base_url: str, model: str | None = None, *, text: str | None = None, messages: list | None = None,
                    dialect: str = "vllm", timeout: float = 30.0) -> list[int]:
    """The token ids the server at ``base_url`` gives ``text`` (as a completion prompt), or ``messages`` (its chat
    template applied, with the assistant prefix): exactly one of the two.  ``model``: the served model's name (vLLM
    checks it; llama-server serves one model and is not sent it).  ``dialect``: ``"vllm"`` or ``"llama-server"``."""
    root = server_root(base_url)
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {list(DIALECTS)}, got {dialect!r}")
    if (text is None) == (messages is None):
        raise ValueError("give exactly one of text (a str) and messages (a list of chat messages)")
    if text is not None and not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if messages is not None and (not isinstance(messages, list) or not messages):
        raise ValueError(f"messages must be a non-empty list of chat messages, got {_short(messages)}")
    timeout = as_float("timeout", timeout, minimum=0.0, low_open=True)
    if dialect == "llama-server":
        if messages is not None:
            raise ValueError("llama-server's /tokenize takes text only (no chat form): apply the chat template with the "
                             "model's tokenizer and pass the ids, or pass text")
        payload = {"content": text, "add_special": True, "parse_special": True}
    elif text is not None:
        payload = {"model": model, "prompt": text, "add_special_tokens": True}
    else:
        payload = {"model": model, "messages": messages, "add_generation_prompt": True}
    url = root + "/tokenize"
    what = f"POST {url} ({'text' if text is not None else 'chat messages'})"
    status, body = post_json(url, payload, timeout, what)
    answer, bad = decoded_answer(body, status, what)
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens):
        raise bad("the answer has no 'tokens' list of non-negative integer token ids")
    return [int(t) for t in tokens]

