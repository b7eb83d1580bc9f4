"""The benchmark prompt set as token ids: the task kinds' prompts, and long prompts by length.

:func:`chat_ids` applies SmolLM2's chat template with the assistant prefix to a prompt's messages
(:data:`PROMPTS`, from :mod:`.texts`); :func:`prompt_ids` gives the first prompts of a kind.
:func:`length_prompts` builds retrieval and summarisation prompts of about 128, 1024 or 4096 tokens
(``LENGTH_BUCKETS``) from the passages of :mod:`.corpus`.
"""

from __future__ import annotations

import re

from .corpus import PASSAGES
from .texts import PROMPTS, _user

__all__ = ["KINDS", "LENGTH_BUCKETS", "LENGTH_TOLERANCE", "PROMPTS", "chat_ids", "length_prompts", "prompt_ids"]

KINDS = tuple(PROMPTS)

LENGTH_BUCKETS = (128, 1024, 4096)  # approximate prompt lengths in tokens, chat template included
LENGTH_TOLERANCE = 0.1              # a length prompt is within +-10% of its bucket
_SUMMARY = "Summarise the text above in three sentences."
_MIN_SENTENCES = 2                  # a passage's question is answered by its first two sentences


def chat_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of ``messages`` with the tokenizer's chat template and the assistant prefix."""
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(ids, "keys"):  # transformers 5 may return a BatchEncoding
        ids = ids["input_ids"]
    return [int(t) for t in ids]


def prompt_ids(tokenizer, kind: str, count: int) -> list[list[int]]:
    """The first ``count`` prompts of ``kind`` as token ids."""
    if kind not in PROMPTS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    if not 1 <= count <= len(PROMPTS[kind]):
        raise ValueError(f"count must be in [1, {len(PROMPTS[kind])}], got {count!r}")
    return [chat_ids(tokenizer, messages) for messages in PROMPTS[kind][:count]]


def length_prompts(tokenizer, bucket: int, count: int) -> list[list[int]]:
    """``count`` prompts of ``bucket`` tokens +-10% (chat template included), as token ids.

    Prompt ``i`` is retrieval for even ``i`` (its question is the starting passage's) and
    summarisation for odd ``i``; its text is the corpus read from passage ``i mod 33`` onward,
    sentence by sentence, wrapping round but never reaching the start again, cut where the
    length is closest to ``bucket``.  Prompts repeat with period 66.  ``bucket`` is usually one of
    ``LENGTH_BUCKETS``; any length the corpus can reach (about 110 to 5,300 tokens) is accepted.
    """
    if isinstance(bucket, bool) or not isinstance(bucket, int) or bucket < 1:
        raise ValueError(f"bucket must be a positive int such as one of {LENGTH_BUCKETS}, got {bucket!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an int >= 1, got {count!r}")
    sentences = [re.split(r"(?<=[.!?])\s+", passage.text) for passage in PASSAGES]
    sizes = [[len(tokenizer.encode(s, add_special_tokens=False)) for s in passage] for passage in sentences]
    return [_length_prompt(tokenizer, bucket, index, sentences, sizes) for index in range(count)]


def _length_prompt(tokenizer, bucket: int, index: int, sentences: list[list[str]], sizes: list[list[int]]) -> list[int]:
    """Prompt ``index`` of :func:`length_prompts`: the first n sentences from its starting passage,
    n chosen by the exact token count; where no n is within the tolerance (short buckets: a
    sentence is ~30 tokens), the first n with one sentence after the second left out."""
    start = index % len(PASSAGES)
    instruction = PASSAGES[start].question if index % 2 == 0 else _SUMMARY
    order = [(start + j) % len(PASSAGES) for j in range(len(PASSAGES))]  # every passage at most once
    units = [(p, s) for p in order for s in range(len(sentences[p]))]    # (passage, sentence) in reading order

    def ids(chosen: tuple[int, ...]) -> list[int]:  # the prompt made of the sentences units[chosen]
        paragraphs: dict[int, list[str]] = {}
        for p, s in (units[u] for u in chosen):
            paragraphs.setdefault(p, []).append(sentences[p][s])
        text = "\n\n".join(" ".join(paragraph) for paragraph in paragraphs.values())
        return chat_ids(tokenizer, _user(text + "\n\n" + instruction))

    base = len(ids(()))
    estimates = [base]  # estimates[n]: the prompt of the first n sentences, from per-sentence sizes ("\n\n": 1)
    for p, s in units:
        estimates.append(estimates[-1] + sizes[p][s] + (s == 0))

    def closest(candidates: list[tuple[int, ...]]) -> list[int]:  # the 2 nearest by estimate, checked exactly
        estimate = lambda chosen: base + sum(estimates[u + 1] - estimates[u] for u in chosen)
        nearest = sorted(candidates, key=lambda chosen: abs(estimate(chosen) - bucket))[:2]
        return min((ids(chosen) for chosen in nearest), key=lambda prompt: abs(len(prompt) - bucket))

    tolerance = LENGTH_TOLERANCE * bucket
    best = closest([tuple(range(n)) for n in range(_MIN_SENTENCES, len(units) + 1)])
    if abs(len(best) - bucket) > tolerance:  # sentences too coarse for the bucket: leave one out
        stop = next((n + 1 for n in range(len(units)) if estimates[n] > bucket + tolerance), len(units))
        best = closest([tuple(u for u in range(n) if u != k) for n in range(_MIN_SENTENCES + 1, stop + 1)
                        for k in range(_MIN_SENTENCES, n)] or [tuple(range(_MIN_SENTENCES))])
    if abs(len(best) - bucket) > tolerance:
        raise ValueError(f"bucket={bucket} is out of reach: prompt {index} has {len(best)} tokens at best "
                         f"(the corpus gives about 110 to 5,300)")
    return best
