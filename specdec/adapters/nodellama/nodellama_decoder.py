"""node-llama-cpp 3.21.1 (npm; its prebuilt CPU addon ``@node-llama-cpp/linux-x64``) behind the Decoder Protocol.

``NodeLlamaDecoder(gguf_path, settings=..., speculation=None | "draft" | "lookup")`` starts one Node.js worker
(:mod:`.worker`, ``js/server.mjs``) on its first call and answers ``decoder(prompts, max_new_tokens, seed)`` with one
list of new token ids per prompt: each row is ``LlamaContextSequence.evaluate(prompt, {seed, ...})`` on a cleared
context sequence, ``sequences`` rows at a time (node-llama-cpp batches their decodes), row i seeded with the i-th of
:func:`specdec.adapters._common.request_seeds` (reduced to the engine's uint32).  ``speculation=None`` is the control.

**Speculation** (the sequence's ``tokenPredictor``): ``"draft"`` is ``DraftSequenceTokenPredictor`` (a draft model's
context sequence - by default the same GGUF - sampling ahead of the target with the request's own sampling options and
seed, in the background; ``maxTokens`` = ``num_draft_tokens``, ``minTokens`` = ``draft_min_tokens`` (the target waits
for that many; node-llama-cpp's default 0 lets it go on with whatever the draft has), ``minConfidence`` =
``min_confidence`` (drafting stops at a token whose probability is below it; 0 never stops)); ``"lookup"`` is
``InputLookupTokenPredictor`` (the prompt searched for the longest match of the answer's tail, at least
``lookup_pattern_min`` tokens, ``num_draft_tokens`` drafted).

**How 3.21.1 verifies drafts** (``dist/evaluator/LlamaContext/LlamaContext.js``, ``LlamaContextSequence._speculativeEvaluate``):
the predicted tokens are appended to the step's input and decoded in one batch with logits at every position; at
*every* position the target's sampler chain draws a token (``sampleToken`` with one ``LlamaSampler`` - one seeded
``llama_sampler_init_dist`` generator - for the whole ``evaluate``); the draft at position i is kept while it equals the
target's draw at position i - 1 ("``lastValidatedTokenOutput === evalTokens[i]``"), the kept draws are served as the
next tokens, and the first mismatch erases the rest from the context ("refuted").  So every emitted token is a draw of
the target's law given its prefix, with a generator the draft never looks ahead of (the draft's own sampler restarts
from the seed and its i-th draw serves a position at or after the target's i-th): a coupling, lossless for the
stateless warpers (temperature, top-k, top-p, min-p), though the draws of refuted positions are spent, so a seed gives
other tokens with speculation than without.  The draft's probabilities are not used (it accepts less than F1 would).

**Penalties are not lossless** (read in the same function and ``llama/addon/AddonSampler.cpp``,
``AddonSampler::ApplyConfig``): the penalty history is the caller's ``repeatPenalty.punishTokens()``, read when each
position of the batch is sampled - before any of the batch's tokens has been yielded - so at a drafted position the
history lacks the batch's earlier (kept) tokens; the native sampler sees a history that is not its own and rebuilds its
penalty sampler from the stale list.  A drafted position is then sampled under the penalties of the step's first
position: not the law without a draft (node-llama-cpp's own ``LlamaCompletion`` and ``LlamaChat`` build that history
from the tokens yielded so far, as this adapter's worker does).

Counters (:meth:`speculation_counts`): node-llama-cpp keeps ``sequence.tokenPredictions`` (``validated`` and
``refuted`` predictions: ``validated + refuted`` were evaluated by the target); ``draft_tokens`` is their sum,
``accepted_tokens`` the validated ones.  It counts no verification steps: ``drafts`` is the worker's count of
``predictTokens()`` calls that returned tokens (``_speculativeEvaluate`` asks once per step and evaluates them all).  No :class:`specdec.protocols.DraftMarker`: the engine does not say which
emitted tokens were drafts.

EOS (E8): ``ignore_eos=True`` (default) makes it an ordinary token (``yieldEogToken``, generation goes on); with False
a row ends after the model's end-of-generation token (pass :attr:`eos_token_ids` to the check).  ``stop_token_ids`` of
the settings end a row at the first one.  Engine parameters: ``sequences`` (rows decoded together), ``threads``,
``context_size``, ``batch_size``.  The worker refuses a node-llama-cpp other than :data:`SUPPORTED_NODE_LLAMA_CPP`
before it starts (:func:`.worker.installed_node_llama_cpp`).
"""

from __future__ import annotations

import os

from ..._validation import as_float, as_int, as_seed
from ...sampling_settings import SamplingSettings
from .._common import checked_prompt_rows, request_seeds
from .worker_sampling import sampling_object
from .worker import DEFAULT_MODULES, SUPPORTED_NODE_LLAMA_CPP, NodeWorker, WorkerOwner, start_checked

__all__ = ["SPECULATION", "SUPPORTED_NODE_LLAMA_CPP", "NodeLlamaDecoder"]

SPECULATION = (None, "draft", "lookup")
VOCAB = 49152  # SmolLM2's; the worker states the model's own (``ready.vocab``), which the decoder then uses


class NodeLlamaDecoder(WorkerOwner):
    """node-llama-cpp's ``evaluate`` on ``model_path`` (a GGUF) as a :class:`specdec.protocols.Decoder` (module docstring)."""

    def __init__(self, model_path: str | os.PathLike, *, settings: SamplingSettings | None = None,
                 speculation: str | None = None, num_draft_tokens: int = 4, draft_model_path: str | os.PathLike | None = None,
                 draft_min_tokens: int = 0, min_confidence: float = 0.6, lookup_pattern_min: int = 1, sequences: int = 1,
                 threads: int = 1, context_size: int = 1024, batch_size: int = 512, ignore_eos: bool = True,
                 modules: str | os.PathLike = DEFAULT_MODULES, node: str | None = None, name: str | None = None,
                 check_version: bool = True) -> None:
        if speculation not in SPECULATION:
            raise ValueError(f"speculation must be one of {SPECULATION}, got {speculation!r}")
        self.settings_record = SamplingSettings() if settings is None else settings
        self._sampling = sampling_object(self.settings_record)  # refuses what it cannot map, before any process starts
        self.model_path = os.fspath(model_path)
        if not os.path.isfile(self.model_path):
            raise FileNotFoundError(f"model_path {self.model_path!r} is not a file (a GGUF model)")
        self.draft_model_path = self.model_path if draft_model_path is None else os.fspath(draft_model_path)
        if speculation == "draft" and not os.path.isfile(self.draft_model_path):
            raise FileNotFoundError(f"draft_model_path {self.draft_model_path!r} is not a file (a GGUF model)")
        self.speculation = speculation
        self.num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=1)
        self.draft_min_tokens = as_int("draft_min_tokens", draft_min_tokens, minimum=0, maximum=self.num_draft_tokens)
        self.min_confidence = as_float("min_confidence", min_confidence, minimum=0.0, maximum=1.0)
        self.lookup_pattern_min = as_int("lookup_pattern_min", lookup_pattern_min, minimum=1)
        self.sequences = as_int("sequences", sequences, minimum=1)
        self.threads = as_int("threads", threads, minimum=1)
        self.context_size = as_int("context_size", context_size, minimum=16)
        self.batch_size = as_int("batch_size", batch_size, minimum=1)
        if not isinstance(ignore_eos, bool):
            raise TypeError(f"ignore_eos must be a bool, got {type(ignore_eos).__name__} {ignore_eos!r}")
        self.ignore_eos = ignore_eos
        self.modules = os.fspath(modules)
        self.node = node
        self.name = name or f"node-llama-cpp {speculation or 'no speculation'}"
        self.check_version = bool(check_version)
        self._worker: NodeWorker | None = None
        self._counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
        self.eos_token_ids: tuple[int, ...] = ()
        self.vocab = VOCAB

    @property
    def settings(self) -> str:
        spec = "no speculation" if self.speculation is None else (
            f"{self.speculation}, K<={self.num_draft_tokens}"
            + (f", min {self.draft_min_tokens}, min_confidence {self.min_confidence:g}" if self.speculation == "draft" else ""))
        return f"node-llama-cpp 3.21.1 ({self.settings_record.label}; {spec}; {self.sequences} sequences, {self.threads} threads)"

    def _config(self) -> dict:
        return {"modules": self.modules, "model": self.model_path, "draftModel": self.draft_model_path,
                "speculation": self.speculation, "draftMax": self.num_draft_tokens, "draftMin": self.draft_min_tokens,
                "minConfidence": self.min_confidence, "lookupPattern": self.lookup_pattern_min,
                "lookupMax": self.num_draft_tokens, "sequences": self.sequences, "threads": self.threads,
                "contextSize": self.context_size, "batchSize": self.batch_size}

    def start(self) -> NodeWorker:
        """The worker, started on first use (after the version check)."""
        if self._worker is None:
            self._worker = start_checked(self._config(), modules=self.modules, node=self.node,
                                         check_version=self.check_version)
            ready = self._worker.ready
            self.eos_token_ids = tuple(int(t) for t in ready.get("eog", ()))
            self.vocab = int(ready.get("vocab") or VOCAB)
        return self._worker

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=0)
        seed = as_seed(seed)
        worker = self.start()
        rows = checked_prompt_rows(prompts, self.vocab, "node-llama-cpp", self.context_size - max_new_tokens - 1,
                                   f"the context holds {self.context_size} tokens (context_size), {max_new_tokens} new ones included")
        if not rows:
            return []
        seeds = [s & 0xFFFFFFFF for s in request_seeds(seed, len(rows))]  # AddonSampler::ApplyConfig: Uint32Value
        answer = worker.request({"prompts": rows, "seeds": seeds, "maxNewTokens": max_new_tokens,
                                 "stopTokens": list(self.settings_record.stop_token_ids), "stopAtEog": not self.ignore_eos,
                                 "sampling": self._sampling})
        out = [[int(t) for t in row] for row in answer["tokens"]]
        if len(out) != len(rows):
            raise RuntimeError(f"the node-llama-cpp worker answered {len(out)} rows for {len(rows)} prompts")
        for row_counts in answer["predictions"]:
            evaluated = int(row_counts["validated"]) + int(row_counts["refuted"])
            self._counts["drafts"] += int(row_counts["steps"])
            self._counts["draft_tokens"] += evaluated
            self._counts["accepted_tokens"] += int(row_counts["validated"])
        return out

    def speculation_counts(self) -> dict | None:
        """Cumulative counts since the decoder was built (module docstring); None for the control."""
        return None if self.speculation is None else dict(self._counts)
