"""OpenVINO GenAI's ``ContinuousBatchingPipeline`` behind the Decoder Protocol (openvino-genai 2026.4.1.0, CPU).

``OpenVINODecoder(gguf_path, method=..., settings=...)`` builds the pipeline on its first call (the target from the
GGUF file directly) and answers ``decoder(prompts, max_new_tokens, seed)`` with one list of new token ids per prompt:

* prompts are token ids (an ``openvino.Tensor`` per request), answers ``EncodedGenerationResult.m_generation_ids``:
  no tokenizer stands between the check and the engine;
* every row is one request with its own ``GenerationConfig.rng_seed`` (:func:`specdec.adapters._common.request_seeds`),
  so rows are independent draws and a call is reproducible; ``batch`` requests go to each ``generate`` call (the
  engine schedules them together: continuous batching);
* ``method``: None (the control: no speculation), ``"draft_model"`` (``openvino_genai.draft_model(draft_dir)`` as a
  pipeline property; the draft is an OpenVINO IR folder, by default the IR copy of the target's own GGUF,
  :func:`.ir_copy.ir_copy`: draft = target) with ``num_assistant_tokens`` K or, instead, an
  ``assistant_confidence_threshold``; or ``"prompt_lookup"`` (``prompt_lookup=True``, K and ``max_ngram_size``);
* ``logprobs``: ``GenerationConfig.logprobs`` of every request (0: not asked) - it changes what the sampler stores
  as a token's log-probability (below);
* :meth:`speculation_counts` sums the draft model's counters (``extended_perf_metrics``, accepted and rejected
  tokens) of each ``generate`` call; prompt lookup's, which OpenVINO does not keep, are replayed from each answer
  (:mod:`.lookup_replay`: its drafts are a function of the context and its rule sample-match).

How OpenVINO GenAI verifies drafts (``src/cpp/src/sampling/sampler.cpp``, openvino.genai at commit da1db86, after tag
2026.3.0.0; the installed 2026.4.1.0, build ab01d1771e4, is not in the snapshot read: the checks judge it).  ``Sampler::sample_from_sequence_group`` walks the
K + 1 target rows of a step; at each drafted position it *draws a token y from the target* (``_multinomial_sample``)
and calls ``Sampler::validate_candidate``:

* prompt lookup (``has_real_probabilities`` false), and a step where every generated token is still a candidate
  (``get_generated_len() == get_num_tokens_to_validate()``): the draft token x is kept iff
  ``x == y``; otherwise y replaces it and the step ends.  One target draw per emitted token, in the true context:
  the sample-match coupling (docs/reference.md, E5), lossless.
* a draft model at T > 0 (``do_sample`` and real probabilities): x is kept iff ``r <= q(x) / p(y)``, where q(x) is the
  draft's stored probability of x, p(y) the target's probability of *the freshly drawn y* (not of x), and r one of
  the 101 values 0, 0.01, ..., 1 (``uniform_int_distribution<>(0, 100) / 100``).  The acceptance ratio is inverted
  (F1 keeps x with probability min(1, p(x)/q(x))) and evaluated at two different tokens.  On a rejection nothing is
  removed yet: the loop ``continue``s to the *next* row of logits - the target's law after the rejected x - draws
  there, and ``get_p_prime`` cuts the sequence back to before x and appends that draw in x's place (it only rescales
  the draw's stored log-probability).  The residual (p - q)+ of F1 is never sampled.  This law is not the target's:
  not lossless, even with draft = target (where F1 keeps every draft).  ``logprobs > 0`` makes
  ``_multinomial_sample`` store raw-model log-probabilities (before temperature and top-p) instead of those of the
  law drawn from, which moves p(y), q(x) and so the acceptance: the law can change with ``logprobs``.
  ``assistant_confidence_threshold`` only stops the draft early (``register_new_token`` pauses it when a draft
  token's probability is below the threshold): the rule is the same.
* greedy (``do_sample`` false): the argmax y, x kept iff ``x == y``: lossless.

Sampling: :mod:`.generation_config` (top-k -> temperature -> min-p -> top-p; penalties; refusals by name).  The
forward pass is OpenVINO's on the GGUF's Q4_1 weights (bf16 by default on a CPU that has it): transformers' float32
copy is 0.30 TV per token away from it, so the law oracle is OpenVINO's own forward of the IR,
:class:`.ir_oracle.OpenVINOOracle`, its floor bounded by the control (the engine without speculation against it).
"""

from __future__ import annotations

import os

from ..._validation import as_float, as_int, as_seed
from ...sampling_settings import SamplingSettings
from ...warpers import SamplingConfig
from .._common import checked_prompt_rows, installed_version, request_seeds, require_version
from .generation_config import checked_settings, generation_config
from .lookup_replay import replay_lookup

SUPPORTED_OPENVINO_GENAI = ("2026.4.1.0",)
DISTRIBUTIONS = ("openvino-genai", "openvino_genai")
METHODS = (None, "draft_model", "prompt_lookup")


class OpenVINODecoder:
    """An ``openvino_genai.ContinuousBatchingPipeline`` as a :class:`specdec.protocols.Decoder` (module docstring).

    ``gguf_path``: the target's GGUF file.  ``method``: None, ``"draft_model"`` or ``"prompt_lookup"``.
    ``num_assistant_tokens``: K (default 4; ``"draft_model"`` with ``assistant_confidence_threshold`` takes none).
    ``draft_dir``: the draft's IR folder (``"draft_model"`` only; required).  ``max_ngram_size``: prompt lookup's
    n-gram (default 3).  ``threads``: ``INFERENCE_NUM_THREADS`` of target and draft.  ``batch``: requests per
    ``generate`` call.  ``cache_gb``: the KV cache (``SchedulerConfig.cache_size``, GB).  ``properties``: more OpenVINO
    properties of target and draft (``{"INFERENCE_PRECISION_HINT": "f32"}``: on a CPU with bf16, OpenVINO computes in
    bf16 by default, and its logits come in steps of 0.125 near 27: near-ties of greedy decoding then flip with the
    batch shape).
    """

    def __init__(self, gguf_path: str | os.PathLike, *, method: str | None = None, sampling: SamplingConfig | None = None,
                 settings: SamplingSettings | None = None, num_assistant_tokens: int | None = None,
                 assistant_confidence_threshold: float | None = None, max_ngram_size: int | None = None,
                 draft_dir: str | os.PathLike | None = None, logprobs: int = 0, threads: int = 1, batch: int = 16,
                 cache_gb: int = 1, properties: dict | None = None, name: str | None = None) -> None:
        if not isinstance(gguf_path, (str, os.PathLike)):
            raise TypeError(f"gguf_path must be a path to a GGUF file, got {type(gguf_path).__name__} {gguf_path!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.sampling_settings = checked_settings(sampling, settings)
        self.sampling = self.sampling_settings.sampling
        self.gguf_path = os.fspath(gguf_path)
        self.method = method
        self.threshold = None if assistant_confidence_threshold is None else as_float(
            "assistant_confidence_threshold", assistant_confidence_threshold, minimum=0.0, maximum=1.0, low_open=True)
        if self.threshold is not None and method != "draft_model":
            raise ValueError(f"assistant_confidence_threshold is a draft model's setting; method={method!r}")
        if self.threshold is not None and num_assistant_tokens is not None:
            raise ValueError("give num_assistant_tokens or assistant_confidence_threshold, not both (OpenVINO: mutually exclusive)")
        if method is None and (num_assistant_tokens is not None or max_ngram_size is not None or draft_dir is not None):
            raise ValueError("num_assistant_tokens, max_ngram_size and draft_dir need a method (method=None: no speculation)")
        if method == "draft_model" and draft_dir is None:
            raise ValueError("method='draft_model' needs draft_dir (an IR folder: specdec.adapters.openvino.ir_copy)")
        if method != "draft_model" and draft_dir is not None:
            raise ValueError(f"draft_dir is a draft model's setting; method={method!r}")
        if method == "prompt_lookup" and max_ngram_size is not None:
            max_ngram_size = as_int("max_ngram_size", max_ngram_size, minimum=1)
        self.num_assistant_tokens = None if method is None or self.threshold is not None else as_int(
            "num_assistant_tokens", 4 if num_assistant_tokens is None else num_assistant_tokens, minimum=1)
        self.max_ngram_size = (3 if max_ngram_size is None else max_ngram_size) if method == "prompt_lookup" else None
        self.draft_dir = None if draft_dir is None else os.fspath(draft_dir)
        self.logprobs = as_int("logprobs", logprobs, minimum=0)
        self.threads = as_int("threads", threads, minimum=1)
        self.batch = as_int("batch", batch, minimum=1)
        self.cache_gb = as_int("cache_gb", cache_gb, minimum=1)
        if properties is not None and not isinstance(properties, dict):
            raise TypeError(f"properties must be a dict of OpenVINO properties, got {type(properties).__name__}")
        own = {"INFERENCE_NUM_THREADS", "draft_model", "prompt_lookup"} & set(properties or {})
        if own:
            raise ValueError(f"properties may not set {sorted(own)}: OpenVINODecoder sets them (threads=, method=)")
        self.properties = dict(properties or {})
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__} {name!r}")
        self.name = name or self.settings
        self._pipe = None
        self._vocab_size: int | None = None
        self._counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}

    @property
    def settings(self) -> str:
        """One line: the engine's speculation and sampling settings."""
        found = installed_version(DISTRIBUTIONS)
        if self.method is None:
            spec = "no speculation"
        elif self.method == "prompt_lookup":
            spec = f"prompt lookup, K={self.num_assistant_tokens}, max_ngram_size={self.max_ngram_size}"
        elif self.threshold is not None:
            spec = f"draft model, assistant_confidence_threshold={self.threshold:g}"
        else:
            spec = f"draft model, K={self.num_assistant_tokens}"
        asked = f", logprobs={self.logprobs}" if self.logprobs else ""
        return f"openvino-genai {found[1] if found else '?'} ({spec}{asked}; {self.sampling_settings.label})"

    @property
    def num_draft_tokens(self) -> int:
        """K of the engine's drafting (0 without; a confidence threshold drafts up to the request's end)."""
        return self.num_assistant_tokens or 0

    @property
    def pipeline(self):
        """The ``ContinuousBatchingPipeline``, built on first use (after the version check)."""
        if self._pipe is None:
            require_version("specdec.adapters.openvino", DISTRIBUTIONS, SUPPORTED_OPENVINO_GENAI)
            import openvino_genai

            scheduler = openvino_genai.SchedulerConfig()
            scheduler.cache_size = self.cache_gb
            properties = {"INFERENCE_NUM_THREADS": self.threads, **self.properties}
            if self.method == "draft_model":
                properties["draft_model"] = openvino_genai.draft_model(self.draft_dir, "CPU", INFERENCE_NUM_THREADS=self.threads,
                                                                       **self.properties)
            elif self.method == "prompt_lookup":
                properties["prompt_lookup"] = True
            self._pipe = openvino_genai.ContinuousBatchingPipeline(self.gguf_path, scheduler, "CPU", properties)
        return self._pipe

    @property
    def vocab_size(self) -> int:
        """The size of the target's vocabulary (its tokenizer's, read from the GGUF file): prompt ids beyond it are refused."""
        if self._vocab_size is None:
            self._vocab_size = len(self.pipeline.get_tokenizer().get_vocab())
        return self._vocab_size

    def config(self, max_new_tokens: int, seed: int):
        """One request's ``GenerationConfig`` (:func:`.generation_config.generation_config`)."""
        return generation_config(self.sampling_settings, max_new_tokens=max_new_tokens, seed=seed, method=self.method,
                                 num_assistant_tokens=self.num_assistant_tokens, assistant_confidence_threshold=self.threshold,
                                 max_ngram_size=self.max_ngram_size, logprobs=self.logprobs)

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        import numpy as np

        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=0)
        seed = as_seed(seed)
        pipe = self.pipeline
        rows = checked_prompt_rows(prompts, self.vocab_size, "the engine")
        if not max_new_tokens:
            return [[] for _ in rows]
        import openvino

        seeds = request_seeds(seed, len(rows))
        outputs: list[list[int]] = []
        for start in range(0, len(rows), self.batch):
            chunk = range(start, min(start + self.batch, len(rows)))
            inputs = [openvino.Tensor(np.asarray([rows[i]], dtype=np.int64)) for i in chunk]
            results = pipe.generate(inputs, [self.config(max_new_tokens, seeds[i]) for i in chunk])
            for result in results:
                ids = [int(t) for t in result.m_generation_ids[0]]
                if len(ids) != max_new_tokens:
                    raise RuntimeError(f"OpenVINO GenAI answered {len(ids)} tokens where {max_new_tokens} were asked "
                                       "(ignore_eos is set: every answer should have them all)")
                outputs.append(ids)
            self._count(results, [rows[i] for i in chunk], outputs[start:])
        return outputs

    def _count(self, results, prompts, answers) -> None:
        """Add one ``generate`` call's counters: OpenVINO GenAI keeps them per call (every result of the call holds the
        same ``SDPerModelsPerfMetrics``), so they are read once, from the first result; prompt lookup's are replayed
        from each answer (:func:`.lookup_replay.replay_lookup`)."""
        if self.method == "prompt_lookup":
            for prompt, answer in zip(prompts, answers):
                replayed = replay_lookup(prompt, answer, self.num_assistant_tokens, self.max_ngram_size)
                for name in self._counts:
                    self._counts[name] += replayed[name]
            return
        metrics = results[0].extended_perf_metrics if len(results) and self.method == "draft_model" else None
        if metrics is None:
            return
        accepted, rejected = int(metrics.get_num_accepted_tokens()), int(metrics.get_num_rejected_tokens())
        self._counts["draft_tokens"] += accepted + rejected
        self._counts["accepted_tokens"] += accepted
        self._counts["drafts"] += int(accepted + rejected > 0)

    def speculation_counts(self) -> dict | None:
        """Cumulative counts since the decoder was built, from the draft model's metrics of each ``generate`` call
        (``extended_perf_metrics``): ``accepted_tokens`` (``get_num_accepted_tokens``), ``draft_tokens`` (accepted plus
        ``get_num_rejected_tokens``) and ``drafts`` (calls with a drafted token: OpenVINO GenAI counts no verification
        steps).  Its ``get_num_draft_tokens`` is not used: measured at 0 with 3 tokens accepted (four answers of two
        tokens), it does not count what was verified.  With prompt lookup, replayed from the answers
        (:func:`.lookup_replay.replay_lookup`): ``drafts`` are then the steps that drafted a token.  None without
        speculation."""
        return dict(self._counts) if self.method is not None else None

    def close(self) -> None:
        """Drop the pipeline (freed when the last reference goes)."""
        self._pipe = None

    def __repr__(self) -> str:
        return f"OpenVINODecoder({self.gguf_path!r}, {self.settings})"



__all__ = ["DISTRIBUTIONS", "METHODS", "SUPPORTED_OPENVINO_GENAI", "OpenVINODecoder"]
