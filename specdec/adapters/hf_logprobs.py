"""The log-probabilities transformers reports for its emitted tokens (``generate(output_scores=True)``).

``scores[t]`` is the *processed* row (every logits processor and warper applied) the t-th new token was drawn
from, so ``log_softmax(scores[t])[token]`` claims the sampled law (:mod:`specdec.conformance.reported_logprobs`,
``claims="sampled"``).  Without speculation: ``GenerationMixin._sample`` stores ``next_token_scores`` (after
``logits_processor``).  With assisted generation or prompt lookup, transformers 5.23.0
``generation/utils.py``, ``GenerationMixin._assisted_decoding`` (steps 2.3 and "Store scores"): ``new_logits[:, i]``
is the verifier's row i processed with ``logits_processor(candidate_input_ids[:, :cur_len + i], ...)`` - the true
prefix of every accepted draft - and ``scores += tuple(new_logits[:, i, :] for i in range(n_matches + 1))``: one row
per emitted token, accepted drafts and the last token alike.  The last token after a rejection is drawn from the
residual ``(p - q)+`` (``_speculative_sampling``), yet its score is the target's row p: the token's marginal law,
not the residual it was drawn from.
"""

from __future__ import annotations

import torch

from .hf import _HFDecoder, _seeds
from ..decoding.decoder import check_decoder_args

__all__ = ["generate_with_logprobs"]


def generate_with_logprobs(decoder: _HFDecoder, prompts, max_new_tokens: int, seed: int):
    """``(answers, logprobs)``: what ``decoder`` (an :mod:`specdec.adapters.hf` decoder) emits, seeded as its own
    ``__call__`` is, and ``log_softmax(scores[t])[token]`` per emitted token (float64 lists)."""
    if not isinstance(decoder, _HFDecoder):
        raise TypeError(f"decoder must be a specdec.adapters.hf decoder, got {type(decoder).__name__}")
    target = decoder.target
    prompts, max_new_tokens, seed = check_decoder_args(target, prompts, max_new_tokens, seed)
    device = next(target.parameters()).device
    pad = decoder.eos_token_id if decoder.eos_token_id is not None else 0
    kwargs, stops = decoder._generate_kwargs()
    answers, logprobs = [], []
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for prompt, row_seed in zip(prompts, _seeds(seed, len(prompts))):
            torch.manual_seed(row_seed)
            ids = torch.tensor([prompt], dtype=torch.long, device=device)
            out = target.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                  pad_token_id=pad, output_scores=True, return_dict_in_generate=True,
                                  **kwargs, **decoder._extra())
            new = out.sequences[0, len(prompt):].tolist()
            stop = next((i for i, token in enumerate(new) if token in stops), None)
            new = new if stop is None else new[: stop + 1]
            rows = torch.stack([s[0] for s in out.scores[: len(new)]]).double().log_softmax(-1)  # (T, V)
            answers.append(new)
            logprobs.append(rows[torch.arange(len(new)), torch.tensor(new, dtype=torch.long)].tolist())
    return answers, logprobs
