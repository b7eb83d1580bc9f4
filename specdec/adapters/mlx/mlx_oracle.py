"""mlx-lm 0.32.2's own law of every token of an answer given its true prefix (a :class:`specdec.protocols.LawOracle`).

:class:`MlxLawOracle` states, for every position t of an answer, the law ``mlx_lm.generate.generate_step`` (no draft
model) samples the next token from, computed from the *true* prefix prompt + answer[:t] with mlx-lm's own pieces:

1. the model (``mlx_lm.load`` of the same folder as the decoder's), one forward pass over prompt + answer[:-1] without a
   cache; the logits row of each position (float32);
2. the logits processors of ``mlx_lm.sample_utils.make_logits_processors`` under the same keywords as the decoder's
   (:func:`specdec.adapters.mlx.mlx_settings.request_settings`), each called as ``generate_step``'s ``_step`` calls it:
   with the history prompt + answer[:t] (``generate_step`` adds the prompt to ``tokens`` in its prefill loop and every
   token after it);
3. ``logprobs = logits - logsumexp(logits)``, then ``make_sampler``'s chain in its order - ``apply_top_p``, ``apply_min_p``,
   ``apply_top_k`` (mlx-lm's own functions) on the untempered log-probabilities - and the law of
   ``categorical_sampling``: softmax(logprobs / temp) in float64.  ``temp = 0``: the one-hot law of ``mx.argmax`` (ties
   to the lowest id).

It runs mlx in *this* process (deterministic: no random state is read), so it needs mlx and mlx-lm here (``.venv-mlx``).
The law is mlx-lm's, not :class:`specdec.SamplingConfig`'s (mlx-lm truncates before tempering:
:mod:`specdec.adapters.mlx.mlx_settings`).  The floor: generate_step decodes with a KV cache, one token at a time; the
oracle evaluates the answer in one pass; both float32.  Its size is measured by the control (the decoder without a draft
model against this oracle, :func:`specdec.conformance.token_cells.run_token_cell`); :data:`FLOOR` is 1e-5 per token, as for
transformers' float32 oracle (logits of the two passes measured 2026-11-27 within 2e-5 of each other on SmolLM2).
"""

from __future__ import annotations

import os

import numpy as np

from ..._validation import as_float, as_int
from ...laws.oracles import TokenLaw, answer_batches, row_law
from ...laws.target import as_token_ids
from ...sampling_settings import SamplingSettings, settings_from
from .mlx_settings import CONTEXT_SIZE, ENGINE, request_settings

__all__ = ["FLOOR", "MlxLawOracle"]

FLOOR = 1e-5


class MlxLawOracle:
    """mlx-lm's per-token laws of the model in ``model_dir`` under ``settings`` (module docstring)."""

    def __init__(self, model_dir: str | os.PathLike | None = None, settings: SamplingSettings | None = None, *,
                 context_size: int = CONTEXT_SIZE, floor: float = FLOOR, batch_size: int = 16) -> None:
        from .mlx_decoder import _installed, check_versions

        check_versions(_installed())
        self.sampling_settings = settings_from(None, settings)
        self._request = request_settings(self.sampling_settings, context_size)  # refuses by name, as the decoder does
        if model_dir is None:
            from .mlx_model import mlx_model_dir

            model_dir = mlx_model_dir()
        import mlx.core as mx
        from mlx_lm import load

        self._mx = mx
        self.model_dir = os.fspath(model_dir)
        self.model, _ = load(self.model_dir)
        self.vocab_size = int(self.model.args.vocab_size)
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-9  # float64 softmax of float32 scores
        self.batch_size = as_int("batch_size", batch_size, minimum=1)

    @property
    def settings(self) -> str:
        return f"{ENGINE} generate_step's processors and sampler under {self.sampling_settings.label}"

    def _processors(self):
        from mlx_lm.sample_utils import make_logits_processors

        kwargs = dict(self._request["processors"])
        if "logit_bias" in kwargs:
            kwargs["logit_bias"] = {int(t): float(b) for t, b in kwargs["logit_bias"]}
        return make_logits_processors(**kwargs)

    def _law(self, row, history) -> np.ndarray:
        """The law of one position: ``row`` (1, V) float32 logits, ``history`` the true prefix's ids."""
        from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p

        mx = self._mx
        sampler = self._request["sampler"]
        logits = row
        processors = self._processors()
        if processors:
            tokens = mx.array(history, dtype=mx.uint32)
            for processor in processors:
                logits = processor(tokens, logits)
        logprobs = logits - mx.logsumexp(logits, keepdims=True)
        if sampler["temp"] == 0:
            law = np.zeros(self.vocab_size)
            law[int(mx.argmax(logprobs, axis=-1).item())] = 1.0
            return law
        if 0 < sampler["top_p"] < 1.0:
            logprobs = apply_top_p(logprobs, sampler["top_p"])
        if sampler["min_p"] != 0.0:
            logprobs = apply_min_p(logprobs, sampler["min_p"], 1)
        if 0 < sampler["top_k"] < self.vocab_size:
            logprobs = apply_top_k(logprobs, sampler["top_k"])
        scaled = np.array(logprobs.astype(mx.float32))[0].astype(np.float64) * (1.0 / sampler["temp"])
        scaled -= scaled.max()
        law = np.exp(scaled)
        return law / law.sum()

    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        if len(prompts) != len(continuations):
            raise ValueError(f"token_laws got {len(prompts)} prompts and {len(continuations)} continuations (one per answer)")
        vocab = self.vocab_size
        prompts = [list(as_token_ids(f"prompts[{i}]", p, vocab)) for i, p in enumerate(prompts)]
        continuations = [list(as_token_ids(f"continuations[{i}]", c, vocab)) if len(c) else [] for i, c in enumerate(continuations)]
        mx = self._mx
        out: list = [[] for _ in continuations]
        lengths = lambda p, c: (len(p), len(c))  # noqa: E731 - one forward pass per prompt and answer length
        for (lp, lc), part in answer_batches(prompts, continuations, lengths, self.batch_size):
            ids = [prompts[i] + continuations[i] for i in part]
            logits = self.model(mx.array([row[: lp + lc - 1] for row in ids], dtype=mx.uint32))[:, lp - 1:].astype(mx.float32)
            mx.eval(logits)
            for b, i in enumerate(part):
                laws = []
                for t in range(lc):
                    law = self._law(logits[b:b + 1, t], ids[b][: lp + t])
                    if not np.all(np.isfinite(law)):
                        raise ValueError(f"{ENGINE} under {self.sampling_settings.label} leaves no token to draw after "
                                         f"{ids[b][: lp + t]} (every score -inf or NaN)")
                    laws.append(row_law(law))
                out[i] = laws
        return out
