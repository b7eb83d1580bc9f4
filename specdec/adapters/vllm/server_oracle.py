"""vLLM's OpenAI server, speculation off, as a law oracle (:class:`specdec.protocols.LawOracle`).

What vLLM 0.32 returns (read in its source, ``vllm/entrypoints/openai`` and ``vllm/v1/sample``; MRV1, the CPU
runner):

* ``/v1/completions`` takes ``prompt_logprobs: k`` (0..``--max-logprobs``, default 20; -1 the whole row, which
  needs ``--max-logprobs -1``): ``choices[0].prompt_logprobs[j]`` is the law of ``prompt[j]`` given
  ``prompt[:j]``, as ``{"<token id>": {"logprob", "rank", "decoded_token"}}`` - the actual token first and
  always present, then the top k.  One request with ``prompt = prompt + answer`` and ``max_tokens=1`` gives every
  position of an answer.
* Those are **raw**: the log-softmax of the float32 logits, before temperature, penalties, bias, masks, min-p,
  top-k and top-p, whatever the request or ``--logprobs-mode`` says (prompt rows never reach the sampler).  The
  ``processed_logprobs`` mode changes only the log-probabilities of *sampled* tokens (the tensor the sampler
  draws from), one request per position.  A masked token's log-probability is -9999.0 in the JSON.
* The sampler's order (MRV1): temperature, then min-p (on the tempered law), then top-k (every token tied with the
  k-th is kept), then top-p on the law renormalised after top-k.

So this oracle serves the settings where the raw top-k log-probabilities determine the sampled law exactly:

* temperature 1, no truncation: the listed tokens and one "rest" mass (the law over the rest is unknown, and
  need not be: the per-token check pools them into one cell);
* any temperature with ``top_k`` <= ``top_logprobs``: every token that can be drawn is listed, so the law is
  rebuilt client-side in vLLM's order (full, exact up to the floor);
* greedy (temperature 0): the listed top-1.

Anything else - a temperature other than 1, top-p or min-p without a top-k, penalties, logit bias - needs the
whole tempered row, which the server does not return: refused by name.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np

from ..._validation import as_float, as_int
from ...errors import ContractError
from ...laws.oracles import TokenLaw
from ...warpers import SamplingConfig
from ..openai.client import server_root
from ..openai.retries import RetryPolicy
from ..openai.wire import TransportError, post_json

FLOOR = 1e-3  # per-token TV; measured 0 (prefill and decode log-probabilities bitwise equal, 512 positions, docs/results.md): a margin
TOP_LOGPROBS = 20  # vLLM 0.32's default --max-logprobs

__all__ = ["FLOOR", "VLLMServerOracle", "law_from_logprobs"]


def _refusal(sampling: SamplingConfig, top: int) -> str | None:
    if sampling.temperature == 0:
        return None
    if sampling.top_k and sampling.top_k <= top:
        return None
    if sampling.temperature == 1 and not sampling.top_k and not sampling.top_p and not sampling.min_p:
        return None
    return (f"vLLM's server returns raw log-probabilities for prompt positions; {sampling} needs the whole tempered row: "
            f"use temperature 1 without truncation, or a top_k <= top_logprobs ({top})")


def law_from_logprobs(entry: dict, sampling: SamplingConfig, top: int | None = None) -> TokenLaw:
    """The sampled law of one position from its raw ``prompt_logprobs`` entry ({id: {"logprob", ...}}), in vLLM's order.

    ``top``: the number of log-probabilities asked for.  vLLM adds the actual token when it is not among them;
    that token is dropped here (it falls in the "rest" cell): a listing that grows with what was observed
    would give the observed token a cell of its own and bias every count towards it."""
    ids = np.array([int(k) for k in entry], dtype=np.int64)
    logp = np.array([float(v["logprob"]) for v in entry.values()], dtype=np.float64)
    if top is not None and len(ids) > top:
        kept = np.lexsort((ids, -logp))[:top]
        ids, logp = ids[kept], logp[kept]
    probs = np.where(logp <= -9999.0, 0.0, np.exp(logp))
    if sampling.temperature == 0:
        out = np.zeros_like(probs)
        out[int(np.lexsort((ids, -logp))[0])] = 1.0
        return TokenLaw(out, ids=ids, rest=0.0)
    if not sampling.top_k:
        return TokenLaw(probs, ids=ids, rest=max(0.0, 1.0 - float(probs.sum())))
    z = logp / sampling.temperature
    keep = logp > -9999.0
    if sampling.min_p:
        keep &= z >= z[keep].max() + np.log(sampling.min_p)
    kth = np.sort(z[keep])[::-1][min(sampling.top_k, int(keep.sum())) - 1]
    keep &= z >= kth  # vLLM keeps every token tied with the k-th
    weights = np.where(keep, np.exp(z - z[keep].max()), 0.0)
    weights /= weights.sum()
    if sampling.top_p:
        order = np.argsort(weights)  # ascending, as vLLM's top-p
        cum = np.cumsum(weights[order])
        drop = order[cum <= 1 - sampling.top_p]
        drop = drop[drop != int(np.argmax(weights))]  # the largest is always kept
        weights[drop] = 0.0
        weights /= weights.sum()
    return TokenLaw(weights, ids=ids, rest=0.0)


class VLLMServerOracle:
    """The per-token laws of a vLLM server (speculation off) at ``base_url`` serving ``model`` (module docstring)."""

    def __init__(self, base_url: str, model: str, *, sampling: SamplingConfig = SamplingConfig(), top_logprobs: int = TOP_LOGPROBS,
                 request_timeout: float = 300.0, max_in_flight: int = 4, floor: float = FLOOR,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        if not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
        self.url = server_root(base_url) + "/v1/completions"
        self.model, self.sampling = model, sampling
        self.top_logprobs = as_int("top_logprobs", top_logprobs, minimum=1)
        refused = _refusal(sampling, self.top_logprobs)
        if refused:
            raise ValueError(refused)
        self.request_timeout = as_float("request_timeout", request_timeout, minimum=0.0, low_open=True)
        self.max_in_flight = as_int("max_in_flight", max_in_flight, minimum=1)
        self.floor = as_float("floor", floor, minimum=0.0, maximum=1.0)
        self.tolerance = 1e-4  # float32 log-probabilities
        self.retry = retry

    @property
    def settings(self) -> str:
        return f"vLLM server {self.url} (model {self.model}), raw prompt_logprobs top {self.top_logprobs}, {self.sampling}; floor {self.floor:g}"

    def _ask(self, prompt, continuation) -> list[TokenLaw]:
        body = {"model": self.model, "prompt": list(prompt) + list(continuation), "max_tokens": 1, "prompt_logprobs": self.top_logprobs,
                "temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "seed": 0, "stream": False}
        what = f"POST {self.url} (prompt_logprobs of a prompt of {len(prompt)} and an answer of {len(continuation)} tokens)"
        attempt, started = 0, time.monotonic()
        while True:
            try:
                status, raw = post_json(self.url, body, self.request_timeout, what)
                break
            except TransportError as error:
                wait = self.retry.wait(attempt, error.retry_after, started)
                if wait is None:
                    raise
                attempt += 1
                threading.Event().wait(wait)
        try:
            entries = json.loads(raw)["choices"][0]["prompt_logprobs"]
            rows = entries[len(prompt): len(prompt) + len(continuation)]
            if len(rows) != len(continuation) or any(not isinstance(r, dict) or not r for r in rows):
                raise ValueError(f"{len(rows)} prompt_logprobs entries for {len(continuation)} answer tokens")
            return [law_from_logprobs(r, self.sampling, self.top_logprobs) for r in rows]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise ContractError(f"{what}: HTTP {status}, the answer has no usable prompt_logprobs: {error}") from None

    def token_laws(self, prompts, continuations) -> list[list[TokenLaw]]:
        out: list = [None] * len(prompts)
        errors: list = []
        lock, pending = threading.Lock(), list(range(len(prompts)))

        def work() -> None:
            while not errors:
                with lock:
                    if not pending:
                        return
                    i = pending.pop()
                try:
                    out[i] = self._ask(prompts[i], continuations[i]) if len(continuations[i]) else []
                except BaseException as error:  # noqa: BLE001 - raised in the caller's thread
                    errors.append(error)

        workers = [threading.Thread(target=work, daemon=True, name="specdec-oracle") for _ in range(min(self.max_in_flight, len(prompts) or 1))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if errors:
            raise errors[0]
        return out
