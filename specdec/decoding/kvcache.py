"""A causal LM with a KV cache whose batch rows hold different numbers of tokens.

Speculative decoding accepts a different number of drafts in every batch row
(B13: batch > 1 is where peers broke).  Rows share one transformers
``DynamicCache``, so they share its slot axis; :class:`RaggedCache` records, per
row and slot, which context position the slot holds (``-1``: none).  That map
*is* the attention mask (valid slots) and the position ids (the positions), so
each row attends to exactly its own accepted tokens at their true positions,
whatever the other rows did.  Rolling a row back invalidates its slots at and
beyond a position; slots invalid in every row at the end are cut off with
``DynamicCache.crop`` (a negative argument in transformers 5.x).

Invariant: row b's valid slots hold context positions 0 .. fed[b]-1, in slot order.
"""

from __future__ import annotations

import inspect

import torch


class RaggedCache:
    """Feeds ragged per-row token chunks to ``model`` and rolls rows back independently."""

    def __init__(self, model, batch_size: int, device: torch.device) -> None:
        from transformers import DynamicCache

        self.model = model
        self.device = torch.device(device)
        self.cache = DynamicCache(config=model.config)
        self.slot_pos = torch.empty((batch_size, 0), dtype=torch.long, device=self.device)  # (B, S)
        self.fed = torch.zeros(batch_size, dtype=torch.long, device=self.device)  # (B,) context tokens held
        self._keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters  # transformers' head slicing

    @property
    def batch_size(self) -> int:
        return self.slot_pos.shape[0]

    def feed(self, chunks: list[list[int]], *, last: int | None = None) -> torch.Tensor:
        """Append each row's next context tokens; return logits (B, T, V) for the chunks, right-aligned.

        Row b's chunk continues its context at position fed[b].  Chunks are
        right-aligned in T = max length columns, so ``logits[:, -1]`` is every
        row's next-token distribution; the columns left of a shorter chunk are
        padding slots, invalid in that row.  ``last``: only the last ``last`` columns'
        logits (B, last, V), the head applied to those alone (a prefill needs no others).
        """
        if len(chunks) != self.batch_size:
            raise ValueError(f"chunks must have one entry per row ({self.batch_size}), got {len(chunks)}")
        width = max((len(c) for c in chunks), default=0)
        if width == 0:
            raise ValueError("feed needs at least one token in some row")
        tokens = torch.tensor([[0] * (width - len(c)) + list(c) for c in chunks], dtype=torch.long)
        counts = torch.tensor([len(c) for c in chunks], dtype=torch.long)
        return self.feed_tensor(tokens.to(self.device), counts.to(self.device), last=last)

    def feed_tensor(self, tokens: torch.Tensor, counts: torch.Tensor, *, last: int | None = None) -> torch.Tensor:
        """:meth:`feed` for chunks already packed: tokens (B, T), the last counts[b] columns of row b are real."""
        width = tokens.shape[1]
        column = torch.arange(width, device=self.device)
        offset = column - (width - counts).unsqueeze(-1)  # (B, T): index within the chunk, < 0 for padding
        valid = offset >= 0
        new_pos = torch.where(valid, self.fed.unsqueeze(-1) + offset, -1)
        self.slot_pos = torch.cat([self.slot_pos, new_pos], dim=1)
        position_ids = torch.where(valid, new_pos, self.fed.unsqueeze(-1)).clamp_min(0)
        head = {"logits_to_keep": last} if last is not None and self._keeps_logits else {}
        out = self.model(
            input_ids=tokens,
            attention_mask=(self.slot_pos >= 0).long(),
            position_ids=position_ids,
            past_key_values=self.cache,
            use_cache=True,
            **head,
        )
        self.cache = out.past_key_values
        self.fed = self.fed + counts
        return out.logits if last is None else out.logits[:, -last:]

    def rollback(self, keep: torch.Tensor) -> None:
        """Keep only context positions < keep[b] in row b; cut slots that no row still uses."""
        self.slot_pos = torch.where(self.slot_pos >= keep.unsqueeze(-1), -1, self.slot_pos)
        self.fed = torch.minimum(self.fed, keep)
        used = (self.slot_pos >= 0).any(0)
        length = int(used.nonzero().max()) + 1 if bool(used.any()) else 0
        surplus = self.slot_pos.shape[1] - length
        if surplus:
            self.cache.crop(-surplus)
            self.slot_pos = self.slot_pos[:, :length]

    def select(self, rows: torch.Tensor) -> None:
        """Keep only the given batch rows (in that order), e.g. to drop finished rows."""
        self.cache.batch_select_indices(rows)
        self.slot_pos = self.slot_pos[rows]
        self.fed = self.fed[rows]
