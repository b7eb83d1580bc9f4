"""mlx-lm 0.32.2 on mlx 0.32.4's Linux CPU build (``mlx-cpu``) behind the Decoder Protocol (issue 39).

``MlxDecoder(model_dir, settings=..., speculation=None | "draft_model")`` starts one worker process (:mod:`.mlx_process`,
:mod:`.mlx_worker`) on its first call and answers ``decoder(prompts, max_new_tokens, seed)`` with one list of new token
ids per prompt, one row after another, row i seeded with ``mx.random.seed`` of the i-th of
:func:`specdec.adapters._common.request_seeds`.  ``speculation=None`` is the control (``mlx_lm.generate.generate_step``);
``"draft_model"`` is ``speculative_generate_step`` with ``num_draft_tokens`` = K and a draft model (by default the same
weights, loaded once: draft = target).  ``model_dir``: a folder mlx-lm loads (default:
:func:`specdec.adapters.mlx.mlx_model.mlx_model_dir`, SmolLM2's float32 copy with the ``rope_theta`` mlx-lm reads).

**How mlx-lm 0.32.2 verifies drafts** (``mlx_lm/generate.py``, ``speculative_generate_step``): the draft model samples
``num_draft`` tokens one at a time with the request's own sampler and processors (``_draft_generate``); the target runs
once over the last token and the drafts and *samples a token at every position* with the same sampler (``_step`` with
``n_predict = num_draft + 1``: one ``mx.random.categorical`` over the rows); the drafts are kept while they equal the
target's token at their position (``if tn != dtn: break``), and the target's token at the first mismatch (or after the
last draft) is emitted.  No draft probability is used: "draw from the target, keep the draft while equal", a coupling.
Every emitted token is the target's draw given the prefix that is really emitted (a kept draft equals the target's
draw; the draw at the first mismatch conditions on kept drafts only) with fresh randomness, so the rule keeps the
target's law whatever the draft - lossless for a sampler that reads only the logits of its position (temperature,
top-k, top-p, min-p), and greedy output is the same with and without a draft up to rounding (a verification pass of
K + 1 positions against one-token decoding).  Seeds do not give the same tokens with and without a draft (draws are
spent on the draft and on positions that are cut).

**Logits processors at drafted positions are not the engine's own law.**  ``speculative_generate_step`` keeps the
processors' history in ``prev_tokens``, started empty: the prompt is prefilled (``_prefill``) without being added, so
the history holds only the prompt's *last* token and the tokens after it.  ``generate_step`` (no draft) adds the prompt
(``tokens = mx.concat([tokens, processed])`` in its prefill loop).  With a repetition, presence or frequency penalty
(each reading the last ``context_size`` = 20 tokens) the first tokens of an answer are therefore sampled under other
penalties with a draft model than without one: the prompt's tokens except its last are not penalised.  Within a step the
history is otherwise right (at position i the target's draws before i, which equal the kept drafts; rewound by
``prev_tokens[: -max(num_draft - n, 1)]``).  Expected: a FAIL of any penalty whose window reaches into the prompt
(:mod:`peers.test_mlx`).  The logit bias reads no history: lossless.

Counters (:meth:`speculation_counts`) and :meth:`last_drafted`: mlx-lm yields ``from_draft`` per token; the worker
rebuilds each step (``num_draft = min(max_tokens - ntoks, num_draft_tokens)``, mlx-lm's own expression) and counts steps
with drafts, drafts verified and drafts kept; ``last_drafted()`` is True where a draft was verified (kept, or rejected
and replaced by the target's token), False at the token after a fully kept block.

EOS: ``ignore_eos=True`` (default) makes it an ordinary token (``generate_step`` itself does not stop; mlx-lm's
``stream_generate`` does); with False a row ends at the tokenizer's EOS ids (:attr:`eos_token_ids`, kept in the row).
``stop_token_ids`` of the settings end a row at the first one.  Batch: mlx-lm speculates one sequence at a time
(``speculative_generate_step`` takes one prompt); rows run one after another in the worker.  Threads: mlx's CPU backend
has no thread-count setting in 0.32.4 (its matrix products call the reference BLAS bundled in the ``mlx-cpu`` wheel,
about 0.12 s per position of SmolLM2-135M here); none is offered.  ``reuse_prefill`` (default True): each prompt's KV cache is computed once
per worker and copied into each row - with a draft model always, without one only when no logits processor reads the
prefilled tokens (:mod:`.mlx_worker`; the same
computation, asserted equal to a fresh prefill in :mod:`peers.test_mlx`).
Versions other than :data:`SUPPORTED_MLX_LM` / :data:`SUPPORTED_MLX` are refused (:class:`specdec.errors.PeerVersionError`),
by the installed metadata before the worker starts when the worker runs this interpreter, and by the worker's own.
"""

from __future__ import annotations

import os
import sys

from ..._validation import as_int, as_seed
from ...errors import PeerVersionError
from ...sampling_settings import SamplingSettings
from .._common import checked_prompt_rows, installed_version, request_seeds
from .mlx_process import MlxWorker, default_python
from .mlx_settings import CONTEXT_SIZE, request_settings

__all__ = ["SPECULATION", "SUPPORTED_MLX", "SUPPORTED_MLX_LM", "MlxDecoder", "check_versions"]

SUPPORTED_MLX_LM = ("0.32.2",)
SUPPORTED_MLX = ("0.32.4",)
SPECULATION = (None, "draft_model")
VOCAB = 49152  # SmolLM2's; the worker states the model's own (``ready.vocab``)


def check_versions(versions: dict) -> None:
    """A :class:`PeerVersionError` unless ``versions`` (distribution -> version or None) has the tested mlx-lm and mlx."""
    for name, supported in (("mlx-lm", SUPPORTED_MLX_LM), ("mlx", SUPPORTED_MLX)):
        found = versions.get(name)
        if found is None or found.split("+")[0] not in supported:
            raise PeerVersionError(f"specdec.adapters.mlx supports {name} {' or '.join(supported)}; installed: {found} "
                                   "(not tested on it; it does not guess another version's contract)")


def _installed() -> dict:
    return {name: (installed_version((name,)) or (None, None))[1] for name in ("mlx-lm", "mlx")}


class MlxDecoder:
    """mlx-lm's ``generate_step`` / ``speculative_generate_step`` as a :class:`specdec.protocols.Decoder` (module docstring)."""

    def __init__(self, model_dir: str | os.PathLike | None = None, *, settings: SamplingSettings | None = None,
                 speculation: str | None = None, num_draft_tokens: int = 4, draft_model_dir: str | os.PathLike | None = None,
                 context_size: int = CONTEXT_SIZE, ignore_eos: bool = True, reuse_prefill: bool = True, python: str | None = None,
                 name: str | None = None, check_version: bool = True) -> None:
        if speculation not in SPECULATION:
            raise ValueError(f"speculation must be one of {SPECULATION}, got {speculation!r}")
        self.settings_record = SamplingSettings() if settings is None else settings
        self.context_size = as_int("context_size", context_size, minimum=1)
        self._request = request_settings(self.settings_record, self.context_size)  # refuses by name before any process
        k = as_int("num_draft_tokens", num_draft_tokens, minimum=1)
        # 0 without a draft model: the per-token check then reads no drafted/undrafted strata from last_drafted()
        # (specdec.conformance.streams.tokens: a DraftMarker with num_draft_tokens 0 marks nothing)
        self.num_draft_tokens = k if speculation is not None else 0
        if not isinstance(ignore_eos, bool):
            raise TypeError(f"ignore_eos must be a bool, got {type(ignore_eos).__name__} {ignore_eos!r}")
        self.ignore_eos = ignore_eos
        if not isinstance(reuse_prefill, bool):
            raise TypeError(f"reuse_prefill must be a bool, got {type(reuse_prefill).__name__} {reuse_prefill!r}")
        self.reuse_prefill = reuse_prefill
        if model_dir is None:
            from .mlx_model import mlx_model_dir

            model_dir = mlx_model_dir()
        self.model_dir = os.fspath(model_dir)
        if not os.path.isfile(os.path.join(self.model_dir, "config.json")):
            raise FileNotFoundError(f"model_dir {self.model_dir!r} has no config.json (a folder mlx-lm loads)")
        self.draft_model_dir = self.model_dir if draft_model_dir is None else os.fspath(draft_model_dir)
        if speculation == "draft_model" and not os.path.isfile(os.path.join(self.draft_model_dir, "config.json")):
            raise FileNotFoundError(f"draft_model_dir {self.draft_model_dir!r} has no config.json (a folder mlx-lm loads)")
        self.speculation = speculation
        self.python = python or default_python()
        self.name = name or f"mlx-lm {speculation or 'no speculation'}"
        self.check_version = bool(check_version)
        self._worker: MlxWorker | None = None
        self._counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
        self._drafted: list[list[bool]] = []
        self._kept: list[list[bool]] = []
        self.eos_token_ids: tuple[int, ...] = ()
        self.vocab = VOCAB

    @property
    def settings(self) -> str:
        spec = "no speculation" if self.speculation is None else f"draft model, K={self.num_draft_tokens}" + (
            " (draft = target)" if self.draft_model_dir == self.model_dir else f" ({self.draft_model_dir})")
        return f"mlx-lm 0.32.2 on mlx 0.32.4 CPU ({self.settings_record.label}; {spec})"

    def start(self) -> MlxWorker:
        """The worker, started on first use (after the version check); a decoder of :meth:`with_settings` uses its owner's."""
        owner = getattr(self, "_owner", None)
        if owner is not None:
            self._worker = owner.start()
            return self._worker
        if self._worker is None:
            if self.check_version and os.path.realpath(self.python) == os.path.realpath(sys.executable):
                check_versions(_installed())
            config = {"model": self.model_dir, "num_draft_tokens": self.num_draft_tokens,
                      "draft_model": self.draft_model_dir if self.speculation == "draft_model" else None}
            self._worker = MlxWorker(config, python=self.python)
            ready = self._worker.ready
            if self.check_version:
                try:
                    check_versions(ready.get("versions", {}))
                except PeerVersionError:
                    self.close()
                    raise
            self.eos_token_ids = tuple(int(t) for t in ready.get("eos", ()))
            self.vocab = int(ready.get("vocab") or VOCAB)
        return self._worker

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=0)
        seed = as_seed(seed)
        worker = self.start()
        rows = checked_prompt_rows(prompts, self.vocab, "mlx-lm")
        self._drafted, self._kept = [], []
        if not rows:
            return []
        answer = worker.request({"prompts": rows, "seeds": request_seeds(seed, len(rows)), "max_new_tokens": max_new_tokens,
                                 "stop": list(self.settings_record.stop_token_ids), "stop_at_eos": not self.ignore_eos,
                                 "reuse_prefill": bool(self.reuse_prefill), "num_draft_tokens": self.num_draft_tokens,
                                 **self._request})
        out = [[int(t) for t in row] for row in answer["tokens"]]
        if len(out) != len(rows):
            raise RuntimeError(f"the mlx-lm worker answered {len(out)} rows for {len(rows)} prompts")
        self._drafted = [[bool(x) for x in row] for row in answer["drafted"]]
        self._kept = [[bool(x) for x in row] for row in answer["kept"]]
        for key in self._counts:
            self._counts[key] += int(answer["counts"][key])
        return out

    def with_settings(self, settings: SamplingSettings, name: str | None = None,
                      num_draft_tokens: int | None = None) -> "MlxDecoder":
        """A decoder under ``settings`` (and ``num_draft_tokens``, with a draft model) that shares this one's worker (the
        same models; settings and K travel with each request, and every row reseeds mlx's generator, so the two
        decoders' rows do not depend on each other).  It has its own counters; closing it leaves the worker to this
        decoder."""
        other = MlxDecoder.__new__(MlxDecoder)
        other.__dict__.update(self.__dict__)
        if num_draft_tokens is not None and self.speculation is not None:
            other.num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=1)
        other.settings_record = settings
        other._request = request_settings(settings, self.context_size)
        other.name = name or f"{self.name} ({settings.label})"
        other._counts = {key: 0 for key in self._counts}
        other._drafted, other._kept = [], []
        other._worker = self.start()
        other.eos_token_ids, other.vocab = self.eos_token_ids, self.vocab
        other._owner = self
        return other

    def speculation_counts(self) -> dict | None:
        """Cumulative counts since the decoder was built (module docstring); None for the control."""
        return None if self.speculation is None else dict(self._counts)

    def last_drafted(self) -> list[list[bool]]:
        """Per row of the last call, one bool per token: True where a draft was verified (module docstring)."""
        return [list(row) for row in self._drafted]

    def last_kept(self) -> list[list[bool]]:
        """Per row of the last call, one bool per token: mlx-lm's ``from_draft`` (a kept draft)."""
        return [list(row) for row in self._kept]

    def close(self) -> None:
        """Stop the worker (by its pid if it does not exit); a later call starts a new one."""
        if self._worker is not None:
            if getattr(self, "_owner", None) is None:
                self._worker.close()
            self._worker = None

    def __enter__(self) -> "MlxDecoder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
