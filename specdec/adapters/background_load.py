"""A subject answered amid other traffic on the same engine: the batch-invariance check of issue 30.

``AmidLoad(subject, load)`` is a :class:`specdec.protocols.Decoder` whose every call runs ``subject`` while
``load`` - other decoders on the same server, each with its own prompts and settings (greedy rows beside
sampled ones, other temperatures, penalties, prompts that draft nothing) - keeps sending requests from
background threads until the call returns.  A server batches concurrent requests together, so the subject's
rows share their forward passes and sampler calls with rows unlike them.  Its law must not change:
``specdec.check_ab(AmidLoad(subject, load), subject_alone_or_a_reference, ...)``.

The load's answers are thrown away; what failed in it is counted (``load_failures``, first message kept) but
does not fail the subject's call.  Speculation counters are the subject's server's, so they include the
load's drafts (say so where they are reported).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

from .._validation import as_int

__all__ = ["AmidLoad", "Load"]


@dataclass(frozen=True)
class Load:
    """One stream of background requests: ``decoder(prompts, max_new_tokens, seed)`` called in a loop."""

    decoder: object
    prompts: Sequence[Sequence[int]]
    max_new_tokens: int = 8


class AmidLoad:
    """``subject`` answered while every :class:`Load` of ``load`` runs beside it (module docstring)."""

    def __init__(self, subject, load: Sequence[Load], *, name: str | None = None) -> None:
        if not callable(subject):
            raise TypeError(f"subject must be a Decoder (callable), got {type(subject).__name__}")
        load = list(load)
        if not load or not all(isinstance(item, Load) and callable(item.decoder) for item in load):
            raise TypeError(f"load must be a non-empty list of specdec.adapters.background_load.Load with callable decoders, got {load!r}")
        for item in load:
            as_int("Load.max_new_tokens", item.max_new_tokens, minimum=1)
        self.subject, self.load = subject, load
        self.name = name or f"{getattr(subject, 'name', type(subject).__name__)} amid {len(load)} background load(s)"
        self.load_calls = 0
        self.load_failures = 0
        self.first_load_failure: str | None = None
        self._lock = threading.Lock()

    @property
    def num_draft_tokens(self):
        return getattr(self.subject, "num_draft_tokens", None)

    def _run(self, item: Load, seed: int, done: threading.Event) -> None:
        step = 0
        while not done.is_set():
            try:
                item.decoder(list(item.prompts), item.max_new_tokens, (seed + step) % 2**62)
                with self._lock:
                    self.load_calls += 1
            except Exception as error:  # noqa: BLE001 - the load's failures are counted, not raised
                with self._lock:
                    self.load_failures += 1
                    self.first_load_failure = self.first_load_failure or f"{type(error).__name__}: {error}"
                done.wait(1.0)
            step += 1

    def __call__(self, prompts, max_new_tokens: int, seed: int):
        done = threading.Event()
        threads = [threading.Thread(target=self._run, args=(item, seed * 7919 + i * 104729, done), daemon=True, name="specdec-load")
                   for i, item in enumerate(self.load)]
        for thread in threads:
            thread.start()
        try:
            return self.subject(prompts, max_new_tokens, seed)
        finally:
            done.set()
            for thread in threads:
                thread.join(timeout=600)

    def speculation_counts(self):
        counts = getattr(self.subject, "speculation_counts", None)
        return counts() if callable(counts) else None
