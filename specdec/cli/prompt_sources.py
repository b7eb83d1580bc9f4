"""``specdec check``'s prompts for a decoder (``--server`` or ``--kind decoder``), as a user gives them, to token ids.

One source per run (two are a UsageError: which order they would run in is not for us to guess):

* ``--prompts '1,2,3;4,5'``: token ids, used as given (nothing is tokenised);
* ``--prompt TEXT`` (repeatable): completion text, tokenised as the server's ``/v1/completions`` tokenises a text
  prompt; with ``--chat`` each text is one user message put through the model's chat template with the assistant
  prefix instead;
* ``--prompts-file FILE``: a JSONL file, one ``{"prompt": text}``, ``{"messages": [...]}`` or ``{"prompt_ids": [...]}``
  per line (:func:`specdec.workload.prompt_inputs.read_jsonl`; ``--chat`` applies to its ``prompt`` lines);
* none of these: the embedded workload (:func:`specdec.workload.prompt_inputs.default_inputs`, the first prompt of
  three task kinds, chat-templated).

Who tokenises: ``--tokenizer DIR`` (the model's tokenizer folder, transformers ``AutoTokenizer``, offline) when given,
else the ``--server``'s own ``POST /tokenize`` (vLLM's form, chat form included:
:func:`specdec.adapters.openai.tokenize.server_tokenize`).  A SUBJECT has no server: text needs ``--tokenizer``.
Everything is decided here, during the argument checks, before the plan is printed and before any sampling; every
refusal (a file's line, a server that cannot be reached or has no ``/tokenize``, a prompt that tokenises to nothing)
is a UsageError naming the option and the value.  The ids and, where given, the text are kept (:func:`resolve`'s
record) for the JSON report, so a run can be repeated exactly; a continued run (``--resume``) tokenises again, and
the checkpoint's fingerprint (the prompts as ids) refuses it if the tokenizer gives other ids.
"""

from __future__ import annotations

import os

from ._args import UsageError, folder

__all__ = ["add_arguments", "given", "resolve", "summary"]

SOURCES = ("--prompts", "--prompt", "--prompts-file")
TOKENIZING = ("--tokenizer", "--chat")  # options that only mean something when something is tokenised


def add_arguments(check) -> None:
    group = check.add_argument_group("prompts of a decoder (--server, --kind decoder): one of --prompts, --prompt, --prompts-file; "
                                     "none: the embedded workload")
    group.add_argument("--prompt", action="append", metavar="TEXT",
                       help="a text prompt (repeat for more), tokenised by --tokenizer or else by the --server's own /tokenize")
    group.add_argument("--prompts-file", metavar="FILE",
                       help='a JSONL file, one prompt per line: {"prompt": "text"}, {"messages": [{"role": ..., "content": ...}]} '
                            '(chat template applied) or {"prompt_ids": [ids]}')
    group.add_argument("--chat", action="store_true",
                       help="put each --prompt text (and each 'prompt' line of --prompts-file) through the model's chat template "
                            "as one user message, with the assistant prefix (default: the text as a completion prompt)")
    group.add_argument("--tokenizer", metavar="DIR",
                       help="the model's tokenizer folder (transformers AutoTokenizer, offline): tokenises instead of the "
                            "server's /tokenize; needed for text with a SUBJECT")


def given(args) -> dict:
    """The prompt options given, by name (for the checks that refuse them outside a decoder)."""
    values = {"--prompts": args.prompts, "--prompt": args.prompt, "--prompts-file": args.prompts_file,
              "--tokenizer": args.tokenizer, "--chat": args.chat or None}
    return {name: value for name, value in values.items() if value is not None}


def resolve(args) -> tuple[list[list[int]], dict]:
    """(the prompts as token ids, the record the JSON report keeps) from ``args``; a UsageError says what is wrong."""
    from ..workload.prompt_inputs import PromptInput, default_inputs, read_jsonl

    folder("--tokenizer", args.tokenizer)
    sources = [name for name in SOURCES if name in given(args)]
    if len(sources) > 1:
        raise UsageError(f"give one source of prompts, not {' and '.join(sources)}: --prompts (token ids), --prompt TEXT "
                         "(repeatable) or --prompts-file FILE")
    if sources == ["--prompts"]:
        unused = [name for name in TOKENIZING if name in given(args)]
        if unused:
            raise UsageError(f"{' and '.join(unused)}: nothing to tokenise; --prompts are token ids (text: --prompt TEXT)")
        ids = _ids(args.prompts)
        return ids, {"source": "--prompts", "tokenizer": None, "prompts": [{"origin": "--prompts", "token_ids": p} for p in ids]}
    if sources == ["--prompt"]:
        inputs, source = [PromptInput(origin=f"--prompt {i + 1}", text=_text(i, text)) for i, text in enumerate(args.prompt)], "--prompt"
    elif sources == ["--prompts-file"]:
        try:
            inputs, source = read_jsonl(args.prompts_file), f"--prompts-file {args.prompts_file}"
        except ValueError as error:
            raise UsageError(f"--prompts-file {error}") from None
        if args.chat and not any(p.text is not None for p in inputs):
            raise UsageError(f"--chat applies to 'prompt' lines; --prompts-file {args.prompts_file} has none")
    else:
        if args.chat:
            raise UsageError("--chat applies to --prompt TEXT or --prompts-file lines; the embedded workload is chat-templated already")
        if args.server is None and args.tokenizer is None:
            raise UsageError("--kind decoder needs --prompts, token ids such as '1,2,3;4,5' (';' between prompts), or --prompt TEXT "
                             "or --prompts-file FILE with --tokenizer DIR, or --tokenizer DIR alone for the embedded workload")
        inputs, source = default_inputs(), "the embedded workload"
    tokenizer = _tokenizer(args, inputs)
    entries = [_tokenised(p, args.chat, tokenizer) for p in inputs]
    record = {"source": source, "tokenizer": tokenizer.label if tokenizer else None, "prompts": entries}
    return [e["token_ids"] for e in entries], record


def summary(record: dict) -> str:
    """The plan's line about the prompts."""
    lengths = [len(e["token_ids"]) for e in record["prompts"]]
    by = f", tokenised by {record['tokenizer']}" if record["tokenizer"] else ""
    shown = ", ".join(str(n) for n in lengths[:8]) + (", ..." if len(lengths) > 8 else "")
    return f"prompts: {len(lengths)} from {record['source']}{by}; {shown} tokens"


def _ids(text: str) -> list[list[int]]:
    try:
        prompts = [[int(x) for x in part.split(",")] for part in text.split(";")]
    except ValueError:
        raise UsageError(f"--prompts must be ';'-separated lists of comma-separated token ids, got {text!r} "
                         "(text prompts: --prompt TEXT)") from None
    if any(t < 0 for p in prompts for t in p):
        raise UsageError(f"--prompts must be non-negative token ids, got {text!r}")
    return prompts


def _text(index: int, text: str) -> str:
    if not text:
        raise UsageError(f"--prompt (the {_ordinal(index)}) is empty; give a non-empty text")
    return text


def _ordinal(index: int) -> str:
    return {0: "first", 1: "second", 2: "third"}.get(index, f"{index + 1}th")


def _tokenised(prompt, chat: bool, tokenizer) -> dict:
    """The report's entry of one prompt: where it came from, its text or messages, whether a chat template was applied,
    its token ids."""
    if prompt.token_ids is not None:
        return {"origin": prompt.origin, "token_ids": list(prompt.token_ids)}
    if prompt.text is not None and not chat:
        entry = {"origin": prompt.origin, "text": prompt.text, "chat_template": False}
        ids = tokenizer.text(prompt.origin, prompt.text)
    else:
        messages = [dict(m) for m in prompt.messages] if prompt.messages is not None else [{"role": "user", "content": prompt.text}]
        entry = {"origin": prompt.origin, **({"text": prompt.text} if prompt.text is not None else {}), "messages": messages,
                 "chat_template": True}
        ids = tokenizer.messages(prompt.origin, messages)
    if not ids:
        raise UsageError(f"{prompt.origin}: tokenised by {tokenizer.label} to no tokens; a prompt needs at least one")
    return {**entry, "token_ids": ids}


def _tokenizer(args, inputs):
    """Who tokenises ``inputs`` (None when all are token ids): ``--tokenizer``, else the server."""
    if all(p.token_ids is not None for p in inputs):
        return None
    if args.tokenizer is not None:
        return _FolderTokenizer(args.tokenizer)
    if args.server is None:
        raise UsageError("text prompts of a SUBJECT need --tokenizer DIR (the model's tokenizer folder); a --server tokenises "
                         "with its own /tokenize")
    return _ServerTokenizer(args.server, args.model, args.request_timeout)


class _FolderTokenizer:
    """``--tokenizer DIR``: transformers' AutoTokenizer, offline (text as ``encode`` gives it, BOS where the tokenizer
    adds one, as vLLM's text prompts; messages through :func:`specdec.workload.prompts.chat_ids`)."""

    def __init__(self, path: str) -> None:
        folder("--tokenizer", path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError, TypeError) as error:
            raise UsageError(" ".join(f"--tokenizer {path}: transformers cannot load a tokenizer there: "
                                      f"{type(error).__name__}: {error}".split())[:400]) from None
        self.label = f"--tokenizer {path}"

    def text(self, origin: str, text: str) -> list[int]:
        return [int(t) for t in self.tokenizer.encode(text)]

    def messages(self, origin: str, messages: list[dict]) -> list[int]:
        from ..workload.prompts import chat_ids

        try:
            return chat_ids(self.tokenizer, messages)
        except (ValueError, TypeError, KeyError) as error:  # no chat template, or one that refuses the messages
            raise UsageError(" ".join(f"{origin}: {self.label} cannot apply a chat template: {type(error).__name__}: "
                                      f"{error}".split())[:400]) from None


class _ServerTokenizer:
    """The ``--server``'s own ``POST /tokenize`` (vLLM's form)."""

    def __init__(self, url: str, model: str, timeout: float) -> None:
        from ..adapters.openai.client import server_root

        try:
            self.root = server_root(url)
        except (TypeError, ValueError) as error:
            raise UsageError(f"--server {url!r}: {error}") from None
        self.url, self.model, self.timeout = url, model, timeout
        self.label = f"POST {self.root}/tokenize"

    def text(self, origin: str, text: str) -> list[int]:
        return self._ask(origin, text=text)

    def messages(self, origin: str, messages: list[dict]) -> list[int]:
        return self._ask(origin, messages=messages)

    def _ask(self, origin: str, **prompt) -> list[int]:
        from ..adapters.openai.tokenize import server_tokenize
        from ..adapters.openai.wire import TransportError
        from ..errors import ServerRequestError

        try:
            return server_tokenize(self.url, self.model, timeout=self.timeout, **prompt)
        except TransportError as error:
            raise UsageError(f"--server {self.url}: cannot tokenise {origin}: the server did not answer: {error}") from None
        except ServerRequestError as error:
            raise UsageError(f"--server {self.url}: cannot tokenise {origin}: {error} (a server without /tokenize, or whose "
                             "/tokenize has no chat form: give --tokenizer DIR, the model's tokenizer folder)") from None
