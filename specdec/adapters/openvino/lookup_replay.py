"""Prompt lookup's draft counts, replayed from the answers: OpenVINO GenAI 2026.4.1 keeps none for prompt lookup.

What the engine records (openvino.genai at commit da1db86, ``src/cpp/src/prompt_lookup/prompt_lookup_impl.cpp``):
``PromptLookupImpl::step`` feeds a ``SpeculativeDecodingMetrics`` that only ``OPENVINO_LOG_LEVEL`` > 2 prints (an
average acceptance rate, no counts), and ``get_metrics`` is not bound to Python; a result's ``extended_perf_metrics``
are the draft model's.  What it does record is ``perf_metrics.raw_metrics.m_batch_sizes``: the tokens emitted at each
step of a ``generate`` call, all requests together.

So the counts are replayed.  The drafts are a deterministic function of the context
(``ContinuousBatchingForPromptLookupImpl::generate_candidates``, :func:`lookup_candidates`) and the rule is sample-match
(``Sampler::validate_candidate``: a drafted x is kept iff the target's draw y equals it; y replaces the first x that
differs and ends the step; :mod:`.pipeline`), so an answer alone fixes every step: the first step (the prompt's
prefill) emits one token with nothing drafted; every later step drafts ``lookup_candidates(prompt + answer so far,
min(K, tokens left - 1), max_ngram_size)``, keeps the longest prefix of the drafts that the answer continues with, and
emits one token more.  :func:`lookup_steps` walks an answer so; for one request per ``generate`` call the tokens its
steps emit are ``m_batch_sizes`` (checked against the engine in peers/test_openvino.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._validation import as_int


def lookup_candidates(ids: Sequence[int], num_pred_tokens: int, max_ngram_size: int) -> list[int]:
    """The tokens prompt lookup drafts after the context ``ids`` (``generate_candidates``): for n from
    ``max_ngram_size`` (at most half the context's length) down to 1, the *first* earlier occurrence of the context's
    last n tokens; the drafts are the up to ``num_pred_tokens`` tokens that followed it.  None found: no drafts."""
    num_pred_tokens = as_int("num_pred_tokens", num_pred_tokens, minimum=0)
    max_ngram_size = as_int("max_ngram_size", max_ngram_size, minimum=1)
    ids = list(ids)
    length = len(ids)
    if not num_pred_tokens:
        return []
    if max_ngram_size >= length:
        max_ngram_size = length // 2
    for size in range(max_ngram_size, 0, -1):
        ngram = ids[length - size:]
        for start in range(length - size):  # an earlier occurrence: the last n-gram itself is excluded
            if ids[start:start + size] == ngram:
                follow = start + size
                return ids[follow:follow + min(length - follow, num_pred_tokens)]
    return []


def lookup_steps(prompt: Sequence[int], answer: Sequence[int], num_assistant_tokens: int,
                 max_ngram_size: int) -> list[tuple[list[int], int]]:
    """The steps of one prompt-lookup request that answered ``answer`` to ``prompt`` (module docstring), each as
    (the tokens it drafted, how many of them it kept): it emitted one token more than it kept.  ``len(answer)`` is
    the request's ``max_new_tokens``; the first step is the prefill's, ``([], 0)``."""
    num_assistant_tokens = as_int("num_assistant_tokens", num_assistant_tokens, minimum=1)
    prompt, answer = list(prompt), list(answer)
    steps: list[tuple[list[int], int]] = [([], 0)] if answer else []
    done = len(steps)  # the prefill's token
    while done < len(answer):
        left = len(answer) - done - 1  # left_generated_len: the step's own target token is always emitted
        drafted = lookup_candidates(prompt + answer[:done], min(num_assistant_tokens, left), max_ngram_size)
        kept = 0
        while kept < len(drafted) and drafted[kept] == answer[done + kept]:
            kept += 1
        steps.append((drafted, kept))
        done += kept + 1
    return steps


def replay_lookup(prompt: Sequence[int], answer: Sequence[int], num_assistant_tokens: int,
                  max_ngram_size: int) -> dict[str, int]:
    """:func:`lookup_steps` counted: ``steps`` (the prefill's included), ``drafts`` (steps that drafted a token),
    ``draft_tokens`` (tokens drafted) and ``accepted_tokens`` (drafted tokens kept)."""
    steps = lookup_steps(prompt, answer, num_assistant_tokens, max_ngram_size)
    return {"steps": len(steps), "drafts": sum(bool(drafted) for drafted, _ in steps),
            "draft_tokens": sum(len(drafted) for drafted, _ in steps), "accepted_tokens": sum(kept for _, kept in steps)}


__all__ = ["lookup_candidates", "lookup_steps", "replay_lookup"]
