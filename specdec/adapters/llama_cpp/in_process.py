"""llama.cpp through llama-cpp-python (``llama_cpp.Llama``), in this process, behind the Decoder Protocol.

Tested on llama-cpp-python 0.3.36 (its vendored llama.cpp, CPU build from source), on SmolLM2-135M-Instruct
as a Q4_1 GGUF file.  ``LlamaCppDecoder(model_path, sampling=..., num_pred_tokens=...)`` builds a
``llama_cpp.Llama`` on its first call and answers ``decoder(prompts, max_new_tokens, seed)`` with one list of
new token ids per prompt:

* prompts are token ids, fed to ``Llama.generate`` as they are: no tokenizer and no BOS stand between the
  check and the engine (``create_completion`` is not used: it stops at EOS and detokenizes);
* every row gets its own seed, derived from the call's seed (:func:`request_seeds`, reduced to llama.cpp's
  32-bit seeds, never ``LLAMA_DEFAULT_SEED``, which means "seed from the clock"), so rows are independent
  draws and a call is reproducible;
* every row starts from the same state: the KV cache holds the prompt's prefix (all but its last token,
  evaluated once per prompt after a reset) and nothing else; the row's first ``eval`` removes every cell
  after it, so nothing of one row (its tokens, its drafts) reaches the next, and no row depends on the
  rows before it;
* ``num_pred_tokens=K`` drafts with ``llama_cpp.llama_speculative.LlamaPromptLookupDecoding`` (prompt lookup,
  its default ``max_ngram_size=2``); None is the control, no draft;
* :meth:`speculation_counts` counts the drafts, drafted tokens and accepted tokens of the real generation, and
  :meth:`last_drafted` says at which emitted tokens of the last call a draft was verified
  (:class:`specdec.protocols.DraftMarker`: the per-token check's drafted / not drafted strata).

How llama-cpp-python 0.3.36 speculates (``Llama.generate``): after each sampled token it asks the draft for
up to K tokens, evaluates the sampled token and the drafts in one batch (``logits_all``), then samples the
target at each drafted position in turn, with the one sampler chain and RNG of the request, and keeps going
while the sampled token equals the drafted one; at the first difference the sampled token replaces the
draft and the KV cells after it are removed.  Every emitted token is a draw from the target's sampler in
the true context, one draw per token as without a draft: this is docs/reference.md's *sample-match* rule for
point-mass drafts (E5), lossless by construction, and for a deterministic draft x its acceptance p(x) is the
optimum.  With equal logits the same seed gives the same tokens with and without the draft.

Sampling: ``sampling`` (a :class:`specdec.SamplingConfig`) maps to llama.cpp's temperature, top-k, top-p and
min-p, ``settings`` (a :class:`specdec.SamplingSettings`) adds penalties, processors and stop tokens
(:mod:`.sampling_map`); every sampler not asked for is set to its neutral value explicitly (``repeat_penalty=1``, frequency and
presence penalties 0, ``typical_p=1``, mirostat off; llama-cpp-python's own defaults include ``min_p=0.05``,
``top_k=40``, ``top_p=0.95``).  llama.cpp's chain is top-k -> typical -> top-p -> min-p -> temperature ->
draw, so **top-p and min-p select the support from the untempered law** (transformers, and specdec's
warpers, apply the temperature first, E6), top-k keeps exactly k tokens (no ties), and the forward pass is
ggml's on the quantized weights: the law this engine follows is not ``ModelLaw(model, sampling)``.  Check it
against itself without the draft (``specdec.check_ab``), not against transformers' law.  Temperature 0 is
llama.cpp's greedy sampler alone (its argmax over the ids in order: the lowest id wins ties, as in E4).

Two things of llama-cpp-python 0.3.36 the adapter works around: ``Llama(draft_model=...)`` forces
``logits_all`` but sizes its logits buffer from the ``logits_all`` argument (``n_batch`` rows when False), so a
sequence longer than ``n_batch`` raises in ``eval``: the adapter passes ``logits_all=True``; and batches run on
``n_threads_batch``, by default every core: on a busy 2-core machine OpenMP's spinning made an 18-token prompt
10-30x slower than one thread, so ``n_threads_batch`` defaults to ``n_threads`` here (``llama_args`` overrides).
Drafts are verified only within one ``n_batch``: ``n_batch < K + 1`` aborts the process in llama.cpp
(``GGML_ASSERT(logits != nullptr)``), and is refused here.

EOS (E8): ``ignore_eos=True`` (default) makes EOS an ordinary token (``generate`` never stops on it);
with False a row stops after the model's EOS (``Llama.token_eos()``): pass that id to the check.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

from ..._validation import as_int, as_seed
from ...sampling_settings import SamplingSettings
from ...warpers import SamplingConfig
from .._common import checked_prompt_rows, installed_version, request_seeds, require_version
from .draft_counts import CountingDraft as _CountingDraft
from .draft_counts import count_acceptance as _count_acceptance
from .sampling_map import checked_settings, generate_args, raise_processor_failure

SUPPORTED_LLAMA_CPP = ("0.3.36",)
DISTRIBUTIONS = ("llama_cpp_python", "llama-cpp-python")
_LLAMA_DEFAULT_SEED = 0xFFFFFFFF  # llama.cpp: "seed from the clock"
_OWN_ARGS = frozenset({"model_path", "n_ctx", "draft_model", "logits_all", "verbose", "seed"})


def row_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent 32-bit seeds for llama.cpp's sampler, derived from ``seed``, never 0xFFFFFFFF."""
    return [s % _LLAMA_DEFAULT_SEED for s in request_seeds(seed, count)]


def _checked_args(model_path, num_pred_tokens, ignore_eos, name, setup, llama_args) -> tuple[list, dict]:
    """:class:`LlamaCppDecoder`'s arguments checked: (the setup steps, the extra ``Llama`` arguments)."""
    if not isinstance(model_path, (str, os.PathLike)):
        raise TypeError(f"model_path must be a path to a GGUF file, got {type(model_path).__name__} {model_path!r}")
    num_pred_tokens = None if num_pred_tokens is None else as_int("num_pred_tokens", num_pred_tokens, minimum=1)
    if not isinstance(ignore_eos, bool):
        raise TypeError(f"ignore_eos must be a bool, got {type(ignore_eos).__name__} {ignore_eos!r}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {type(name).__name__} {name!r}")
    steps = [setup] if callable(setup) else list(setup) if isinstance(setup, (list, tuple)) else None
    if steps is None or not all(callable(step) for step in steps):
        raise TypeError(f"setup must be a callable or a list/tuple of callables, got {setup!r}")
    if llama_args is not None and not isinstance(llama_args, dict):
        raise TypeError(f"llama_args must be a dict of llama_cpp.Llama keyword arguments, got {type(llama_args).__name__}")
    extra = dict(llama_args or {})
    if _OWN_ARGS & set(extra):
        raise ValueError(f"llama_args may not set {sorted(_OWN_ARGS & set(extra))}: LlamaCppDecoder sets them")
    n_batch = as_int("llama_args n_batch", extra.get("n_batch", 512), minimum=1)
    if num_pred_tokens is not None and n_batch < num_pred_tokens + 1:
        # generate evaluates a token and its drafts in one eval, split into n_batch pieces; the logits of all
        # but the last piece are gone when the drafts are verified (llama.cpp aborts on the missing row)
        raise ValueError(f"llama_args n_batch={n_batch} is below num_pred_tokens + 1 = {num_pred_tokens + 1}: "
                         "llama-cpp-python verifies drafts only within one batch")
    return steps, extra


class LlamaCppDecoder:
    """A ``llama_cpp.Llama`` as a :class:`specdec.protocols.Decoder` (see the module docstring).

    ``model_path``: a GGUF file.  ``num_pred_tokens``: K of prompt-lookup drafting (None: no draft, the
    control).  ``n_ctx``: the context size (prompt + new tokens + K must fit).  ``setup``: callables run on
    the built ``llama_cpp.Llama`` before the first row (e.g. a test's patch).  ``llama_args``: more
    ``Llama`` keyword arguments (``n_threads``, ``n_batch``, ...); the ones this class sets are refused.
    """

    def __init__(self, model_path: str | os.PathLike, *, sampling: SamplingConfig | None = None, settings: SamplingSettings | None = None,
                 num_pred_tokens: int | None = None, n_ctx: int = 512, ignore_eos: bool = True, name: str | None = None,
                 setup: Callable | Sequence[Callable] = (), llama_args: dict | None = None) -> None:
        self.sampling_settings = checked_settings(sampling, settings)
        steps, extra = _checked_args(model_path, num_pred_tokens, ignore_eos, name, setup, llama_args)
        self.num_pred_tokens = None if num_pred_tokens is None else int(num_pred_tokens)
        self.n_ctx = as_int("n_ctx", n_ctx, minimum=2)
        self.model_path = os.fspath(model_path)
        self.sampling = self.sampling_settings.sampling
        self.ignore_eos = ignore_eos
        self.setup = steps
        self.llama_args = extra
        self.name = name or self.settings
        self._llm = None
        self._prefix: tuple | None = None  # the prompt prefix whose KV cells the context holds
        self._counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
        self._row_marks: list[bool] = []  # per draw of the running row: was a draft verified at its position
        self._last_drafted: list[list[bool]] = []

    @property
    def settings(self) -> str:
        """One line: the engine's drafting and sampling settings."""
        spec = "no draft" if self.num_pred_tokens is None else f"prompt lookup, num_pred_tokens={self.num_pred_tokens}"
        found = installed_version(DISTRIBUTIONS)
        return f"llama-cpp-python {found[1] if found else '?'} ({spec}; {self.sampling_settings.label})"

    @property
    def num_draft_tokens(self) -> int:
        """K of the engine's drafting (0 without).  llama.cpp never shrinks its drafts near the end of a
        request, so a check can ask for exactly ``length`` tokens."""
        return self.num_pred_tokens or 0

    @property
    def llm(self):
        """The ``llama_cpp.Llama``, built on first use (after the version check)."""
        if self._llm is None:
            require_version("specdec.adapters.llama_cpp.in_process", DISTRIBUTIONS, SUPPORTED_LLAMA_CPP)
            from llama_cpp import Llama
            from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

            draft = None
            if self.num_pred_tokens is not None:
                draft = _CountingDraft(LlamaPromptLookupDecoding(num_pred_tokens=self.num_pred_tokens), self._counts, self.n_ctx)
            args = dict(self.llama_args)
            # llama-cpp-python runs batches (a prompt, a token and its drafts) on n_threads_batch, by default every
            # core: on a busy machine OpenMP's spinning threads made a 5-token batch 10-70x slower than one thread
            args.setdefault("n_threads", max(1, (os.cpu_count() or 2) // 2))
            args.setdefault("n_threads_batch", args["n_threads"])
            llm = Llama(model_path=self.model_path, n_ctx=self.n_ctx, draft_model=draft, logits_all=draft is not None,
                        verbose=False, **args)
            for step in self.setup:
                step(llm)
            if draft is not None:
                _count_acceptance(llm, self._counts, self._row_marks)
            self._llm = llm
            self._prefix = None
        return self._llm

    def sampler_args(self, prompt_length: int = 1, vocab_size: int | None = None) -> dict:
        """``Llama.generate``'s sampling keywords for a row of ``prompt_length`` prompt tokens (:mod:`.sampling_map`):
        the record's samplers and processors, every sampler it does not ask for neutral; ids beyond ``vocab_size`` refused."""
        return generate_args(self.sampling_settings, prompt_length, vocab_size)

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=0)
        seed = as_seed(seed)
        llm = self.llm
        rows = checked_prompt_rows(prompts, llm.n_vocab(), "llama.cpp", self.n_ctx - max_new_tokens - (self.num_pred_tokens or 0),
                                   f"with max_new_tokens={max_new_tokens} and num_pred_tokens={self.num_pred_tokens} it does not fit n_ctx={self.n_ctx}")
        seeds = row_seeds(seed, len(rows))
        outputs: list[list[int]] = [[] for _ in rows]
        marks: list[list[bool]] = [[] for _ in rows]
        if max_new_tokens:
            # rows of one prompt together: one evaluation of its prefix serves them all (a row's tokens do not
            # depend on the order rows are run in: each has its own seed and starts from the same state)
            for i in sorted(range(len(rows)), key=lambda i: rows[i]):
                outputs[i] = self._row(llm, rows[i], seeds[i], max_new_tokens)
                marks[i] = list(self._row_marks[:len(outputs[i])]) if self.num_pred_tokens is not None else [False] * len(outputs[i])
        self._last_drafted = marks
        return outputs

    def last_drafted(self) -> list[list[bool]]:
        """Per row of the last call, per emitted token: True where a drafted token was verified at its position (the
        draw kept the draft or replaced it), False for a bonus draw after every draft was kept and for draws without a
        draft (the control's are all False).  ``generate`` draws each emitted token once, in order, at position
        ``idx`` of its batch: a draft was verified there iff the batch holds a drafted token at ``idx + 1``
        (:func:`.draft_counts.count_acceptance`)."""
        return [list(row) for row in self._last_drafted]

    def _row(self, llm, prompt: list[int], seed: int, max_new_tokens: int) -> list[int]:
        """One row: the prompt's prefix in the KV cache, nothing else, then ``generate`` from its last token.

        The cache holds ``prompt[:-1]``, evaluated in one batch after a reset (always the same computation,
        so every row starts from the same state whatever ran before); ``n_tokens`` is set back to its length,
        and the first ``eval`` of the row removes every KV cell from there on (``kv_cache_seq_rm``): nothing of
        the previous row (its tokens, its drafts) reaches this one.  Recurrent and hybrid models cannot drop
        cells: they are reset and evaluated whole for every row."""
        prefix = tuple(prompt[:-1])
        if self._prefix != prefix or getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False):
            self._prefix = None
            llm.reset()
            if prefix:
                llm.eval(list(prefix))
            self._prefix = prefix
        llm.n_tokens = len(prefix)
        llm.set_seed(seed)  # generate builds this row's sampler chain (and its RNG) from it
        stops = set(self.sampling_settings.stop_token_ids) | (set() if self.ignore_eos else {llm.token_eos()})
        new: list[int] = []
        self._row_marks.clear()
        args = self.sampler_args(len(prompt), llm.n_vocab())
        tokens = llm.generate([prompt[-1]], reset=False, **args)
        try:
            for token in tokens:
                raise_processor_failure(args)  # a stage's exception, dropped by llama-cpp-python's ctypes callback
                new.append(int(token))
                if len(new) == max_new_tokens or token in stops:
                    break
        finally:
            tokens.close()
        return new

    def speculation_counts(self) -> dict | None:
        """Cumulative counts since the decoder was built: ``drafts`` (verification steps with at least one drafted
        token), ``draft_tokens`` (drafted tokens evaluated by the target in those steps) and ``accepted_tokens``
        (drafted tokens that the target's draw at their position kept); None for the control.

        A row that stops before the end of a step (``max_new_tokens`` reached) still counts the step's drafted
        tokens, like vLLM's counters: at ``max_new_tokens=2`` and K = 4 a row verifies one draft, counts four
        drafted tokens and at most one accepted."""
        return None if self.num_pred_tokens is None else dict(self._counts)

    def close(self) -> None:
        """Free the llama.cpp model and context now (they are freed at exit otherwise)."""
        if self._llm is not None:
            self._llm.close()
            self._llm = None
            self._prefix = None

    def __repr__(self) -> str:
        return f"LlamaCppDecoder({self.model_path!r}, {self.settings})"


__all__ = ["DISTRIBUTIONS", "SUPPORTED_LLAMA_CPP", "LlamaCppDecoder", "row_seeds"]
