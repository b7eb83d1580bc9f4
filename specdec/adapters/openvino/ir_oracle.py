"""OpenVINO's own law of every next token: the IR copy of the GGUF run by ``openvino`` itself, warped as OpenVINO GenAI's
sampler warps it (a :class:`specdec.protocols.LawOracle` for :class:`.decoder.OpenVINODecoder`).

Why not transformers' float32 copy (:class:`specdec.adapters.hf_oracle.HFSettingsOracle`): OpenVINO's forward on the
Q4_1 weights is not transformers' on its dequantised copy.  Measured on the four prompts of
``scripts/matrix/token_prompts.py`` (32 tokens each, OpenVINO 2026.4.1, one forward per answer): the mean per-token TV
between the two laws is 0.30 at T = 1 (0.32 at T = 0.7, top-p 0.8), and greedy answers part at the fourth token of
the first prompt: ten times the per-token TV 0.03 the checks ask.  OpenVINO's IR (:func:`.ir_copy.ir_copy`, the graph
the pipeline reads from the GGUF), compiled by ``openvino.Core`` for the CPU, gives the pipeline's greedy tokens.

The law (``src/cpp/src/sampling/logit_processor.hpp`` ``LogitProcessor``, ``logit_transformers.hpp``, openvino.genai
at commit da1db86; ``MinPFilter`` is in the 2026.4.1 library's symbols): top-k (the k largest logits), the
temperature's softmax, min-p (keep p >= min_p * max p, *not* renormalised), top-p (``TopPFilter``: sorted by
probability, tokens are kept up to and including the first at which the running sum of the softmax's own masses
exceeds top-p: after min-p, the shorter of the two prefixes of the sorted tokens, each measured on the softmax, not
the nucleus of the renormalised min-p set), renormalised by the draw (``Sampler::_multinomial_sample``); greedy: the
first largest logit (``_greedy_sample``).  Before them, the repetition, presence and frequency penalties, in that order, on the true prefix
of each position (the prompt's ids and the answer's tokens before it): :mod:`.penalties`, which cites their source.
Every other setting is refused by name (:class:`specdec.sampling_settings.UnsupportedSetting`): the oracle restates
nothing else.

``floor``: the pipeline runs the model as paged attention over its KV cache, in steps, where this oracle runs one
forward per answer; the difference is rounding, bounded by the control (the engine without speculation against this
oracle, ``specdec.conformance.token_cells.run_token_cell``), which must PASS before a speculative subject is judged.
By default it is not only rounding: OpenVINO's CPU plugin computes in bf16 where the CPU has it, quantises activations
dynamically for the compressed weights, and the pipeline keeps its KV cache in a low precision.  Measured (the raw
log-probability of each sampled token, ``GenerationConfig.logprobs``, against this oracle's; four per-token prompts,
three answers of 12 tokens each): mean |difference| 0.19, up to 1.2, with the defaults; 0.08, up to 0.44, in f32;
0.0001, up to 0.0003, under :data:`EXACT_PROPERTIES` given to both the pipeline and the oracle.  At T = 1 the defaults
stay within the floor; under top-p they do not (the nucleus' edge moves: at T = 0.7, top-p 0.8, 21 of 512 tokens of the
engine without speculation lay outside this oracle's nucleus), so checks under truncation run both with
:data:`EXACT_PROPERTIES`.
"""

from __future__ import annotations

import os

import numpy as np

from ..._validation import as_float, as_int
from ...laws.oracles import answer_batches, row_law
from ...sampling_settings import SamplingSettings, UnsupportedSetting, settings_from
from .generation_config import ENGINE
from .penalties import PENALTIES, has_penalties, openvino_penalised

FLOOR = 0.01  # per-token mean TV allowed between this oracle's law and the pipeline's (module docstring)
# CPU properties under which the pipeline's forward and this oracle's agree to 3e-4 in log-probability (module
# docstring): give them to both (OpenVINODecoder(properties=...) and OpenVINOOracle(properties=...)).
EXACT_PROPERTIES = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}


def openvino_law(logits: np.ndarray, settings: SamplingSettings) -> np.ndarray:
    """The law (B, V) OpenVINO GenAI's sampler draws from, for logits (B, V), under ``settings``' warpers
    (the penalties, which read each row's history, are applied before: :func:`.penalties.openvino_penalised`)."""
    logits = np.asarray(logits, dtype=np.float64)  # (B, V)
    if settings.greedy:
        out = np.zeros_like(logits)
        out[np.arange(len(logits)), logits.argmax(-1)] = 1.0  # argmax: the first largest, as _greedy_sample's scan
        return out
    if settings.top_k and settings.top_k < logits.shape[-1]:
        kth = -np.partition(-logits, settings.top_k - 1, axis=-1)[:, settings.top_k - 1:settings.top_k]
        logits = np.where(logits >= kth, logits, -np.inf)
    z = logits / settings.temperature
    probs = np.exp(z - z.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    if settings.min_p:  # MinPFilter: not renormalised, so top-p below sums the softmax's own masses
        probs = np.where(probs >= settings.min_p * probs.max(-1, keepdims=True), probs, 0.0)
    if settings.top_p is not None and settings.top_p < 1:
        order = np.argsort(-probs, axis=-1, kind="stable")  # (B, V)
        sorted_probs = np.take_along_axis(probs, order, axis=-1)
        before = np.cumsum(sorted_probs, axis=-1) - sorted_probs  # the running sum before each token
        keep_sorted = before <= settings.top_p
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        probs = np.where(keep, probs, 0.0)
    return probs / probs.sum(-1, keepdims=True)


class OpenVINOOracle:
    """The per-token laws of the IR model in ``ir_dir`` under ``settings`` (module docstring).

    ``ir_dir``: a folder with ``openvino_model.xml`` (:func:`.ir_copy.ir_copy`); ``threads``: the CPU plugin's
    ``INFERENCE_NUM_THREADS``; ``batch_size``: answers per forward pass (answers of one prompt length and length);
    ``properties``: more CPU properties (give the engine's; :data:`EXACT_PROPERTIES` to both for a law within 3e-4)."""

    def __init__(self, ir_dir: str | os.PathLike, settings: SamplingSettings | None = None, *, sampling=None,
                 floor: float = FLOOR, threads: int = 1, batch_size: int = 16, properties: dict | None = None) -> None:
        self.sampling_settings = settings_from(sampling, settings)
        for name, value in self.sampling_settings.changed().items():
            if name not in ("temperature", "top_k", "top_p", "min_p", *PENALTIES):
                raise UnsupportedSetting(ENGINE + " oracle", name, value, "the oracle restates the warpers and penalties only")
        model = os.path.join(os.fspath(ir_dir), "openvino_model.xml")
        if not os.path.isfile(model):
            raise ValueError(f"ir_dir must hold openvino_model.xml (specdec.adapters.openvino.ir_copy), got {str(ir_dir)!r}")
        self.model_path = model
        self.floor = as_float("floor", floor, minimum=0.0, maximum=0.5, high_open=True)
        self.tolerance = 1e-9
        self.threads = as_int("threads", threads, minimum=1)
        self.batch_size = as_int("batch_size", batch_size, minimum=1)
        if properties is not None and not isinstance(properties, dict):
            raise TypeError(f"properties must be a dict of OpenVINO properties, got {type(properties).__name__}")
        self.properties = dict(properties or {})
        self._compiled = None
        self.vocab_size: int | None = None

    @property
    def settings(self) -> str:
        return f"OpenVINO IR {os.path.dirname(self.model_path)} under OpenVINO GenAI's warpers ({self.sampling_settings.label})"

    @property
    def compiled(self):
        if self._compiled is None:
            import openvino

            core = openvino.Core()
            core.set_property("CPU", {"INFERENCE_NUM_THREADS": self.threads, **self.properties})
            self._compiled = core.compile_model(self.model_path, "CPU")
        return self._compiled

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """The model's logits (B, n, V) for token ids (B, n), one stateful forward from an empty state."""
        ids = np.asarray(ids, dtype=np.int64)
        batch, n = ids.shape
        request = self.compiled.create_infer_request()
        request.reset_state()
        out = request.infer({"input_ids": ids, "attention_mask": np.ones((batch, n), dtype=np.int64),
                             "position_ids": np.tile(np.arange(n, dtype=np.int64), (batch, 1)),
                             "beam_idx": np.arange(batch, dtype=np.int32)})
        return np.asarray(out["logits"], dtype=np.float32)

    def token_laws(self, prompts, continuations):
        if len(prompts) != len(continuations):
            raise ValueError(f"token_laws got {len(prompts)} prompts and {len(continuations)} continuations (one per answer)")
        prompts = [[int(t) for t in p] for p in prompts]
        continuations = [[int(t) for t in c] for c in continuations]
        out: list = [[] for _ in continuations]
        for (lp, lc), part in answer_batches(prompts, continuations, lambda p, c: (len(p), len(c)), self.batch_size):
            ids = np.asarray([prompts[i] + continuations[i][:-1] for i in part], dtype=np.int64)  # (B, lp + lc - 1)
            logits = self.logits(ids)[:, lp - 1:]  # (B, lc, V): position t given prompt + continuation[:t]
            self.vocab_size = logits.shape[-1]
            penalised = has_penalties(self.sampling_settings)
            for t in range(lc):
                rows = logits[:, t]  # (B, V)
                if penalised:  # each row's history: its prompt and the continuation before position t
                    rows = np.stack([openvino_penalised(rows[b], prompts[i], continuations[i][:t], self.sampling_settings)
                                     for b, i in enumerate(part)])
                probs = openvino_law(rows, self.sampling_settings)  # (B, V)
                for b, i in enumerate(part):
                    out[i].append(row_law(probs[b]))
        return out


__all__ = ["EXACT_PROPERTIES", "FLOOR", "OpenVINOOracle", "openvino_law"]
