"""Measured costs for F23's general form: a target pass over K + 1 tokens and one draft step.

After a real context is in the decoding loop's KV cache (dynamic or static), :func:`forward_costs`
times one cached forward of ``width`` tokens for each width, interleaved round by round, rolling
the cache back after each call so every call sees the same context.  Ratios of these medians are the
verify term v(K) = T_target(K + 1) / T_target(1) and rho = T_draft(1) / T_target(1).
:func:`lookup_cost` times prompt lookup (a host-side scan) the same way.  :func:`calibrate` times the
target's widths and the draft in the same rounds and keeps each round's costs beside the medians.
"""

from __future__ import annotations

import statistics

import torch

from .._validation import as_int
from ..laws.speedup import StepCosts  # noqa: F401 - re-exported: calibrate returns it
from .clock import timed


class _ForwardTimer:
    """One model's cached forward over each width after ``context``, one round at a time (the cache rolled back after
    each call, so every call sees the same context)."""

    def __init__(self, model, context: list[int], widths, *, target_cache="dynamic", cuda_graphs: bool = False, batch: int = 1) -> None:
        from .._hf import model_device
        from ..decoding.kvcache import RaggedCache
        from ..decoding.static_cache import static_cache_for_call

        self.widths = [as_int("width", w, minimum=1) for w in widths]
        self.batch = as_int("batch", batch, minimum=1)
        self.device = model_device(model)
        if isinstance(target_cache, str) and target_cache == "dynamic":
            self.cache = RaggedCache(model, self.batch, self.device)
        else:
            self.cache = static_cache_for_call(target_cache, model, self.batch, self.device, len(context) + max(self.widths) + 1, cuda_graphs)
        self.context = list(context)
        with torch.no_grad():
            self.cache.feed([self.context] * self.batch)
        self.keep = torch.tensor([len(context)] * self.batch, device=self.device)

    @torch.no_grad()
    def round(self) -> dict[int, float]:
        """Seconds of one forward per width, this round."""
        out = {}
        for width in self.widths:
            chunk = torch.full((self.batch, width), int(self.context[-1]), device=self.device)
            counts = torch.tensor([width] * self.batch, device=self.device)
            out[width], _ = timed(lambda: self.cache.feed_tensor(chunk, counts), self.device)
            self.cache.rollback(self.keep)
        return out


def forward_costs(model, context: list[int], widths, *, rounds: int = 5, target_cache="dynamic",
                  cuda_graphs: bool = False, batch: int = 1) -> dict[int, float]:
    """Median seconds of one cached forward over ``width`` new tokens after ``context``, per width,
    through the loop's own cache (``target_cache`` "dynamic", "static" or a StaticKVCache to reuse,
    as in ``generate``; a reused one keeps the graphs captured here).  ``batch``: rows fed together,
    each with ``context`` (a verify pass of a batch of B rows: the batch-dependent cost of F24's v_B(K))."""
    rounds = as_int("rounds", rounds, minimum=1)
    timer = _ForwardTimer(model, context, widths, target_cache=target_cache, cuda_graphs=cuda_graphs, batch=batch)
    timer.round()  # warms every width up (and captures its graph)
    samples = [timer.round() for _ in range(rounds)]
    return {w: statistics.median(s[w] for s in samples) for w in timer.widths}


class _LookupTimer:
    """One prompt-lookup proposal of ``num_tokens`` after ``context`` for ``batch`` rows, one round at a time."""

    def __init__(self, draft, context: list[int], num_tokens: int, batch: int = 1) -> None:
        self.draft, self.num_tokens = draft, num_tokens
        self.contexts = [list(context)] * as_int("batch", batch, minimum=1)
        draft.start(self.contexts, sampling=None, prob_dtype=torch.float32, device=torch.device("cpu"))

    def round(self) -> float:
        return timed(lambda: self.draft.propose(self.contexts, self.num_tokens, None), torch.device("cpu"))[0]


def lookup_cost(draft, context: list[int], num_tokens: int, *, rounds: int = 5, batch: int = 1) -> float:
    """Median seconds of one prompt-lookup proposal of ``num_tokens`` after ``context`` for ``batch`` rows."""
    timer = _LookupTimer(draft, context, num_tokens, batch)
    times = [timer.round() for _ in range(as_int("rounds", rounds, minimum=1) + 1)]
    return statistics.median(times[1:])


CALIBRATION_ROUNDS = 9  # the order statistics x(2)..x(8) of 9 rounds cover a median with 96%


def calibrate(target, context: list[int], max_k: int, *, draft_model=None, draft_lookup=None, rounds: int = CALIBRATION_ROUNDS,
              target_cache="dynamic", cuda_graphs: bool = False, batch: int = 1) -> StepCosts:
    """Target costs for K = 0..max_k (through ``target_cache``) and the draft cost per token (a model's
    cached step, or a lookup), for a step over ``batch`` rows (F24 with a batch-dependent verify cost).

    The target's widths and the draft are timed in the same rounds, interleaved (one warm-up round first): the
    costs are the medians over rounds, and ``per_round`` keeps each round's costs, so that a prediction can carry
    the calibration's spread (:func:`specdec.bench.rows.summarise`)."""
    max_k = as_int("max_k", max_k, minimum=0)
    rounds = as_int("rounds", rounds, minimum=1)
    target_timer = _ForwardTimer(target, context, range(1, max_k + 2), target_cache=target_cache, cuda_graphs=cuda_graphs, batch=batch)
    proposed = max(max_k, 1)
    if draft_model is not None:
        draft_timer = _ForwardTimer(draft_model, context, [1], batch=batch)
        draft_round = lambda: draft_timer.round()[1]  # noqa: E731
    elif draft_lookup is not None:
        lookup_timer = _LookupTimer(draft_lookup, context, proposed, batch)
        draft_round = lambda: lookup_timer.round() / proposed  # noqa: E731
    else:
        draft_round = lambda: 0.0  # noqa: E731
    per_round = []
    for number in range(rounds + 1):  # round 0 warms both up
        times, draft = target_timer.round(), draft_round()
        if number:
            per_round.append(StepCosts({k: times[k + 1] for k in range(max_k + 1)}, draft))
    return StepCosts({k: statistics.median(r.target_seconds[k] for r in per_round) for k in range(max_k + 1)},
                     statistics.median(r.draft_seconds_per_token for r in per_round), per_round=tuple(per_round))
