"""mistral.rs 0.6.0 with each Runner in a child process of its own, the speculative one replaced every N requests.

:class:`MistralRsProcessDecoder` is :class:`.mistralrs_decoder.MistralRsDecoder` behind
:class:`specdec.adapters.json_lines_worker.JsonLinesWorker` (:mod:`.mistralrs_worker`): the same Runner, ids in and
out, refusals and verification rule, one request per row.  Why (both seen on 0.6.0, CPU, 2026-11-27):

* **the panic**: with a speculative Runner and a Runner without a draft in one process, the speculative one panics
  when the other answers between its requests (``speculative.rs:360``, ``scripts/findings/mistralrs_speculative_panic.py``);
  in processes of their own the two Runners share nothing, so the A/B check may interleave them;
* **the slowdown**: a speculative Runner's requests grow slower with every request it served (alone in its process,
  T = 1, 2 tokens on the story prompt: 13.0 s for the first, then 3.4, 4.4, 5.5, 6.3, 9.0, 11.3, 17.4, ... 33.0 s for the
  14th), and 0.6.0 cannot build a second Runner in a process after the first was dropped.  An *idle* speculative
  Runner keeps computing: after its one request had ended, a waiting child used 2.5 s of CPU in 10 s (more than the
  Runner without a draft answering requests beside it), as if finished sequences were still stepped (the panic's 3
  sequences for one request in flight points the same way; not shown in the source).  So ``requests_per_process`` = N
  ends the child after N requests, and at the end of every call, and starts a fresh one for the next request (its
  load: about 7 s here).

**What the restart costs, stated**: the engine draws from one RNG seeded with a constant (``SEED = 0``,
:mod:`.mistralrs_decoder`), so a fresh child replays the stream of the one before it - a *sampling* engine restarted
every N requests would repeat its rows with period N, and rows N apart would not be independent draws.  The A/B and
per-token checks assume independent rows, so this restart is used only for 0.6.0's speculative Runner, whose tokens
draw no random number (``sample_speculative_top_kp_min_p``: the argmax), and a check that uses it must show that
(peers/test_mistralrs_checks.py shows that every row of every child that answered several is the greedy one).  The
Runner without a draft keeps one child for the whole run (``requests_per_process=None``: its requests do not slow
down), its rows successive draws of its stream.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

from ..._validation import as_int
from ...sampling_settings import SamplingSettings
from ..json_lines_worker import JsonLinesWorker
from .mistralrs_decoder import MistralRsDecoder, call_rows
from .settings_map import request_args

__all__ = ["MistralRsProcessDecoder"]

_ROOT = Path(__file__).resolve().parents[3]


class _Child:
    """The live worker of a decoder and its copies (:meth:`MistralRsProcessDecoder.with_settings`), and its count."""

    def __init__(self, config: dict, per_process: int | None, start_timeout: float, request_timeout: float) -> None:
        self.config, self.per_process = config, per_process
        self.start_timeout, self.request_timeout = start_timeout, request_timeout
        self.worker: JsonLinesWorker | None = None
        self.served = 0
        self.started = 0  # children started so far
        self.eos: tuple[int, ...] = ()

    def ask(self, prompt: list[int], max_new_tokens: int, args: dict) -> list[int]:
        if self.worker is not None and self.per_process is not None and self.served >= self.per_process:
            self.close()
        self.start()
        self.served += 1
        return self.worker.request({"prompts": [prompt], "max_new_tokens": max_new_tokens, "request_args": args})["rows"][0]

    def start(self) -> None:
        """A child, unless one is running."""
        if self.worker is None:
            env = {**os.environ, "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": os.pathsep.join(p for p in (os.fspath(_ROOT), os.environ.get("PYTHONPATH")) if p)}
            self.worker = JsonLinesWorker([sys.executable, "-m", "specdec.adapters.mistralrs.mistralrs_worker",
                                           json.dumps(self.config)], label="mistral.rs", env=env,
                                          start_timeout=self.start_timeout, request_timeout=self.request_timeout)
            self.eos, self.served = tuple(self.worker.ready["eos"]), 0
            self.started += 1

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


class MistralRsProcessDecoder:
    """:class:`.mistralrs_decoder.MistralRsDecoder`'s Runner in a child process (module docstring).

    ``gguf_path``, ``settings``, ``gamma``, ``max_seqs``, ``threads``, ``name``: as :class:`MistralRsDecoder` (checked
    by it here, before a child starts).  ``requests_per_process``: N, the requests one child answers before it is
    replaced, a child also ended at the end of each call (None: one child for the decoder's life).  ``request_timeout``: seconds per request.
    """

    seeds_honoured = False

    def __init__(self, gguf_path, *, settings: SamplingSettings | None = None, gamma: int | None = None, max_seqs: int = 16,
                 threads: int | None = 1, requests_per_process: int | None = None, name: str | None = None,
                 start_timeout: float = 300.0, request_timeout: float = 900.0) -> None:
        local = MistralRsDecoder(gguf_path, settings=settings, gamma=gamma, max_seqs=max_seqs, threads=threads, name=name)
        self.gamma, self.settings_record, self.request_args = local.gamma, local.settings_record, local.request_args
        self.name = local.name
        per_process = None if requests_per_process is None else as_int("requests_per_process", requests_per_process, minimum=1)
        self._settings_line = local.settings
        config = {"gguf_path": local.gguf_path, "gamma": local.gamma, "max_seqs": local.max_seqs, "threads": local.threads}
        self._child = _Child(config, per_process, float(start_timeout), float(request_timeout))

    @property
    def settings(self) -> str:
        n = self._child.per_process
        return self._settings_line + (f"; a fresh process every {n} requests" if n else "; its own process")

    @property
    def num_draft_tokens(self) -> int:
        return self.gamma or 0

    @property
    def processes_started(self) -> int:
        return self._child.started

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """The engine's EOS ids (the child's, started if none has been)."""
        if not self._child.started:
            self._child.start()
            if self._child.per_process is not None:
                self._child.close()
        return self._child.eos

    def with_settings(self, settings: SamplingSettings, name: str | None = None) -> "MistralRsProcessDecoder":
        """The same child (and its count) asked with other sampling settings."""
        other = copy.copy(self)
        other.request_args, other.settings_record = request_args(settings), settings
        other.name = name or other.settings
        return other

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        rows, max_new_tokens = call_rows(prompts, max_new_tokens, seed)
        if not max_new_tokens:
            return [[] for _ in rows]
        try:
            return [self._child.ask(row, max_new_tokens, self.request_args) for row in rows]
        finally:
            if self._child.per_process is not None:  # not left idle (module docstring)
                self._child.close()

    def close(self) -> None:
        """End the child (its pid alone)."""
        self._child.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
