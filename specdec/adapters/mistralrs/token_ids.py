"""Token ids in and out of mistral.rs 0.6.0's Python API, which speaks text.

0.6.0's requests take text (``CompletionRequest.prompt``, ``ChatCompletionRequest.messages``; the engine's
``RequestMessage::CompletionTokens`` is not reachable from Python) and answer text, so the adapter carries ids
across exactly or refuses:

* in: a prompt's ids are detokenized by the engine (``Runner.detokenize_text``) and sent through a chat template
  that writes the message verbatim (:data:`VERBATIM_TEMPLATE`); the engine encodes the rendered text without
  special tokens.  :func:`prompt_text` checks that the engine's own encoding of the text gives back the ids
  (``Runner.tokenize_text``) and refuses a prompt that does not round-trip (ValueError naming the prompt);
* out: the answer's per-token log-probability records (``logprobs=True``: one ``ResponseLogprob`` per emitted token,
  its ``token`` the engine's decoding of that one id, ``Sampler::sample``'s ``tokenizer.decode(&[next_token])``) are
  mapped back to ids through :class:`IdTable`, the decoding of every id of the GGUF's vocabulary (:func:`gguf_token_texts`;
  the engine's own ``detokenize_text`` goes through its engine loop, about 80 ms a call with a draft model).  A string that several ids
  decode to (3 of SmolLM2's 49,152 ids' texts, among them ``'\ufffd'``, which 120-odd byte tokens decode to) is
  resolved from the same record's ``top_logprobs`` (each entry's ``token`` is an id): the record's log-probability
  is the emitted id's, so when it is above the list's lowest the id is in the list, and when exactly one entry has
  the record's text and log-probability, that entry is the id.  The adapter asks for the whole vocabulary but one
  (:func:`top_logprobs_asked`: 0.6.0 panics at the vocabulary's size, in ``select_nth_unstable``), since a byte token
  of rank above 2,000 was drawn in 1 of 3,504 two-token answers at T = 1; it costs about 45 % more time an answer
  here (549 ms against 379 ms for 2 tokens, 5 answers each, 2026-12-07).  Otherwise :class:`IdTable` raises
  :class:`specdec.errors.ContractError` naming the token rather than guess (the vocabulary's last token, or a tie).
  0.6.0's log-probabilities are base-10 logarithms (``scripts/findings/mistralrs_logprobs_base10.py``): only compared
  with each other here.
"""

from __future__ import annotations

import functools

from ...errors import ContractError

# A Jinja chat template that renders each message's content and nothing else (no role, no BOS, no generation prompt).
VERBATIM_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


def prompt_text(runner, prompt: list[int]) -> str:
    """The text the engine encodes back to exactly ``prompt`` (ValueError when there is none)."""
    text = runner.detokenize_text(list(prompt), False)
    back = list(runner.tokenize_text(text, False, None))
    if back != list(prompt):
        raise ValueError(f"prompt {list(prompt)!r} does not round-trip through mistral.rs's tokenizer (its text {text!r} "
                         f"encodes to {back!r}): 0.6.0 takes text prompts only, so this prompt cannot be sent exactly")
    return text


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet reversed: the character that stands for each byte in a byte-level BPE vocabulary."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), 256))
    chars, extra = list(printable), 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


@functools.lru_cache(maxsize=4)
def gguf_token_texts(path: str) -> tuple[str, ...]:
    """Each id's text as mistral.rs 0.6.0 decodes one id of a ``gpt2`` (byte-level BPE) GGUF vocabulary
    (``mistralrs-core/src/gguf/gguf_tokenizer.rs``: a ByteLevel decoder): the token's characters mapped back to bytes,
    UTF-8 with U+FFFD for a broken sequence; control tokens (type 3) as their text.  A peers test compares every id
    with the engine's own ``detokenize_text``."""
    from gguf import GGUFReader

    reader = GGUFReader(path)
    model = reader.fields.get("tokenizer.ggml.model")
    if model is None or bytes(model.parts[model.data[0]]).decode() != "gpt2":
        raise ValueError(f"{path}: only a gpt2 (byte-level BPE) GGUF vocabulary is mapped to ids here")
    tokens = reader.fields["tokenizer.ggml.tokens"]
    types = reader.fields.get("tokenizer.ggml.token_type")
    decoder = _byte_decoder()
    texts = []
    for i, part in enumerate(tokens.data):
        token = bytes(tokens.parts[part]).decode("utf-8")
        control = types is not None and int(types.parts[types.data[i]][0]) == 3
        texts.append(token if control or any(c not in decoder for c in token)
                     else bytes(decoder[c] for c in token).decode("utf-8", errors="replace"))
    return tuple(texts)


def top_logprobs_asked(vocab_size: int) -> int:
    """The n-best list the adapter asks with every answer: the whole vocabulary but one (module docstring)."""
    return vocab_size - 1


class IdTable:
    """The id of each token string the engine reports (``texts[id]``: every id's own decoding, :func:`gguf_token_texts`)."""

    def __init__(self, texts) -> None:
        texts = tuple(texts)
        ids: dict[str, int] = {}
        ambiguous: set[str] = set()
        for token, text in enumerate(texts):
            if text in ids:
                ambiguous.add(text)
            ids.setdefault(text, token)
        self._ids = {text: token for text, token in ids.items() if text not in ambiguous}
        self.ambiguous = frozenset(ambiguous)
        self._texts = texts
        self.size = len(texts)

    def __call__(self, text: str, logprob: float | None = None, top=()) -> int:
        """The id of ``text``; for a string several ids decode to, :meth:`resolve` on the record's ``logprob`` and
        n-best list ``top`` (module docstring)."""
        token = self._ids.get(text)
        if token is not None:
            return token
        if text not in self.ambiguous:
            why = "no id decodes to it"
        else:
            token = self.resolve(text, logprob, top)
            if token is not None:
                return token
            why = (f"several ids decode to it, and the {len(top)} best entries of its position do not single one out "
                   f"(log-probability {logprob})")
        raise ContractError(f"mistral.rs reported the token {text!r}, which cannot be mapped to one id ({why}): "
                            "the answer cannot be given as token ids exactly")

    def resolve(self, text: str, logprob: float | None, top) -> int | None:
        """The one entry of ``top`` ((id, log-probability) pairs, the engine's n-best list at the position, best
        first) whose id decodes to ``text`` with the emitted token's ``logprob``, when ``logprob`` is above the list's
        lowest (so the emitted id is in the list); None when there is no such single entry."""
        top = [(int(t), float(lp)) for t, lp in top]
        if logprob is None or not top or not float(logprob) > min(lp for _, lp in top):
            return None
        found = [t for t, lp in top if lp == float(logprob) and 0 <= t < self.size and self._texts[t] == text]
        return found[0] if len(found) == 1 else None
