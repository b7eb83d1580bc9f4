"""llama.cpp's own law of every token of an answer, for the per-token check (a :class:`specdec.protocols.LawOracle`).

:class:`LlamaCppOracle` evaluates each prompt once, in a llama.cpp context of its own (up to ``MAX_PROMPTS`` kept, the
least recently used reset first: the checks ask their prompts in turn, row after row, and one context would evaluate
each prompt again for every answer - a third to a half of the oracle's time on the matrix's prompts), then each answer
after it one token at a time - as llama.cpp decodes without a draft - (``logits_all``: every position's raw float32
logits, llama-cpp-python 0.3.36); the positions an answer shares with the previous answer to its prompt are not
evaluated again (their KV entries, rows and laws, made by the same one-token calls, are kept), and turns each
position's logits into the law llama.cpp samples from with its sampler chain in its own order (:mod:`.sampler_chain`:
truncation on the untempered law, then the temperature).  Each law is kept compact
(:meth:`specdec.laws.TokenLaw.compact`: its support when small, else its 32 most likely tokens and the rest's mass),
so a chunk of answers over a 49,152-token vocabulary fits in memory.

The whole sampling record (``settings=``, a :class:`specdec.SamplingSettings`): llama-cpp-python 0.3.36 runs a
request's Python ``logits_processor`` as the first sampler of its chain (``Llama._init_sampler``: a custom sampler
that hands ``processor(self._input_ids, logits)`` the raw float32 logits in id order), then the penalties over the
tokens generated in the request, then top-k, top-p, min-p and the temperature (:mod:`.sampler_chain`).  specdec's
adapter maps a logit bias, allowed ids, bad words, a minimum of new tokens and the user's processor onto Python stages
(:func:`.sampling_map.processors`); this oracle calls the *same* stages on the *true* prefix - the prompt and the
answer's own earlier tokens, what ``_input_ids`` holds when the engine samples without a draft - and then the chain,
so its law is the engine's under the whole record.  A user processor must be a pure function of (history, logits):
the oracle calls it again, once per position.  How the rows are asked (``samples_per_request``, ``seeded=False``) does
not change a row's law: the oracle takes both (llama-server takes them; llama-cpp-python's adapter refuses them, by
name); stop tokens end an answer (the check's ``eos_token_id``).

The penalties' history: llama-cpp-python's ``generate`` accepts only the tokens it generates into the chain, so the
penalties' window (the last 64 tokens) holds the answer alone; llama.cpp's own ``llama-server`` accepts the prompt's
tokens first (``tools/server/server-context.cpp``, ``server_slot::init_sampler``: ``common_sampler_accept(smpl, id,
false)`` for every prompt token), so its window spans the prompt and the answer - ``prompt_accepted=True`` says so.
Without it llama-server's control FAILs at a repetition penalty of 1.3 on the real prompts (tokens the server drew
from its first position that the answer-only law gives probability 0, 2026-11-28).

End of generation: llama-server's ``ignore_eos`` (what specdec's client sends, for answers of the asked length) is
not llama-cpp-python's: it adds a logit bias of -inf for every end-of-generation token of the vocabulary
(``common/common.cpp``, ``common_init_from_params``: ``logit_bias_eog``; ``tools/server/server-schema.cpp``, the
``ignore_eos`` field's handler), so the server never draws them - ``eog_banned=True`` says so.  Without it
llama-server's control FAILed at top-k 2 (T = 0.7, top-p 0.8): where the chat prompts' answers would end, the law
without the ban kept only ``<|im_end|>`` and the server drew the next token (2026-11-28).

The floor: evaluated one token at a time, the oracle's logits are those of the engine without a draft (the same
calls on the same build).  ggml's kernels round differently for other batch shapes, and an engine that
verifies drafts evaluates blocks of K + 1 tokens: :meth:`LlamaCppOracle.measure_floor` states how far batch
evaluation moves the laws (per position, the mean TV), which is also what ``batch=True`` (one batch per answer,
faster) costs as a floor.  Measured with llama-cpp-python 0.3.36 on SmolLM2's Q4_1 GGUF (``make peers``,
.peers/llama-oracle-floor.json): on the AVX2 build the Makefile makes on every x86-64 machine (2026-11-29), logits
move by up to 2.0, a position's law by a mean TV of 0.023 (18 + 8 tokens of context; largest single TV 0.26) and
0.021 (54 + 32 tokens); on an AVX-512 machine's native build (2026-11-25) by up to 0.8, 0.005 and 0.024: ggml's
llamafile sgemm kernels serve batches, not single tokens, and their rounding follows the instruction set.  A build with ``-DGGML_LLAMAFILE=OFF`` gave bitwise equal logits for
every batch shape tried - its own, not the default build's: it evaluates the prompt without those kernels too, and
that moves every later row (``scripts/llama_build_floor.py``, 2026-11-28, 16 answers of 32 tokens the default build
drew at T = 0.7 on the matrix's prompts: logits by up to 2.5, a position's law by a mean TV of 0.029 against the
default build one token at a time, more than the default build's own batches move it, 0.019), and one batch an
answer cost 8.3 ms a position against 14.9 one token at a time: the oracle stays on the engine's build, one token
at a time.  So the law of llama.cpp's speculative decoding differs from its law without a draft
by that rounding; the per-token check tests it against the law without a draft, at a TV of at least three times
that floor.
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict

import numpy as np

from ..._validation import as_float, as_int
from ...laws.oracles import TokenLaw, row_law
from ...sampling_settings import settings_from
from ...warpers import SamplingConfig
from .._common import require_version
from .in_process import DISTRIBUTIONS, SUPPORTED_LLAMA_CPP
from .sampler_chain import ChainSettings, chain_law
from .sampling_map import checked_settings, processors

FLOOR = 1e-3  # per-token TV, a margin: one token at a time the oracle makes the calls the engine makes without a draft
MAX_PROMPTS = 8  # prompts kept evaluated at once, a llama.cpp context each (the model's weights are shared: mmap)

__all__ = ["FLOOR", "MAX_PROMPTS", "LlamaCppOracle"]


def _shared(before: list[int], after: list[int]) -> int:
    """How many leading tokens ``after`` shares with ``before``."""
    n = 0
    for a, b in zip(before, after):
        if a != b:
            break
        n += 1
    return n


class LlamaCppOracle:
    """llama.cpp's per-token laws of ``model_path`` (GGUF) under ``sampling`` (module docstring)."""

    def __init__(self, model_path: str | os.PathLike, *, sampling: SamplingConfig = SamplingConfig(), n_ctx: int = 512,
                 floor: float = FLOOR, chain: ChainSettings | None = None, llama_args: dict | None = None,
                 batch: bool = False, settings=None, prompt_accepted: bool = False, eog_banned: bool = False) -> None:
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
        if settings is not None and (sampling != SamplingConfig() or chain is not None):
            raise ValueError("give sampling= (or chain=) or settings= (a SamplingSettings), not both")
        self.model_path = os.fspath(model_path)
        # n per request and the seed change how rows are asked, not a row's law (module docstring)
        asked = settings_from(None if settings is not None else sampling, settings)
        self.sampling_settings = checked_settings(None, dataclasses.replace(asked, samples_per_request=None, seeded=True))
        self.chain = chain or ChainSettings.from_settings(self.sampling_settings)
        self.n_ctx = as_int("n_ctx", n_ctx, minimum=2)
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-6
        for name, flag in (("batch", batch), ("prompt_accepted", prompt_accepted), ("eog_banned", eog_banned)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
        self.batch, self.prompt_accepted, self.eog_banned = batch, prompt_accepted, eog_banned
        self._eog: np.ndarray | None = None  # the vocabulary's end-of-generation ids (llama_vocab_is_eog), once read
        self.llama_args = dict(llama_args or {})
        # a prompt (tuple) -> [its llama.cpp context, the answer tokens past the prompt in its KV cache, (the last answer
        # scored, its laws)], least recently used first
        self._contexts: OrderedDict[tuple[int, ...], list] = OrderedDict()

    @property
    def settings(self) -> str:
        c = self.chain
        chain = (f"T={c.temperature:g}" + (f", top_k={c.top_k}" if c.top_k else "") + (f", top_p={c.top_p:g}" if c.top_p < 1 else "")
                 + (f", min_p={c.min_p:g}" if c.min_p else "") + (f", repeat={c.repeat_penalty:g}" if c.repeat_penalty != 1 else "")
                 + (f", frequency={c.frequency_penalty:g}" if c.frequency_penalty else "")
                 + (f", presence={c.presence_penalty:g}" if c.presence_penalty else ""))
        stages = processors(self.sampling_settings, 1)
        python = f"; Python stages of {self.sampling_settings.label}" if stages else ""
        if c.penalises:
            chain += f"; penalties over the last {c.last_n} tokens of {'the prompt and ' if self.prompt_accepted else ''}the answer"
        if self.eog_banned:
            chain += "; end-of-generation tokens banned (llama-server's ignore_eos)"
        return (f"llama.cpp's sampler chain on every position's logits ({'the answer in one batch' if self.batch else 'one token at a time'}; "
                f"{os.path.basename(self.model_path)}; {chain}{python}; floor {self.floor:g})")

    def law(self, logits, prompt, answer_before) -> np.ndarray:
        """The law (V,) the engine samples from at a position whose raw ``logits`` follow ``prompt`` and the answer's
        earlier tokens ``answer_before``: the end-of-generation ban (``eog_banned``), the Python stages on the true
        prefix, then the chain (module docstring)."""
        stages = processors(self.sampling_settings, len(prompt))
        if self.eog_banned or stages:
            logits = np.array(logits, dtype=np.float32)  # a copy: the caller's row stays as it was
        if self.eog_banned:
            logits[self._eog_ids()] = -np.inf
        if stages:
            history = np.asarray([*prompt, *answer_before], dtype=np.intc)
            for stage in stages:
                logits = stage(history, logits)
        return chain_law(logits, [*prompt, *answer_before] if self.prompt_accepted else answer_before, self.chain)

    def _eog_ids(self) -> np.ndarray:
        """The vocabulary's end-of-generation ids (``llama_vocab_is_eog``, as ``common_init_from_params`` reads them)."""
        if self._eog is None:
            import llama_cpp

            llm = next(iter(self._contexts.values()))[0] if self._contexts else self._new_llm()
            try:
                vocab = llm._model.vocab
                self._eog = np.flatnonzero([llama_cpp.llama_vocab_is_eog(vocab, i) for i in range(llama_cpp.llama_vocab_n_tokens(vocab))])
            finally:
                if not self._contexts:
                    llm.close()
        return self._eog

    def _new_llm(self):
        require_version("specdec.adapters.llama_cpp.oracle", DISTRIBUTIONS, SUPPORTED_LLAMA_CPP)
        from llama_cpp import Llama

        args = dict(n_threads=max(1, (os.cpu_count() or 2) // 2))
        args.update(self.llama_args)
        args.setdefault("n_threads_batch", args["n_threads"])
        return Llama(model_path=self.model_path, n_ctx=self.n_ctx, n_batch=self.n_ctx, logits_all=True, verbose=False, **args)

    def _context(self, prompt: list[int]) -> list:
        """``prompt``'s context ``[llm, the answer tokens in its cache, (the last answer scored, its laws)]``, the
        prompt evaluated (a new context, or the least recently used one reset, once ``MAX_PROMPTS`` are kept)."""
        key = tuple(prompt)
        if key in self._contexts:
            self._contexts.move_to_end(key)
            return self._contexts[key]
        llm = self._contexts.popitem(last=False)[1][0] if len(self._contexts) >= MAX_PROMPTS else self._new_llm()
        llm.reset()
        llm.eval(prompt)
        self._contexts[key] = context = [llm, [], ([], [])]
        return context

    def logits(self, prompt, continuation) -> np.ndarray:
        """Raw float32 logits (len(continuation), V) of every continuation position: the prompt (evaluated once, in its
        own context), then the answer one token at a time (as the engine decodes without a draft) from where it
        parts from the previous answer to the prompt or, with ``batch``, in one batch."""
        return self._logits(prompt, continuation, self.batch)

    def _logits(self, prompt, continuation, batch: bool) -> np.ndarray:
        prompt = [int(t) for t in prompt]
        if len(prompt) + len(continuation) > self.n_ctx or not prompt:
            raise ValueError(f"a prompt of {len(prompt)} and an answer of {len(continuation)} tokens do not fit n_ctx={self.n_ctx}")
        context = self._context(prompt)
        llm, evaluated = context[0], [int(t) for t in continuation[:-1]]
        kept = 0 if batch else _shared(context[1], evaluated)
        llm.n_tokens = len(prompt) + kept  # the KV cache past it is dropped by the next eval; the rows before it stay
        if batch:
            llm.eval(evaluated)
        else:
            for token in evaluated[kept:]:
                llm.eval([token])
        context[1] = [] if batch else evaluated  # a batch's KV entries are not one-token ones: never kept
        return np.array(llm.scores[len(prompt) - 1 : len(prompt) - 1 + len(continuation)], dtype=np.float32)

    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        out = []
        for prompt, continuation in zip(prompts, continuations):
            continuation = [int(t) for t in continuation]
            if not continuation:
                out.append([])
                continue
            rows = self.logits(prompt, continuation)
            context = self._contexts[tuple(int(t) for t in prompt)]
            before, laws = context[2]
            # a position whose prefix the previous answer to this prompt shares has that answer's law (same row, same history)
            kept = min(_shared(before, continuation) + 1, len(laws), len(continuation))
            laws = laws[:kept] + [row_law(self.law(rows[t], prompt, continuation[:t])) for t in range(kept, len(continuation))]
            context[2] = (continuation, laws)
            out.append(laws)
        return out

    def measure_floor(self, prompt, answers) -> dict:
        """How far batch evaluation moves the laws on ``answers`` to ``prompt`` (the floor of ``batch=True``, P2): the
        TV between the laws of the answer in one batch and those of one-token evaluations (how the engine decodes
        without a draft, and this oracle by default), per position; returns
        ``{"floor": the largest per-position mean TV, "max_tv": the largest TV, "max_logit": the largest logit
        difference, "positions": positions compared}``."""
        by_position: dict[int, list[float]] = {}
        max_logit = 0.0
        for answer in answers:
            batched, single = self._logits(prompt, answer, True), self._logits(prompt, answer, False)
            for t, row in enumerate(single):
                max_logit = max(max_logit, float(np.max(np.abs(batched[t] - row))))
                a, b = self.law(batched[t], prompt, answer[:t]), self.law(row, prompt, answer[:t])
                by_position.setdefault(t, []).append(0.5 * float(np.abs(a - b).sum()))
        means = [float(np.mean(v)) for v in by_position.values()]
        return {"floor": max(means, default=0.0), "max_tv": max((max(v) for v in by_position.values()), default=0.0),
                "max_logit": max_logit, "positions": sum(len(v) for v in by_position.values())}

    def close(self) -> None:
        while self._contexts:
            self._contexts.popitem()[1][0].close()
