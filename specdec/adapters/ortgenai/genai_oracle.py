"""ONNX Runtime GenAI's own law of every token of an answer, for the per-token check (a :class:`specdec.protocols.LawOracle`).

:class:`OrtGenAIOracle` runs the target model through onnxruntime-genai itself (a plain ``og.Generator``, no
speculation): it appends a prompt once, in a generator of its own (up to ``MAX_PROMPTS`` kept, the least recently used
dropped first: the checks ask their prompts in turn, row after row, and one generator would append each prompt again
for every answer), then for each answer rewinds to the prompt (``Generator.rewind_to``) and appends the answer, and
reads the raw float32 logits of every position (``Generator.get_output("logits")``: (1, n, V) after n
appended tokens; with ``batch=False`` one token at a time through ``get_logits``, as plain decoding runs).  Each row goes
through the engine's sampler in numpy (:func:`.engine_law.engine_law`: the repetition penalty over the true prefix,
then greedy, top-k / top-p and the temperature as ``ComputeSampledCategorical`` does), so the law is the engine's under
the whole record, ONNX Runtime GenAI's loose top-p nucleus included.

The floor: plain decoding evaluates one token per pass, speculation K + 1 per verification pass, and this oracle (by
default) the whole answer in one: MLAS' float32 kernels round differently with the batch shape.  Measured on the
builder's fp32 CPU export of SmolLM2-135M-Instruct (``measure_floor``; ``peers/test_ortgenai_law.py``): logits move
by about 3e-5 and a position's law by a mean TV of about 1e-5, two orders below :data:`FLOOR`, the margin the
oracle states (a per-token TV, docs/reference.md §10, P2).
"""

from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np

from ..._validation import as_float, as_int
from ...laws.oracles import TokenLaw, row_law
from ...sampling_settings import SamplingSettings
from ...warpers import SamplingConfig
from .genai_decoder import eos_ids, load_model, read_config
from .engine_law import engine_law
from .search_options import checked_settings, refuse_unmapped

FLOOR = 1e-3  # per-token TV: a margin above the measured batch-shape rounding (module docstring)
MAX_PROMPTS = 8  # prompts kept appended at once, a generator (its own KV cache) each, on one model

__all__ = ["FLOOR", "MAX_PROMPTS", "OrtGenAIOracle"]


class OrtGenAIOracle:
    """onnxruntime-genai's per-token laws of the model in ``model_dir`` (the target's own folder) under the record."""

    def __init__(self, model_dir: str | os.PathLike, *, sampling: SamplingConfig | None = None, settings: SamplingSettings | None = None,
                 floor: float = FLOOR, batch: bool = True, threads: int = 1, max_length: int = 1024) -> None:
        self.sampling_settings = checked_settings(sampling, settings)
        config = read_config(model_dir)
        if "draft" in config["model"]:
            raise ValueError(f"model_dir {os.fspath(model_dir)!r} names a draft model: give the target's own folder")
        refuse_unmapped(self.sampling_settings, eos_ids(config))
        if not isinstance(batch, bool):
            raise TypeError(f"batch must be a bool, got {type(batch).__name__}")
        self.model_dir = os.fspath(model_dir)
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-6
        self.batch = batch
        self.threads = as_int("threads", threads, minimum=1)
        self.max_length = as_int("max_length", max_length, minimum=2)
        self.vocab_size = int(config["model"]["vocab_size"])
        self._model = None
        self._generators: OrderedDict[tuple[int, ...], object] = OrderedDict()  # prompt -> its generator, LRU first

    @property
    def settings(self) -> str:
        how = "the answer in one pass" if self.batch else "one token at a time"
        return (f"onnxruntime-genai's sampler on every position's logits ({how}; {os.path.basename(self.model_dir)}; "
                f"{self.sampling_settings.label}; floor {self.floor:g})")

    def _prompted(self, prompt: list[int]):
        """A plain generator holding ``prompt`` but its last token (appended again with each answer): the prompt's
        own, rewound to it, or a new one."""
        import onnxruntime_genai as og

        if self._model is None:
            self._model = load_model(self.model_dir, self.threads)
        key = tuple(prompt)
        generator = self._generators.get(key)
        if generator is not None:
            self._generators.move_to_end(key)
            generator.rewind_to(len(prompt) - 1)
            return generator
        if len(self._generators) >= MAX_PROMPTS:
            self._generators.popitem(last=False)
        params = og.GeneratorParams(self._model)
        params.set_search_options(do_sample=False, max_length=self.max_length, repetition_penalty=1.0)
        generator = self._generators[key] = og.Generator(self._model, params)
        if len(prompt) > 1:
            generator.append_tokens(np.asarray(prompt[:-1], dtype=np.int32))
        return generator

    def logits(self, prompt, continuation) -> np.ndarray:
        """Raw float32 logits (len(continuation), V): the law's inputs at every answer position."""
        prompt, continuation = [int(t) for t in prompt], [int(t) for t in continuation]
        if not prompt or len(prompt) + len(continuation) > self.max_length:
            raise ValueError(f"a prompt of {len(prompt)} and an answer of {len(continuation)} tokens do not fit max_length={self.max_length}")
        generator = self._prompted(prompt)
        inputs = [prompt[-1], *continuation[:-1]]
        if self.batch:
            generator.append_tokens(np.asarray(inputs, dtype=np.int32))
            return np.array(generator.get_output("logits")[0], dtype=np.float32)
        rows = []
        for token in inputs:
            generator.append_tokens(np.asarray([token], dtype=np.int32))
            rows.append(np.array(generator.get_logits()[0, -1], dtype=np.float32))
        return np.stack(rows)

    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        out = []
        for prompt, continuation in zip(prompts, continuations):
            if not len(continuation):
                out.append([])
                continue
            rows = self.logits(prompt, continuation)
            prefix = [int(t) for t in prompt]
            out.append([row_law(engine_law(rows[t], prefix + [int(x) for x in continuation[:t]], self.sampling_settings))
                        for t in range(len(continuation))])
        return out

    def measure_floor(self, prompt, answers) -> dict:
        """How far the answer-in-one-pass logits move the laws from one-token evaluation (plain decoding's calls): per
        position, the mean TV over ``answers``; returns ``{"floor": the largest per-position mean TV, "max_tv",
        "max_logit": the largest logit difference, "positions"}``."""
        by_position: dict[int, list[float]] = {}
        max_logit = 0.0
        batch = self.batch
        try:
            for answer in answers:
                self.batch = True
                together = self.logits(prompt, answer)
                self.batch = False
                single = self.logits(prompt, answer)
                history = [int(t) for t in prompt]
                for t in range(len(answer)):
                    max_logit = max(max_logit, float(np.max(np.abs(together[t] - single[t]))))
                    before = history + [int(x) for x in answer[:t]]
                    a = engine_law(together[t], before, self.sampling_settings)
                    b = engine_law(single[t], before, self.sampling_settings)
                    by_position.setdefault(t, []).append(0.5 * float(np.abs(a - b).sum()))
        finally:
            self.batch = batch
        means = [float(np.mean(v)) for v in by_position.values()]
        return {"floor": max(means, default=0.0), "max_tv": max((max(v) for v in by_position.values()), default=0.0),
                "max_logit": max_logit, "positions": sum(len(v) for v in by_position.values())}

    def close(self) -> None:
        self._generators.clear()
        self._model = None
