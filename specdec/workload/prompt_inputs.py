"""Prompts as a user gives them, before any tokenizer: text, chat messages or token ids, from a JSONL file or the
embedded workload.

A :class:`PromptInput` is one prompt in exactly one of three forms - ``text`` (a completion prompt),
``messages`` (chat messages, to be put through the model's chat template with the assistant prefix) or
``token_ids`` (used as given) - and where it came from (``origin``, e.g. ``"prompts.jsonl:3"``).

:func:`read_jsonl` reads a prompts file: one JSON object per line, each with exactly one of the keys

* ``"prompt"``: a non-empty string (text);
* ``"messages"``: a non-empty list of ``{"role": str, "content": str}`` objects (chat);
* ``"prompt_ids"``: a non-empty list of non-negative integers (token ids),

and nothing else (a misspelt key is refused, not ignored).  Blank lines are skipped; a line number counts every
line of the file from 1.  Every refusal is a ``ValueError`` naming the file, the line and the field.

:func:`default_inputs` is the embedded default: the first prompt of each of :data:`DEFAULT_KINDS` (chat messages,
:data:`specdec.workload.texts.PROMPTS`): a question, a translation and a retrieval prompt whose answer copies the
prompt's passage (where prompt-lookup drafting finds its n-grams).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .texts import PROMPTS

__all__ = ["DEFAULT_KINDS", "FIELDS", "PromptInput", "default_inputs", "read_jsonl"]

DEFAULT_KINDS = ("qa", "translation", "retrieval")  # the embedded default: the first prompt of each kind
FIELDS = ("prompt", "messages", "prompt_ids")       # the keys of a prompts file's line, exactly one each


@dataclass(frozen=True)
class PromptInput:
    """One prompt before tokenising: exactly one of ``text``, ``messages``, ``token_ids``; ``origin`` says where it came from."""

    origin: str
    text: str | None = None
    messages: tuple | None = None   # of {"role", "content"} dicts
    token_ids: tuple | None = None  # of ints

    def __post_init__(self) -> None:
        given = [name for name in ("text", "messages", "token_ids") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"a PromptInput has exactly one of text, messages, token_ids; {self.origin} has {given or 'none'}")

    @property
    def form(self) -> str:
        return "text" if self.text is not None else "messages" if self.messages is not None else "token_ids"


def default_inputs() -> list[PromptInput]:
    """The embedded default prompts: the first prompt of each kind of :data:`DEFAULT_KINDS`, as chat messages."""
    return [PromptInput(origin=f"workload {kind}[0]", messages=tuple(dict(m) for m in PROMPTS[kind][0])) for kind in DEFAULT_KINDS]


def read_jsonl(path) -> list[PromptInput]:
    """The prompts of the JSONL file ``path`` (module docstring); a ValueError names the file, line and field."""
    where = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{where}: cannot read it as UTF-8 text: {type(error).__name__}: {error}") from None
    prompts = [_entry(where, number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not prompts:
        raise ValueError(f"{where}: no prompts (one JSON object per line, e.g. {{\"prompt\": \"Hello\"}})")
    return prompts


def _entry(where: str, number: int, line: str) -> PromptInput:
    at = f"{where}:{number}"
    try:
        value = json.loads(line)
    except ValueError as error:
        raise ValueError(f"{at}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{at}: a line is a JSON object with one of {list(FIELDS)}, got {type(value).__name__}")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise ValueError(f"{at}: unknown field(s) {unknown}; a line has exactly one of {list(FIELDS)}")
    given = [key for key in FIELDS if key in value]
    if len(given) != 1:
        raise ValueError(f"{at}: a line has exactly one of {list(FIELDS)}, got {given or 'none'}")
    key, content = given[0], value[given[0]]
    if key == "prompt":
        if not isinstance(content, str) or not content:
            raise ValueError(f"{at}: field 'prompt' must be a non-empty string, got {_shown(content)}")
        return PromptInput(origin=at, text=content)
    if key == "messages":
        return PromptInput(origin=at, messages=tuple(_messages(at, content)))
    if (not isinstance(content, list) or not content
            or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in content)):
        raise ValueError(f"{at}: field 'prompt_ids' must be a non-empty list of non-negative integers, got {_shown(content)}")
    return PromptInput(origin=at, token_ids=tuple(int(t) for t in content))


def _messages(at: str, content) -> list[dict]:
    if not isinstance(content, list) or not content:
        raise ValueError(f"{at}: field 'messages' must be a non-empty list of {{\"role\", \"content\"}} objects, got {_shown(content)}")
    for index, message in enumerate(content):
        if (not isinstance(message, dict) or set(message) != {"role", "content"}
                or not isinstance(message["role"], str) or not isinstance(message["content"], str) or not message["role"]):
            raise ValueError(f"{at}: field 'messages[{index}]' must be an object with string 'role' and 'content' "
                             f"(and nothing else), got {_shown(message)}")
    return [dict(message) for message in content]


def _shown(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
