"""The per-token matrix's prompts (issue 38): real prompts of the embedded workload and the drafting-friendly one.

The embedded workload's default prompts, those ``specdec check --server`` asks when given none
(:data:`specdec.workload.prompt_inputs.DEFAULT_KINDS`: the first prompt of ``qa``, ``translation`` and ``retrieval``,
whose answer copies from its passage: n-gram drafting finds matches at some positions and not others), each with
SmolLM2's chat template and the assistant prefix, then the " cat"/" dog" prompt
of :data:`fixtures.vllm_subjects.PROMPT` (every bigram repeats: prompt lookup drafts at every step).  Token ids by
SmolLM2's own tokenizer (the safetensors copy's, :func:`specdec.decoding.models.smollm2_dir`), so the same ids reach
every engine.
"""

from __future__ import annotations

import functools

from specdec.workload.prompt_inputs import DEFAULT_KINDS as KINDS

LENGTH = 32  # tokens per answer, every one tested


@functools.lru_cache(maxsize=None)
def token_prompts() -> tuple[tuple[int, ...], ...]:
    """The prompts as token ids: one per kind of :data:`KINDS` (chat-templated), then the cat/dog prompt."""
    from transformers import AutoTokenizer

    from fixtures.vllm_subjects import PROMPT
    from specdec.decoding.models import smollm2_dir
    from specdec.workload.prompts import prompt_ids

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir())
    return tuple(tuple(prompt_ids(tokenizer, kind, 1)[0]) for kind in KINDS) + (tuple(PROMPT),)
