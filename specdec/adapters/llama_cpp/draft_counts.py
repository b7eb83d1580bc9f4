"""What llama-cpp-python's speculation does, counted from outside: the drafts its prompt lookup proposes, the drafted
tokens its draws keep, and at which draws a draft was verified (llama-cpp-python 0.3.36, ``Llama.generate``).

:class:`CountingDraft` wraps the draft model ``generate`` calls; :func:`count_acceptance` wraps ``Llama.sample``.
Both only read: the engine's tokens are unchanged.
"""

from __future__ import annotations

__all__ = ["CountingDraft", "count_acceptance"]


class CountingDraft:
    """Prompt lookup as the engine calls it, counting what it drafts (the tokens ``generate`` evaluates)."""

    def __init__(self, lookup, counts: dict, n_ctx: int) -> None:
        self.lookup = lookup
        self.counts = counts
        self.n_ctx = n_ctx

    def __call__(self, input_ids, /, **kwargs):
        drafted = self.lookup(input_ids, **kwargs)
        used = max(0, min(len(drafted), self.n_ctx - len(input_ids)))  # generate's own truncation to n_ctx
        if used:
            self.counts["drafts"] += 1
            self.counts["draft_tokens"] += used
        return drafted


def count_acceptance(llm, counts: dict, marks: list) -> None:
    """Wrap ``llm.sample`` (whatever it is after ``setup``) to count the drafted tokens it keeps, and to mark each draw.

    ``generate`` samples at position ``idx`` with the drafted token (if any) at ``idx + 1`` already evaluated
    (``idx + 1 < llm.n_tokens``) and keeps the draft iff the sampled token equals it: the same comparison is
    made here, on the token the (possibly patched) ``sample`` returns; ``marks`` gets, per draw, whether a draft
    was verified at its position.  Nothing else changes."""
    sample = llm.sample

    def counted(*args, **kwargs):
        token = sample(*args, **kwargs)
        idx = kwargs.get("idx")
        drafted = idx is not None and idx + 1 < llm.n_tokens
        marks.append(drafted)
        if drafted and int(token) == int(llm.input_ids[idx + 1]):
            counts["accepted_tokens"] += 1
        return token

    llm.sample = counted
