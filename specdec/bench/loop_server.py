"""Our decoding loop as a streaming subject of the open-loop benchmark (issue 33): a queue and one worker.

:class:`LoopServer` serves :class:`specdec.decoding.SpeculativeDecoder` the way a simple server would: requests wait
in arrival order; the worker takes the oldest, and with it whatever else is waiting up to ``max_batch``, decodes them
together in one :func:`specdec.decoding.generate` call (a static batch: a request that arrives meanwhile waits for the
next call), and streams each row's tokens as each step emits them (its ``on_step`` hook).  There is no continuous
batching and no preemption: the queueing delay a request meets counts in its TTFT, as on any server.  With
``num_draft_tokens`` 0 it is the autoregressive twin (the same loop, one target token per step).
"""

from __future__ import annotations

import queue
import threading
from typing import Sequence

from .._validation import as_int, as_seed
from ..decoding import generate

__all__ = ["LoopServer"]

_DONE = object()


class LoopServer:
    """A :class:`specdec.bench.open_loop.StreamingDecoder` over our loop (module docstring); ``close()`` stops the worker."""

    def __init__(self, decoder, *, max_batch: int = 1, name: str | None = None) -> None:
        for attribute in ("target", "draft", "num_draft_tokens", "sampling"):
            if not hasattr(decoder, attribute):
                raise TypeError(f"decoder must be a specdec.decoding.SpeculativeDecoder (it has no {attribute!r}), got {type(decoder).__name__}")
        self.decoder = decoder
        self.max_batch = as_int("max_batch", max_batch, minimum=1)
        self.name = name or f"{getattr(decoder, 'name', 'ours')} (queue, batches of up to {self.max_batch})"
        self._pending: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def stream(self, prompt: Sequence[int], max_new_tokens: int, seed: int):
        answers: queue.Queue = queue.Queue()
        self._pending.put(([int(t) for t in prompt], as_int("max_new_tokens", max_new_tokens, minimum=1), as_seed(seed), answers))
        self._start()
        while True:
            item = answers.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _start(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, daemon=True, name="specdec-loop-server")
                self._worker.start()

    def _work(self) -> None:
        while True:
            first = self._pending.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._pending.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._pending.put(None)
                    break
                batch.append(item)
            self._decode(batch)

    def _decode(self, batch) -> None:
        sent = [0] * len(batch)

        def on_step(record) -> None:
            for row, emitted in zip(record.rows, record.num_emitted):
                room = batch[row][1] - sent[row]
                if emitted and room > 0:
                    sent[row] += min(emitted, room)
                    batch[row][3].put(min(emitted, room))

        d = self.decoder
        try:
            generate(d.target, d.draft, [b[0] for b in batch], max_new_tokens=max(b[1] for b in batch), num_draft_tokens=d.num_draft_tokens,
                     sampling=d.sampling, eos_token_id=getattr(d, "eos_token_id", None), seed=batch[0][2],
                     verifier=getattr(d, "verifier", "token"), on_step=on_step)
        except BaseException as error:  # noqa: BLE001 - each waiting request gets the failure
            for item in batch:
                item[3].put(error)
            return
        for item in batch:
            item[3].put(_DONE)

    def close(self) -> None:
        self._pending.put(None)

    def __repr__(self) -> str:
        return f"LoopServer({self.name})"
