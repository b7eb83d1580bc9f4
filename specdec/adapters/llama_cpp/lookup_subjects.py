"""llama.cpp's prompt lookup as a benchmark subject: ``specdec bench run specdec.adapters.llama_cpp.lookup_subjects:prompt_lookup``.

:func:`prompt_lookup` is a factory of ``num_draft_tokens`` (:mod:`specdec.bench.pairs`, form 2): K >= 1 gives
llama-cpp-python's ``LlamaPromptLookupDecoding(num_pred_tokens=K)`` draft, K = 0 its twin, the same engine
without a draft.  Every K of a sweep and the twin run on ONE ``llama_cpp.Llama`` (one load of the weights, one
KV cache, one thread setting): before its rows each decoder sets the engine as ``Llama(draft_model=...)`` would
have built it, the draft and ``logits_all`` for K >= 1 (a draft forces every row's logits, the prompt's
included), neither for K = 0.  The rows are those of :class:`specdec.adapters.llama_cpp.in_process.LlamaCppDecoder`
(a seed per row, the prompt's prefix in the KV cache and nothing else, the real ``Llama.generate`` loop),
greedy by default (llama.cpp's greedy sampler: with and without the draft the same tokens, up to float
differences between a batched and a single evaluation), exactly ``max_new_tokens`` per row (EOS ignored).
The speculative side counts its speculation (``speculation_counts``: drafts, draft tokens, accepted tokens,
and ``lookups``, the steps that looked for a draft, found or not) and records its steps
(:class:`specdec.protocols.StepRecorder`: the context, K and accepted drafts of every step of the last call),
so the bench's rows get docs/reference.md §6's acceptance, not only the draft utilisation.

Each call prefills its prompts (its TTFT and time include the prompt, on both sides: the speculative
side's prefill computes every position's logits, as llama-cpp-python's does with a draft).

Batch: llama-cpp-python decodes one sequence at a time; a call with B prompts decodes them one after another,
so a batch sweep measures B sequential requests, not B requests in flight, and :meth:`LookupDecoder.step_costs`
answers None for ``batch > 1`` (the bench's "no measured costs").

Costs (:meth:`LookupDecoder.step_costs`): after a real context (about 70 tokens of the retrieval prompts'
text) in the KV cache, one ``Llama.eval`` of K + 1 tokens, K = 0..max_k, interleaved round by round, the cache
rolled back after each (``n_tokens``; ``eval`` removes the cells after it): K = 0 as the twin evaluates
(last row's logits only), K >= 1 as the speculative side does (every row's logits, copied to ``Llama.scores``);
and one ``LlamaPromptLookupDecoding`` call of the decoder's K on that context, divided by K.  These are the
eval and draft calls of one step, nothing else: the sampler's draw per emitted token, the Python of the
``generate`` loop, the prompt's prefill (with every row's logits on the speculative side) are outside F23's
step and show in the row's efficiency.
"""

from __future__ import annotations

import os
import statistics
import time

from ..._validation import as_int
from ...laws.speedup import StepCosts
from ...warpers import SamplingConfig
from .._common import require_version
from .draft_counts import CountingDraft as _CountingDraft
from .in_process import DISTRIBUTIONS, SUPPORTED_LLAMA_CPP, LlamaCppDecoder

NAME = "llama.cpp-lookup"
N_CTX = 8192  # SmolLM2's trained context: the bench's longest prompts (4,096 tokens) fit with room to spare
GREEDY = SamplingConfig(temperature=0.0)
_ENGINES: dict = {}  # (model_path, n_ctx, llama_args) -> _SharedLlama


class _SharedLlama:
    """One ``llama_cpp.Llama`` for a K sweep and what its KV cache holds, whichever decoder ran last."""

    def __init__(self, model_path: str, n_ctx: int, llama_args: dict, key) -> None:
        self.model_path, self.n_ctx, self.llama_args, self.key = model_path, n_ctx, llama_args, key
        self.llm = None
        self.prefix: tuple | None = None  # the prompt prefix whose KV cells the context holds
        self.active = None  # the decoder the engine is set up for (its counters and steps get the draws)
        self.users: set[int] = set()

    def engine(self):
        if self.llm is None:
            require_version("specdec.adapters.llama_cpp.lookup_subjects", DISTRIBUTIONS, SUPPORTED_LLAMA_CPP)
            from llama_cpp import Llama

            args = dict(self.llama_args)
            args.setdefault("n_threads", max(1, (os.cpu_count() or 2) // 2))  # as LlamaCppDecoder (OpenMP spinning)
            args.setdefault("n_threads_batch", args["n_threads"])
            # logits_all=True sizes Llama.scores for every position (what a draft needs); the twin switches it off
            self.llm = Llama(model_path=self.model_path, n_ctx=self.n_ctx, logits_all=True, verbose=False, **args)
            self._count_acceptance()
            self.prefix, self.active = None, None
        return self.llm

    def _count_acceptance(self) -> None:
        """As :func:`specdec.adapters.llama_cpp.draft_counts.count_acceptance`, into the active decoder's counters and its
        current step: a draw at ``idx`` with a drafted token at ``idx + 1`` verifies that draft."""
        llm, sample = self.llm, self.llm.sample

        def counted(*args, **kwargs):
            token = sample(*args, **kwargs)
            idx, decoder = kwargs.get("idx"), self.active
            if decoder is not None and decoder._draft is not None and idx is not None and idx + 1 < llm.n_tokens:
                step = decoder._step_records[-1]  # opened by this step's lookup
                step[2] += 1
                if int(token) == int(llm.input_ids[idx + 1]):
                    step[3] += 1
                    decoder._counts["accepted_tokens"] += 1
            return token

        llm.sample = counted

    def release(self, decoder) -> None:
        self.users.discard(id(decoder))
        if self.active is decoder:
            self.active = None
        if not self.users and self.llm is not None:
            self.llm.close()
            self.llm, self.prefix = None, None
            _ENGINES.pop(self.key, None)


class _LookupCounter(_CountingDraft):
    """:class:`_CountingDraft` that also counts every lookup (the ones that found nothing too: a step without a
    draft, one token for a lookup and a one-token eval) and opens the step's record: [context before the step,
    drafted, verified, accepted]."""

    def __init__(self, lookup, counts: dict, n_ctx: int, records: list) -> None:
        super().__init__(lookup, counts, n_ctx)
        self.records = records

    def __call__(self, input_ids, /, **kwargs):
        self.counts["lookups"] += 1
        drafted = super().__call__(input_ids, **kwargs)
        self.records.append([input_ids.copy(), max(0, min(len(drafted), self.n_ctx - len(input_ids))), 0, 0])
        return drafted


class LookupDecoder(LlamaCppDecoder):
    """One side of :func:`prompt_lookup`'s pair: a :class:`LlamaCppDecoder` on the sweep's shared engine."""

    def __init__(self, model_path, *, num_draft_tokens: int, sampling: SamplingConfig, n_ctx: int, llama_args: dict | None,
                 max_ngram_size: int, name: str) -> None:
        k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
        self.max_ngram_size = as_int("max_ngram_size", max_ngram_size, minimum=1)
        extra = dict(llama_args or {})
        key = (os.fspath(model_path), as_int("n_ctx", n_ctx, minimum=2), tuple(sorted(extra.items())))
        self._shared = _ENGINES.get(key) or _ENGINES.setdefault(key, _SharedLlama(key[0], key[1], extra, key))
        super().__init__(model_path, sampling=sampling, num_pred_tokens=k or None, n_ctx=n_ctx, ignore_eos=True, name=name,
                         llama_args=extra)
        self._counts["lookups"] = 0
        self._draft = None
        self._step_records: list[list] = []  # this call's steps (_LookupCounter)
        self._shared.users.add(id(self))

    @property
    def _prefix(self):  # the KV cache is the shared engine's: so is what it holds
        return self._shared.prefix

    @_prefix.setter
    def _prefix(self, value) -> None:
        self._shared.prefix = value

    @property
    def llm(self):
        """The shared ``llama_cpp.Llama``, set up for this decoder (its draft and ``logits_all``, or neither)."""
        shared = self._shared
        llm = shared.engine()
        if shared.active is not self:
            if self.num_pred_tokens is not None and self._draft is None:
                from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

                lookup = LlamaPromptLookupDecoding(max_ngram_size=self.max_ngram_size, num_pred_tokens=self.num_pred_tokens)
                self._draft = _LookupCounter(lookup, self._counts, self.n_ctx, self._step_records)
            llm.draft_model = self._draft
            llm._logits_all = self._draft is not None  # what Llama(draft_model=...) sets
            shared.active = self
        return llm

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        """Every call is a new request: its prompts are prefilled in it (the rows of one prompt share that),
        never taken from the KV cache an earlier call left, whichever side ran it: with one engine for both
        sides, reuse would let the order of the bench's calls decide which side pays the prefill."""
        self._step_records.clear()
        self._shared.prefix = None
        return super().__call__(prompts, max_new_tokens, seed)

    def last_steps(self) -> list[tuple[tuple[int, ...], int, int]]:
        """(context before the step, K, accepted) for every step of the last call that looked up a draft
        (:class:`specdec.protocols.StepRecorder`; K = 0 where the lookup found nothing).  K is the drafted tokens
        the step verified: all it drafted, except in a row's last step when ``max_new_tokens`` ended the row
        before a draw rejected one (llama.cpp never shrinks a draft: that step evaluated more than it verified)."""
        out = []
        for context, drafted, verified, accepted in self._step_records:
            k = drafted if accepted < verified or verified == drafted else verified
            out.append((tuple(int(t) for t in context), k, accepted))
        return out

    @property
    def draft_law(self):
        """None: prompt lookup copies tokens from the context, it states no law per context."""
        return None

    @property
    def acceptance_rule(self) -> str | None:
        """None: llama.cpp keeps a draft when the target's draw equals it (sample-match, E5), not a registered scheme."""
        return None

    def step_costs(self, max_k: int, batch: int = 1, *, rounds: int = 5, context: list[int] | None = None):
        """:class:`specdec.laws.speedup.StepCosts` of this engine (module docstring): medians of ``rounds``
        interleaved rounds after ``context`` (token ids; default: the retrieval prompts' first text).
        None for ``batch > 1``: llama-cpp-python runs one sequence at a time."""
        max_k = as_int("max_k", max_k, minimum=0)
        rounds = as_int("rounds", rounds, minimum=1)
        if as_int("batch", batch, minimum=1) > 1:
            return None
        shared, llm = self._shared, self.llm
        if context is None:
            from ...workload.prompts import PROMPTS

            context = [int(t) for t in llm.tokenize(PROMPTS["retrieval"][0][0]["content"].encode(), add_bos=False)]
        context = [as_int("context[]", t, minimum=0, maximum=llm.n_vocab() - 1) for t in context]
        if not 2 <= len(context) <= self.n_ctx - max_k - 1:
            raise ValueError(f"context must hold 2 to n_ctx - max_k - 1 = {self.n_ctx - max_k - 1} tokens, got {len(context)}")
        shared.prefix = None
        llm.reset()
        llm.eval(context)
        times: dict[int, list[float]] = {k: [] for k in range(max_k + 1)}
        try:
            for round_ in range(rounds + 1):  # round 0 warms every width up
                for k in range(max_k + 1):
                    llm._logits_all = k > 0  # K = 0: the twin's step; K >= 1: a token and K drafts
                    chunk = context[-(k + 1):] if k + 1 <= len(context) else [context[-1]] * (k + 1)
                    llm.n_tokens = len(context)  # eval removes every cell after it first: the same context each time
                    started = time.perf_counter()
                    llm.eval(chunk)
                    seconds = time.perf_counter() - started
                    if round_:
                        times[k].append(seconds)
            draft = self._lookup_seconds(llm, context, rounds)
        finally:
            shared.prefix, shared.active = None, None  # the cache holds the context now; set the engine up again
            llm.reset()
        return StepCosts({k: statistics.median(ts) for k, ts in times.items()}, draft)

    def _lookup_seconds(self, llm, context: list[int], rounds: int) -> float:
        """Median seconds of one ``LlamaPromptLookupDecoding`` call after ``context``, per drafted token of this
        decoder's K (0 for the twin).  The call's cost hardly depends on K: per token it is exact at this K only."""
        if self.num_pred_tokens is None:
            return 0.0
        import numpy as np
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        lookup = LlamaPromptLookupDecoding(max_ngram_size=self.max_ngram_size, num_pred_tokens=self.num_pred_tokens)
        ids = np.asarray(context, dtype=np.intc)  # as generate passes it: a view of Llama.input_ids
        times = []
        for _ in range(rounds + 1):
            started = time.perf_counter()
            lookup(ids)
            times.append(time.perf_counter() - started)
        return statistics.median(times[1:]) / self.num_pred_tokens

    def close(self) -> None:
        """Leave the shared engine; the last decoder to leave frees it."""
        self._shared.release(self)

    def __repr__(self) -> str:
        return f"LookupDecoder({self.model_path!r}, {self.settings}, shared engine)"


def prompt_lookup(num_draft_tokens: int, *, sampling: SamplingConfig = GREEDY, n_ctx: int = N_CTX,
                  model_path: str | os.PathLike | None = None, max_ngram_size: int = 2,
                  llama_args: dict | None = None) -> LookupDecoder:
    """llama.cpp with prompt-lookup drafts of ``num_draft_tokens`` tokens (0: the twin, no draft), on SmolLM2-135M's
    Q4_1 GGUF (``model_path``: another GGUF file), greedy unless ``sampling`` says otherwise.

    Every call with the same ``model_path``, ``n_ctx`` and ``llama_args`` shares one ``llama_cpp.Llama``.  A call
    with B prompts decodes them one after another (llama-cpp-python runs one sequence at a time).
    """
    if model_path is None:
        from ...decoding.models import GGUF_FILE, _gguf_dir

        model_path = _gguf_dir() / GGUF_FILE
    return LookupDecoder(model_path, num_draft_tokens=num_draft_tokens, sampling=sampling, n_ctx=n_ctx,
                         llama_args=llama_args, max_ngram_size=max_ngram_size, name=NAME)


prompt_lookup.name = NAME  # the subject's name in the rows (resolve_subject reads it)
