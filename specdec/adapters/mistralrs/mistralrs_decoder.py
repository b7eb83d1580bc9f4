"""mistral.rs (the ``mistralrs`` Python package, 0.6.0, CPU wheel) behind the Decoder Protocol, with and without a draft model.

``MistralRsDecoder(gguf_path, settings=..., gamma=K)`` builds a ``mistralrs.Runner`` on a GGUF file (the draft: the
same file, or ``draft_gguf_path``) on its first call and answers ``decoder(prompts, max_new_tokens, seed)`` with one
list of new token ids per prompt, one request per row, in order.  ``gamma=None`` is the control (no draft).

Ids in and out (:mod:`.token_ids`): 0.6.0's Python requests speak text, so prompts are sent as their text (refused
unless the engine encodes it back to the same ids) through a verbatim chat template, and the answer's ids are read
from its per-token log-probability records (refused, never guessed, where a token string is ambiguous).

**Seeds are ignored.**  No request of 0.6.0 carries a seed, and ``Runner(seed=...)`` fails on CPU ("cannot seed the
CPU rng": candle's CPU device has no seedable RNG).  The engine draws every request from one ``Isaac64Rng`` made at
start with a constant (``mistralrs-core/src/engine/mod.rs``: ``Isaac64Rng::seed_from_u64(SEED)``, ``SEED = 0``): the
rows of a decoder are successive draws of that one stream (independent draws, as a check needs), a fresh decoder
replays the same stream, and a call is not reproducible from its ``seed`` (:attr:`seeds_honoured` is False).

**How 0.6.0 verifies drafts** (``mistralrs-core/src/pipeline/speculative.rs``, ``SpeculativePipeline::step``, and
``mistralrs-core/src/pipeline/sampling.rs``, ``sample_target_sequence_speculative``, tag v0.6.0): the draft proposes
``gamma`` tokens, the target evaluates them in one pass, and at each position in turn the target's token is taken
and kept while it equals the draft's; at the first difference the target's token replaces the draft and the step
ends (no bonus token after ``gamma`` kept drafts).  The struct's doc comment describes Leviathan et al.'s rejection
rule, but neither the draft nor the target *samples*: both call ``sample_sequence(..., sample_speculative = true)``,
and ``Sampler::sample`` then takes ``sample_speculative_top_kp_min_p`` (``mistralrs-core/src/sampler.rs``), which
truncates the tempered law with top-k / top-p / min-p and returns its **argmax**.  So with a draft model every
emitted token is the target's argmax, whatever the temperature: the law at T > 0 is greedy decoding, a point mass,
not the target's law (not lossless; at T = 0 it is the greedy law, and equal to the engine without a draft).  The
penalties of the target's verification also read the sequence *before* the step (``seq.get_toks()``; the drafts are
only ``prefill`` tokens), not the drafts accepted before each position.

EOS: the engine stops a row at its EOS (``<|im_end|>`` for SmolLM2, :attr:`eos_token_ids`; 0.6.0 cannot ignore it),
and the row ends with it: pass it to the check (``eos_token_id``).  0.6.0 emits ``max_tokens + 1`` tokens; the
adapter keeps the first ``max_new_tokens``.

Engine parameters: ``max_seqs`` (mistral.rs's batch: sequences running at once; the adapter sends one request at a
time, and the speculative pipeline verifies one sequence per step; ``max_seqs=1`` with a draft is refused: 0.6.0's
speculative engine fails its start-up dummy run there and dies), ``threads`` (the size of rayon's
global pool, ``RAYON_NUM_THREADS``, fixed for the process by the first Runner: a different value already set is
refused).  No speculation counters: 0.6.0 reports none to Python.  Seen on 0.6.0 (CPU): a Runner built in a process
after another Runner was dropped fails its start-up dummy run ("Engine is dead"; the call then raises "Channel was
erroneously closed!"): keep decoders alive for the process (:meth:`with_settings` shares one Runner).
"""

from __future__ import annotations

import copy
import os
import tempfile

from ..._validation import as_int, as_seed
from ...sampling_settings import SamplingSettings
from .._common import installed_version, require_version
from .settings_map import request_args
from .token_ids import VERBATIM_TEMPLATE, IdTable, gguf_token_texts, prompt_text, top_logprobs_asked

SUPPORTED_MISTRALRS = ("0.6.0",)
DISTRIBUTIONS = ("mistralrs",)


def _eos_ids(runner) -> tuple[int, ...]:
    """SmolLM2's ``<|im_end|>`` as the engine encodes it (the EOS mistral.rs stops at, its log: ``eos_toks``)."""
    ids = list(runner.tokenize_text("<|im_end|>", False, None))
    return tuple(ids) if len(ids) == 1 else ()


def _build_runner(runner_class, which, **args):
    """A Runner whose chat template writes the prompt verbatim (``jinja_explicit`` takes a file: a temporary one, read
    while the Runner loads); no prefix cache (each row starts from its prompt alone)."""
    with tempfile.TemporaryDirectory() as folder:
        template = os.path.join(folder, "verbatim.jinja")
        with open(template, "w", encoding="utf-8") as out:
            out.write(VERBATIM_TEMPLATE)
        return runner_class(which=which, token_source="none", prefix_cache_n=0, jinja_explicit=template, **args)



def call_rows(prompts, max_new_tokens, seed) -> tuple[list[list[int]], int]:
    """A Decoder call's (prompt rows, max_new_tokens), validated; ``seed`` is checked, then ignored (0.6.0 takes no
    seed on CPU: module docstring).  Shared by :class:`MistralRsDecoder` and the process decoder."""
    max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=0)
    as_seed(seed)
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__iter__"):
        raise TypeError(f"prompts must be a list of token-id lists, got {type(prompts).__name__}")
    rows = [[as_int(f"prompts[{i}][{j}]", t, minimum=0) for j, t in enumerate(p)] for i, p in enumerate(prompts)]
    if any(not row for row in rows):
        raise ValueError("every prompt needs at least one token")
    return rows, max_new_tokens

class MistralRsDecoder:
    """A ``mistralrs.Runner`` on a GGUF file as a :class:`specdec.protocols.Decoder` (module docstring).

    ``gguf_path``: the target's GGUF (a file).  ``settings``: a :class:`specdec.SamplingSettings`.  ``gamma``: the
    draft length (None: no draft, the control).  ``draft_gguf_path``: the draft's GGUF (default: the target's file,
    draft equal to target).  ``max_seqs``, ``threads``: the engine's batch and rayon threads.
    """

    seeds_honoured = False  # no request of mistral.rs 0.6.0 takes a seed (module docstring)

    def __init__(self, gguf_path: str | os.PathLike, *, settings: SamplingSettings | None = None, gamma: int | None = None,
                 draft_gguf_path: str | os.PathLike | None = None, max_seqs: int = 16, threads: int | None = None,
                 name: str | None = None) -> None:
        for arg, value in (("gguf_path", gguf_path), ("draft_gguf_path", draft_gguf_path)):
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"{arg} must be a path to a GGUF file, got {type(value).__name__} {value!r}")
        settings = SamplingSettings() if settings is None else settings
        self.request_args = request_args(settings)  # refuses what 0.6.0 cannot take, before anything is built
        self.settings_record = settings
        self.gamma = None if gamma is None else as_int("gamma", gamma, minimum=1)
        self.gguf_path = os.fspath(gguf_path)
        self.draft_gguf_path = self.gguf_path if draft_gguf_path is None else os.fspath(draft_gguf_path)
        if self.gamma is None and draft_gguf_path is not None:
            raise ValueError("draft_gguf_path needs gamma (the draft length); gamma=None is the engine without a draft")
        self.max_seqs = as_int("max_seqs", max_seqs, minimum=1)
        if self.gamma is not None and self.max_seqs < 2:
            # measured on 0.6.0 (CPU): the speculative Runner's dummy run fails at max_seqs=1 and the engine dies
            raise ValueError(f"max_seqs={self.max_seqs} with a draft: mistral.rs 0.6.0's speculative engine dies at max_seqs=1 "
                             "(its start-up dummy run fails); use max_seqs >= 2")
        self.threads = None if threads is None else as_int("threads", threads, minimum=1)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__} {name!r}")
        self.name = name or self.settings
        self._runner = None
        self._ids: IdTable | None = None
        self._texts: dict[tuple[int, ...], str] = {}
        self._eos: tuple[int, ...] = ()

    @property
    def settings(self) -> str:
        """One line: the engine, its drafting and sampling settings."""
        found = installed_version(DISTRIBUTIONS)
        spec = "no draft" if self.gamma is None else f"draft model, gamma={self.gamma}"
        return f"mistral.rs {found[1] if found else '?'} ({spec}; {self.settings_record.label}; seed ignored)"

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """The ids the engine stops a row at (built on first use: the engine's encoding of ``<|im_end|>``)."""
        self.runner  # noqa: B018
        return self._eos

    @property
    def num_draft_tokens(self) -> int:
        return self.gamma or 0

    @property
    def runner(self):
        """The ``mistralrs.Runner``, built on first use (after the version check)."""
        if self._runner is None:
            require_version("specdec.adapters.mistralrs", DISTRIBUTIONS, SUPPORTED_MISTRALRS)
            if self.threads is not None:
                current = os.environ.get("RAYON_NUM_THREADS")
                if current not in (None, str(self.threads)):
                    raise ValueError(f"threads={self.threads}, but RAYON_NUM_THREADS={current} is already set (rayon's pool is "
                                     "one per process)")
                os.environ["RAYON_NUM_THREADS"] = str(self.threads)
            from mistralrs import Runner, Which

            def which(path):
                return Which.GGUF(quantized_model_id=os.path.dirname(os.path.abspath(path)) or ".",
                                  quantized_filename=os.path.basename(path))

            draft = {} if self.gamma is None else {"which_draft": which(self.draft_gguf_path), "speculative_gamma": self.gamma}
            runner = _build_runner(Runner, which(self.gguf_path), max_seqs=self.max_seqs, **draft)
            self._ids = IdTable(gguf_token_texts(self.gguf_path))
            self._eos = _eos_ids(runner)
            self._runner = runner
        return self._runner

    def with_settings(self, settings: SamplingSettings, name: str | None = None) -> "MistralRsDecoder":
        """The same engine (the same Runner, built once, and its one RNG stream) asked with other sampling settings:
        0.6.0 takes every sampling field per request."""
        args = request_args(settings)  # refused before anything is built
        self.runner  # noqa: B018 - built once, shared
        other = copy.copy(self)
        other.request_args, other.settings_record = args, settings
        other.name = name or other.settings
        return other

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        rows, max_new_tokens = call_rows(prompts, max_new_tokens, seed)
        if not max_new_tokens:
            return [[] for _ in rows]
        runner = self.runner
        return [self._row(runner, row, max_new_tokens) for row in rows]

    def _prompt_text(self, runner, prompt: list[int]) -> str:
        """The text sent for ``prompt``: one the engine encodes back to exactly these ids, or a ValueError
        (:func:`.token_ids.prompt_text`)."""
        return prompt_text(runner, prompt)

    def _row(self, runner, prompt: list[int], max_new_tokens: int) -> list[int]:
        from mistralrs import ChatCompletionRequest

        key = tuple(prompt)
        if key not in self._texts:
            self._texts[key] = self._prompt_text(runner, prompt)
        request = ChatCompletionRequest(messages=self._texts[key], model="specdec", max_tokens=max_new_tokens,
                                        logprobs=True, top_logprobs=top_logprobs_asked(self._ids.size),
                                        **self.request_args)
        try:
            choice = runner.send_chat_completion_request(request).choices[0]
        except BaseException as error:  # pyo3's PanicException (a Rust panic) derives from BaseException, not Exception
            if isinstance(error, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                raise
            raise RuntimeError(f"mistral.rs panicked answering a request ({type(error).__name__}: {error}; the engine's message "
                               "is on stderr)") from error
        records = (choice.logprobs.content if choice.logprobs is not None else None) or []
        return [self._id(record) for record in records[:max_new_tokens]]

    def _id(self, record) -> int:
        """The id of one emitted token's record (its n-best list read only for a string several ids decode to)."""
        if record.token in self._ids.ambiguous:
            return self._ids(record.token, record.logprob, [(t.token, t.logprob) for t in record.top_logprobs or ()])
        return self._ids(record.token)

    def close(self) -> None:
        """Drop the Runner (its engine thread ends with it)."""
        self._runner = None
