"""node-llama-cpp 3.21.1's own law of every token of an answer given its true prefix (a :class:`specdec.protocols.LawOracle`).

:class:`NodeLlamaOracle` asks a worker of its own (:mod:`.worker`, ``js/server.mjs``'s laws request, no token
predictor) for the law the engine without speculation samples each position from: for every answer,
``LlamaContextSequence.evaluateWithMetadata(prompt, {probabilities: true}, ...)`` on a cleared sequence, one token at a
time, each position's draw replaced by the answer's own token (the generator's replacement token), so position t is
sampled after prompt + answer[:t].  The law is the engine's: ``AddonContext.cpp``'s ``SampleToken`` returns, with
``probabilities``, the float32 softmax of the candidates the sampler chain left (``AddonSampler::rebuildChainIfNeeded``:
penalties, top-k, top-p, min-p, temperature - :mod:`.worker_sampling`); the penalties read the answer's earlier tokens
as the decoder's worker gives them (its last :data:`.worker_sampling.PENALTY_LAST_N`).  T = 0: the one-hot law of the
engine's own choice (the greedy sampler draws nothing).

Why not :class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle` (llama-cpp-python 0.3.36's llama.cpp with the same
chain, the oracle until 2026-12-08): node-llama-cpp's prebuilt addon is another llama.cpp build, and ggml's kernels
round by build (that module's docstring: another build moved a position's law by a mean TV of 0.029).  On the
matrix's " cat"/" dog" token prompt at T = 1 the two builds give the first token 2644 probabilities 0.620
(llama-cpp-python) and 0.553 (node-llama-cpp's own, 0.567 in 2,000 of its draws; transformers' float32 copy of the
weights 0.599); at T = 0.7, top-p 0.8 node-llama-cpp keeps token 198 after 2644 (0.026) where the other build's
nucleus ends before it.  So the controls of the per-token matrix FAILed at top-k 2 and min-p 0.2 (TV 0.19 and 0.10),
and at T = 0.7, top-p 0.8 the draft model's cell FAILed on one such token while its control, diluted over four
prompts, PASSed (2026-12-08): the harness's mistake, not the engine's.

The floor (P2): the oracle makes the calls the engine makes without a draft, on its build, so the control compares
like with like; a speculative step evaluates K + 1 tokens in one batch, whose kernels round otherwise (llama.cpp's
batch rounding: ``LlamaCppOracle``'s docstring), so :data:`FLOOR` is that oracle's, 1e-3 per token.  Cost: the engine's
own one-token decoding plus the laws' transfer (a law of more than ``list_all`` tokens - no truncation - travels as its
``keep`` most likely tokens and the rest's mass, what the rank cells need: :class:`specdec.laws.oracles.TokenLaw`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from ..._validation import as_float, as_int
from ...laws.oracles import TokenLaw
from ...sampling_settings import SamplingSettings, settings_from
from ...stats.rank_cells import RANKS
from .._common import checked_prompt_rows
from .worker import DEFAULT_MODULES, NodeWorker, WorkerOwner, start_checked
from .worker_sampling import ENGINE, sampling_object

__all__ = ["FLOOR", "NodeLlamaOracle"]

FLOOR = 1e-3
ANSWERS_PER_REQUEST = 16  # one worker request holds this many answers (each read has the worker's timeout)


class NodeLlamaOracle(WorkerOwner):
    """node-llama-cpp's per-token laws of the GGUF ``model_path`` under ``settings`` (module docstring)."""

    def __init__(self, model_path: str | os.PathLike, *, settings: SamplingSettings | None = None, floor: float = FLOOR,
                 threads: int = 1, context_size: int = 1024, batch_size: int = 512, list_all: int = 256, keep: int = RANKS,
                 modules: str | os.PathLike = DEFAULT_MODULES, node: str | None = None, check_version: bool = True) -> None:
        asked = settings_from(None, settings)
        # one sample per request and the seed change how rows are asked, not a row's law
        self.sampling_settings = dataclasses.replace(asked, samples_per_request=None, seeded=True)
        self._sampling = sampling_object(self.sampling_settings)  # refuses by name what the decoder refuses
        self.model_path = os.fspath(model_path)
        if not os.path.isfile(self.model_path):
            raise FileNotFoundError(f"model_path {self.model_path!r} is not a file (a GGUF model)")
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-5  # float32 probabilities summed
        self.threads = as_int("threads", threads, minimum=1)
        self.context_size = as_int("context_size", context_size, minimum=16)
        self.batch_size = as_int("batch_size", batch_size, minimum=1)
        self.keep = as_int("keep", keep, minimum=1)
        self.list_all = as_int("list_all", list_all, minimum=self.keep)
        if not isinstance(check_version, bool):
            raise TypeError(f"check_version must be a bool, got {type(check_version).__name__}")
        self.modules, self.node, self.check_version = os.fspath(modules), node, check_version
        self._worker: NodeWorker | None = None
        self.vocab: int | None = None

    @property
    def settings(self) -> str:
        return (f"{ENGINE} without speculation, its own law of each position on the true prefix (one token at a time; "
                f"{os.path.basename(self.model_path)}; {self.sampling_settings.label}; floor {self.floor:g})")

    def _start(self) -> NodeWorker:
        if self._worker is None:
            config = {"modules": self.modules, "model": self.model_path, "draftModel": self.model_path, "speculation": None,
                      "sequences": 1, "threads": self.threads, "contextSize": self.context_size, "batchSize": self.batch_size}
            self._worker = start_checked(config, modules=self.modules, node=self.node, check_version=self.check_version)
            self.vocab = self._worker.ready.get("vocab")
        return self._worker

    def token_laws(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]) -> list[list[TokenLaw]]:
        """One :class:`TokenLaw` per position of each continuation: the law of ``continuation[t]`` given ``prompt +
        continuation[:t]``."""
        if len(prompts) != len(continuations):
            raise ValueError(f"prompts and continuations must pair up, got {len(prompts)} and {len(continuations)}")
        worker = self._start()
        prompt_rows = checked_prompt_rows(prompts, self.vocab, ENGINE)
        answers = [[as_int(f"continuations[{i}][{j}]", t, minimum=0, maximum=None if self.vocab is None else self.vocab - 1)
                    for j, t in enumerate(row)] for i, row in enumerate(continuations)]
        for i, (prompt, answer) in enumerate(zip(prompt_rows, answers)):
            if len(prompt) + len(answer) >= self.context_size:
                raise ValueError(f"prompts[{i}] and continuations[{i}] hold {len(prompt) + len(answer)} tokens; the "
                                 f"context holds {self.context_size} (context_size)")
        out: list[list[TokenLaw]] = []
        for start in range(0, len(answers), ANSWERS_PER_REQUEST):
            stop = start + ANSWERS_PER_REQUEST
            reply = worker.request({"laws": True, "prompts": prompt_rows[start:stop], "answers": answers[start:stop],
                                    "sampling": self._sampling, "listAll": self.list_all, "keep": self.keep})
            if len(reply.get("laws", ())) != len(answers[start:stop]):
                raise RuntimeError(f"the node-llama-cpp worker answered {len(reply.get('laws', ()))} answers' laws for "
                                   f"{len(answers[start:stop])}")
            for answer, laws in zip(answers[start:stop], reply["laws"]):
                if len(laws) != len(answer):
                    raise RuntimeError(f"the node-llama-cpp worker answered {len(laws)} laws for an answer of "
                                       f"{len(answer)} tokens")
                out.append([TokenLaw(np.asarray(probs, dtype=np.float64), np.asarray(ids, dtype=np.int64), float(rest))
                            for ids, probs, rest in laws])
        return out
