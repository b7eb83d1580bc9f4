"""ONNX Runtime GenAI (``onnxruntime-genai`` 0.18.0 on ``onnxruntime`` 1.32.0, CPU) behind the Decoder Protocol.

``OrtGenAIDecoder(model_dir, settings=..., speculation=...)`` loads an ONNX export (``scripts/export_ortgenai.py``: the
builder's ``genai_config.json`` folder) on first call and answers ``decoder(prompts, max_new_tokens, seed)`` with one
list of new token ids per prompt.  One ``og.Generator`` per row, batch size 1 (the only size speculation takes), rows one
after another; token ids in (``append_tokens``), the sequence's new ids out (``get_sequence``), no tokenizer between.
Every row has its own ``random_seed``, derived from the call's seed (:func:`row_seeds`).  A row ends after the model's
EOS (``eos_token_id`` of ``genai_config.json``; 2 for SmolLM2): pass it to the check.  0.18.0 stops at an EOS without
appending it to the sequence (``get_sequence`` ends before it; ``get_next_tokens`` holds it): the adapter appends it, so a
short row ends with its EOS as the Decoder Protocol says (found by ``check_ab``'s contract check, a row of 2 of 6 tokens).  ``threads``: ONNX Runtime's
intra-op threads of every session (target and draft).

**How 0.18.0 verifies drafts** (read in microsoft/onnxruntime-genai at commit a0c04eb13, 2026-08-22, 0.16.0-dev;
``SpeculativeDecodingStrategy::RunRound``, ``src/speculative_decoding_strategy.cpp``, with ``src/speculative_sampling.h``):
the target scores the K drafts in one pass and each row goes through the same penalties and truncation as plain
decoding (``ComputeTargetTokenSelection``: :mod:`.engine_law`).  Then

* greedy: a draft is kept while it equals the target's argmax; the first other position emits the argmax (and after K
  kept drafts the bonus row's argmax): the same tokens as plain greedy decoding, whatever the draft;
* sampling, draft model (``ProposalMode::kDraftSampling``; ``BaseSpeculativeStrategy::Propose``,
  ``src/base_speculative_strategy.cpp``, draws draft i from the draft's own truncated law q_i): draft i is kept when
  ``u < min(1, p_i(x) / q_i(x))`` (``ComputeAcceptProb``), else the row emits a draw from ``max(p_i - q_i, 0)``
  normalized (``SampleCorrectionToken``; p_i itself when that is empty), and after K kept drafts a draw from the bonus
  row: docs/reference.md's rejection rule F1, lossless (the law of every token is p) up to float32 rounding;
* sampling, n-gram (``ProposalMode::kDeterministic``, ``VerifyDeterministicProposal``): at each drafted position the row
  draws a token from p_i with the request's RNG and keeps going while it equals the draft: the sample-match rule for
  point-mass drafts (E5), lossless, and since it consumes the RNG as plain decoding does (one draw per token, the
  generator's ``mt19937`` restored to the state after each emitted token), a seed gives the plain path's tokens
  whenever the verification pass's logits equal the one-token pass's.

So both methods should emit the engine's own law without speculation: the per-token check tests them against
:class:`.genai_oracle.OrtGenAIOracle` (the engine's logits, one token at a time), the A/B check against the engine without
speculation.  Speculation counts (``Generator.get_speculative_stats``): ``drafts`` are verification rounds,
``draft_tokens`` the drafted tokens the target scored in them (``draft_tokens_proposed``), ``accepted_tokens`` those kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..._validation import as_int, as_seed
from ...sampling_settings import SamplingSettings
from ...warpers import SamplingConfig
from .._common import checked_prompt_rows, installed_version, request_seeds, require_version
from .search_options import checked_settings, refuse_unmapped, search_options
from .speculation import Speculation

SUPPORTED_ORTGENAI = ("0.18.0",)
DISTRIBUTIONS = ("onnxruntime-genai", "onnxruntime_genai")
SUPPORTED_ONNXRUNTIME = ("1.32.0",)
_SEED_MAX = 2**31 - 1  # random_seed is a C++ int; -1 means "seed from std::random_device"


def row_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent seeds in [0, 2**31 - 2] for ``random_seed``, derived from ``seed``."""
    return [s % _SEED_MAX for s in request_seeds(seed, count)]


def read_config(model_dir) -> dict:
    """The folder's ``genai_config.json``; a ValueError naming the folder when it has none."""
    path = Path(model_dir) / "genai_config.json"
    if not path.is_file():
        raise ValueError(f"model_dir {os.fspath(model_dir)!r} has no genai_config.json (an onnxruntime-genai export)")
    return json.loads(path.read_text())


def eos_ids(config: dict) -> tuple[int, ...]:
    eos = config["model"].get("eos_token_id", ())
    return tuple(int(t) for t in (eos if isinstance(eos, list) else [eos]))


def load_model(model_dir, threads: int):
    """An ``og.Model`` of ``model_dir`` with ``threads`` intra-op threads in every session (after the version checks)."""
    require_version("specdec.adapters.ortgenai", DISTRIBUTIONS, SUPPORTED_ORTGENAI)
    require_version("specdec.adapters.ortgenai", ("onnxruntime",), SUPPORTED_ONNXRUNTIME)
    import onnxruntime_genai as og

    config = og.Config(os.fspath(model_dir))
    session = {"session_options": {"intra_op_num_threads": int(threads), "inter_op_num_threads": 1}}
    blocks = {"decoder": session, **({"draft": session} if "draft" in read_config(model_dir)["model"] else {})}
    config.overlay(json.dumps({"model": blocks}))
    return og.Model(config)


class OrtGenAIDecoder:
    """An onnxruntime-genai model as a :class:`specdec.protocols.Decoder` (module docstring).

    ``model_dir``: a folder with ``genai_config.json``: the target's for no speculation and n-gram, a composite with a
    ``model.draft`` block for ``Speculation("draft_model")``.  ``speculation``: a :class:`.speculation.Speculation`, or
    None (the control).  ``sampling`` / ``settings``: the request's sampling (:mod:`.search_options` refuses what the
    engine cannot take).  ``threads``: intra-op threads per session.
    """

    def __init__(self, model_dir: str | os.PathLike, *, sampling: SamplingConfig | None = None, settings: SamplingSettings | None = None,
                 speculation: Speculation | None = None, threads: int = 1, name: str | None = None) -> None:
        self.sampling_settings = checked_settings(sampling, settings)
        if speculation is not None and not isinstance(speculation, Speculation):
            raise TypeError(f"speculation must be a Speculation or None, got {type(speculation).__name__}")
        self.config = read_config(model_dir)
        has_draft = "draft" in self.config["model"]
        if speculation is not None and speculation.method == "draft_model" and not has_draft:
            raise ValueError(f"model_dir {os.fspath(model_dir)!r} names no model.draft: draft-model speculation needs a composite folder")
        if has_draft and (speculation is None or speculation.method != "draft_model"):
            raise ValueError(f"model_dir {os.fspath(model_dir)!r} names a draft model, which speculates whatever the options: "
                             "give the target's own folder for the control and n-gram speculation")
        self.eos_token_ids = eos_ids(self.config)
        refuse_unmapped(self.sampling_settings, self.eos_token_ids)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__} {name!r}")
        self.model_dir = os.fspath(model_dir)
        self.speculation = speculation
        self.threads = as_int("threads", threads, minimum=1)
        self.vocab_size = int(self.config["model"]["vocab_size"])
        self.context_length = int(self.config["model"].get("context_length", 2048))
        self.name = name or self.settings
        self._model = None
        self._counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
        self.last_stats: list[dict] = []

    @property
    def settings(self) -> str:
        found = installed_version(DISTRIBUTIONS)
        spec = "no speculation" if self.speculation is None else self.speculation.label
        return f"onnxruntime-genai {found[1] if found else '?'} ({spec}; {self.sampling_settings.label})"

    @property
    def num_draft_tokens(self) -> int:
        """K (0 without speculation): the check asks K tokens more than it tests (near ``max_length`` the engine
        shortens its proposals)."""
        return 0 if self.speculation is None else self.speculation.max_draft_tokens

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(self.model_dir, self.threads)
        return self._model

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=0)
        seed = as_seed(seed)
        rows = checked_prompt_rows(prompts, self.vocab_size, "onnxruntime-genai", self.context_length - max_new_tokens,
                                   f"with max_new_tokens={max_new_tokens} it exceeds the model's context_length {self.context_length}")
        if not max_new_tokens:
            return [[] for _ in rows]
        seeds = row_seeds(seed, len(rows))
        self.last_stats = []
        return [self._row(row, max_new_tokens, row_seed) for row, row_seed in zip(rows, seeds)]

    def _row(self, prompt: list[int], max_new_tokens: int, seed: int) -> list[int]:
        import numpy as np
        import onnxruntime_genai as og

        params = og.GeneratorParams(self.model)
        params.set_search_options(**search_options(self.sampling_settings, max_length=len(prompt) + max_new_tokens, seed=seed))
        if self.speculation is not None:
            params.set_speculative_options(**self.speculation.options())
        generator = og.Generator(self.model, params)
        generator.append_tokens(np.asarray(prompt, dtype=np.int32))
        while not generator.is_done():
            generator.generate_next_token()
        sequence = [int(t) for t in generator.get_sequence(0)][:len(prompt) + max_new_tokens]
        if len(sequence) < len(prompt) + max_new_tokens and not (len(sequence) > len(prompt) and sequence[-1] in self.eos_token_ids):
            # 0.18.0 ends a row at EOS without appending it to the sequence: the EOS is the step's next token
            last = int(generator.get_next_tokens()[0])
            if last not in self.eos_token_ids:
                raise RuntimeError(f"onnxruntime-genai ended a row after {len(sequence) - len(prompt)} of {max_new_tokens} "
                                   f"tokens on {last}, not on EOS {list(self.eos_token_ids)}")
            sequence.append(last)
        if self.speculation is not None:
            stats = generator.get_speculative_stats()
            self.last_stats.append(dict(stats))
            self._counts["drafts"] += int(stats["rounds"])
            self._counts["draft_tokens"] += int(stats["draft_tokens_proposed"])
            self._counts["accepted_tokens"] += int(stats["draft_tokens_accepted"])
        return sequence[len(prompt):]

    def speculation_counts(self) -> dict | None:
        """Cumulative counts since the decoder was built (module docstring); None for the control."""
        return None if self.speculation is None else dict(self._counts)

    def close(self) -> None:
        self._model = None

