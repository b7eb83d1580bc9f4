"""transformers' own law under the whole sampling record, for the per-token check (a :class:`specdec.protocols.LawOracle`).

:class:`HFSettingsOracle` states, for every position t of an answer, the law transformers' ``generate`` samples the
next token from under a :class:`specdec.SamplingSettings` record - the law of the engine *without* speculation
(:class:`specdec.adapters.hf.HFGenerateDecoder`), computed from the *true* prefix, prompt + answer[:t]:

1. the keywords the adapter's decoders pass to ``generate`` (``_HFDecoder._generate_kwargs``:
   :func:`specdec.adapters.hf_settings.generate_kwargs` with ``min_new_tokens`` and ``eos_token_id``);
2. transformers' own processors and warpers, obtained the way ``generate`` obtains them (transformers 5.23.0,
   ``src/transformers/generation/utils.py``, ``GenerationMixin.generate``): ``_prepare_generation_config``
   (the model's generation config under those keywords), ``_prepare_special_tokens`` (the stop ids as a tensor),
   ``_prepare_generated_length`` (``min_new_tokens`` counted from the prompt's length) and ``_get_logits_processor``
   (with ``input_ids_seq_length`` the prompt's length, ``prefix_allowed_tokens_fn`` and the user's
   ``logits_processor``, the attention mask dropped as ``generate`` drops an all-ones one) - built per prompt length;
3. one forward pass per answer over prompt + answer (answers of one length batched); each position's logits row
   cast to float32 as ``GenerationMixin._sample`` casts it, the processors called on it with the input ids of the
   true prefix, then a softmax in float64.  Greedy (``do_sample=False``): the one-hot law of ``torch.argmax`` of
   the processed scores, ties to the lowest id as ``_sample`` breaks them.

The user's ``logits_processor`` must be a pure function of (history, logits): the oracle calls it again, once per
position.  Refused by name (:class:`specdec.sampling_settings.UnsupportedSetting`): what the adapter refuses (presence
and frequency penalties, ``samples_per_request``, ``seeded=False``), and a model whose own generation config asks
for a law this oracle cannot restate - another generation mode than sampling or greedy search (beams, contrastive
search, DoLa), classifier-free guidance (a processor that runs the model with its own cache), a forced EOS at
``max_length`` (the law would depend on ``max_new_tokens``).  Other transformers versions are refused
(:class:`specdec.errors.PeerVersionError`).

The floor: generate evaluates the prompt once and every later token with the KV cache; the oracle evaluates the
whole answer in one float32 forward pass.  The two differ by float32 rounding alone - transformers' processors
built here turn generate's own logits into generate's scores bit for bit (``stat_tests/test_hf_oracle.py``).  Measured
(CPU, float32): on the tiny Llama pair of ``fixtures.models`` a mean TV of 2e-7 per token (at most 1.0e-6 in any one
probability, 360 tokens per record); on SmolLM2-135M-Instruct (the copy prompt of ``fixtures.models``, 48 tokens per
record) a mean TV of 1.7e-7 to 2.4e-6 per token, at most 7.4e-6.  So the floor is 1e-5 by default (a mean TV per
token, docs/reference.md §10, P2), far below any TV a check detects; give a larger one for a half-precision model.
"""

from __future__ import annotations

import numpy as np
import torch

from .._hf import model_device, model_vocab_size
from .._validation import as_float, as_int
from ..laws.oracles import TokenLaw, answer_batches, row_law
from ..laws.target import as_token_ids
from ..sampling_settings import UnsupportedSetting, settings_from
from ._common import require_version
from .hf import TESTED_TRANSFORMERS, HFGenerateDecoder
from .hf_settings import ENGINE

__all__ = ["FLOOR", "HFSettingsOracle"]

FLOOR = 1e-5  # per-token mean TV: a full float32 forward pass against generate's cached one (module docstring)
MODES = ("sample", "greedy_search")  # the generation modes whose law of one token this oracle states


class HFSettingsOracle:
    """transformers ``generate``'s per-token laws of ``model`` under ``settings`` (module docstring).

    ``settings``: a :class:`specdec.SamplingSettings` (or ``sampling=``, a :class:`specdec.SamplingConfig`: the
    warpers alone); ``eos_token_id``: the decoder's own stop id, as given to
    :class:`~specdec.adapters.hf.HFGenerateDecoder` (it joins the record's stop tokens in ``generate``'s
    ``eos_token_id``, which bad words and the minimum of new tokens read); ``batch_size``: answers per forward pass.
    """

    def __init__(self, model, settings=None, *, sampling=None, eos_token_id=None, floor: float = FLOOR,
                 batch_size: int = 64) -> None:
        self.version = require_version("specdec.adapters.hf_oracle", ("transformers",), (TESTED_TRANSFORMERS,))
        if not all(callable(getattr(model, name, None)) for name in ("generate", "_get_logits_processor")):
            raise TypeError(f"model must be a transformers causal LM (generate, _get_logits_processor), "
                            f"got {type(model).__name__}")
        self.sampling_settings = settings_from(sampling, settings)
        self.model = model
        self.vocab_size = model_vocab_size(model)
        self.eos_token_id = None if eos_token_id is None else as_int("eos_token_id", eos_token_id, minimum=0,
                                                                    maximum=self.vocab_size - 1)
        decoder = HFGenerateDecoder(model, eos_token_id=self.eos_token_id, settings=self.sampling_settings)
        self._kwargs, _ = decoder._generate_kwargs()  # the adapter's keywords; refuses what it refuses, by name
        self._pad = self.eos_token_id if self.eos_token_id is not None else 0  # as the decoder's pad_token_id
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-9  # float64 softmax of float32 scores
        self.batch_size = as_int("batch_size", batch_size, minimum=1)
        self.greedy = not self._config(1)[0].do_sample  # also refuses the model's own settings by name, before any call

    @property
    def settings(self) -> str:
        return f"transformers {self.version} generate's processors and warpers under {self.sampling_settings.label}"

    def _config(self, prompt_length: int):
        """(generation config, generate's keywords it does not hold) as ``generate`` prepares them for a prompt of
        ``prompt_length`` tokens: transformers' ``GenerationMixin._prepare_generation_config``,
        ``_prepare_special_tokens`` and ``_prepare_generated_length`` (generation/utils.py, transformers 5.23.0)."""
        model = self.model
        kwargs = dict(self._kwargs)
        extra = {"prefix_allowed_tokens_fn": kwargs.pop("prefix_allowed_tokens_fn", None),
                 "logits_processor": kwargs.pop("logits_processor", None)}
        has_default_min_length = model.generation_config.min_length is None
        config, _ = model._prepare_generation_config(None, pad_token_id=self._pad, **kwargs)
        _refuse_config(config)
        model._prepare_special_tokens(config, True, device=model_device(model), batch_size=1)
        ids = torch.zeros((1, prompt_length), dtype=torch.long)
        config = model._prepare_generated_length(config, has_default_max_length=False,
                                                 has_default_min_length=has_default_min_length, model_input_name="input_ids",
                                                 input_ids_length=prompt_length, inputs_tensor=ids)
        return config, extra

    def processors(self, prompts: torch.Tensor):
        """transformers' ``LogitsProcessorList`` ``generate`` builds for the prompts ``prompts`` (B, prompt length), by
        its own ``GenerationMixin._get_logits_processor`` (generation/utils.py, transformers 5.23.0)."""
        from transformers import LogitsProcessorList

        config, extra = self._config(prompts.shape[1])
        return self.model._get_logits_processor(
            generation_config=config, input_ids_seq_length=prompts.shape[1], encoder_input_ids=prompts,
            prefix_allowed_tokens_fn=extra["prefix_allowed_tokens_fn"],
            logits_processor=extra["logits_processor"] or LogitsProcessorList(), device=prompts.device,
            model_kwargs={"attention_mask": None})  # generate drops an all-ones mask before building them

    @torch.no_grad()
    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        prompts, continuations = self._inputs(prompts, continuations)
        out: list = [[] for _ in continuations]
        lengths = lambda p, c: (len(p), len(c))  # noqa: E731 - one forward pass per prompt and answer length
        for (lp, lc), part in answer_batches(prompts, continuations, lengths, self.batch_size):
            ids = torch.tensor([prompts[i] + continuations[i] for i in part], dtype=torch.long, device=model_device(self.model))
            for i, laws in zip(part, self._laws(ids, lp, lc)):
                out[i] = laws
        return out

    def _laws(self, ids: torch.Tensor, lp: int, lc: int) -> list[list[TokenLaw]]:
        """Laws (B answers, lc positions) of answers ``ids`` (B, lp + lc) to prompts of ``lp`` tokens."""
        logits = self.model(input_ids=ids[:, : lp + lc - 1]).logits[:, lp - 1:]  # (B, lc, V): position t given ids[:, :lp + t]
        processors = self.processors(ids[:, :lp])
        laws: list[list[TokenLaw]] = [[] for _ in range(ids.shape[0])]
        for t in range(lc):
            row = logits[:, t].to(copy=True, dtype=torch.float32)  # as _sample casts next_token_logits
            scores = processors(ids[:, : lp + t], row)
            if self.greedy:
                probs = torch.nn.functional.one_hot(torch.argmax(scores, dim=-1), scores.shape[-1]).to(torch.float64)
            else:
                probs = torch.softmax(scores.to(torch.float64), dim=-1)
            probs = probs.cpu().numpy()
            for b in range(ids.shape[0]):
                if not np.all(np.isfinite(probs[b])):
                    raise ValueError(f"{ENGINE} under {self.sampling_settings.label} leaves no token to draw after "
                                     f"{ids[b, : lp + t].tolist()} (every score -inf or NaN)")
                laws[b].append(row_law(probs[b]))
        return laws

    def _inputs(self, prompts, continuations) -> tuple[list[list[int]], list[list[int]]]:
        if len(prompts) != len(continuations):
            raise ValueError(f"token_laws got {len(prompts)} prompts and {len(continuations)} continuations (one per answer)")
        vocab = self.vocab_size
        prompts = [list(as_token_ids(f"prompts[{i}]", p, vocab)) for i, p in enumerate(prompts)]
        continuations = [list(as_token_ids(f"continuations[{i}]", c, vocab)) if len(c) else []
                         for i, c in enumerate(continuations)]
        return prompts, continuations


def _refuse_config(config) -> None:
    """:class:`UnsupportedSetting` naming the field of the model's generation config whose law this oracle does not
    restate (module docstring)."""
    mode = str(getattr(config.get_generation_mode(), "value", config.get_generation_mode()))
    if mode not in MODES:
        raise UnsupportedSetting(ENGINE, "generation mode", mode, "the oracle states the law of sampling or greedy search, "
                                 "one token at a time (the model's generation config asks for another mode)")
    if config.guidance_scale is not None and config.guidance_scale != 1:
        raise UnsupportedSetting(ENGINE, "guidance_scale", config.guidance_scale, "classifier-free guidance runs the model "
                                 "again with its own cache; the oracle does not restate it")
    if config.forced_eos_token_id is not None:
        raise UnsupportedSetting(ENGINE, "forced_eos_token_id", config.forced_eos_token_id, "the forced EOS depends on "
                                 "max_new_tokens, which the oracle is not told")
