"""Measured costs for F23's general form: a target pass over K + 1 tokens and one draft step.

After a real context is in the decoding loop's KV cache (dynamic or static), :func:`forward_costs`
times one cached forward of ``width`` tokens for each width, interleaved round by round, rolling
the cache back after each call so every call sees the same context.  Ratios of these medians are the
verify term v(K) = T_target(K + 1) / T_target(1) and rho = T_draft(1) / T_target(1).
:func:`lookup_cost` times prompt lookup (a host-side scan) the same way.
"""

from __future__ import annotations

import statistics

import torch

from .._validation import as_int
from ..laws.speedup import StepCosts  # noqa: F401 - re-exported: calibrate returns it
from .clock import timed


@torch.no_grad()
def forward_costs(model, context: list[int], widths, *, rounds: int = 5, target_cache="dynamic",
                  cuda_graphs: bool = False, batch: int = 1) -> dict[int, float]:
    """Median seconds of one cached forward over ``width`` new tokens after ``context``, per width,
    through the loop's own cache (``target_cache`` "dynamic", "static" or a StaticKVCache to reuse,
    as in ``generate``; a reused one keeps the graphs captured here).  ``batch``: rows fed together,
    each with ``context`` (a verify pass of a batch of B rows: the batch-dependent cost of F24's v_B(K))."""
    from .._hf import model_device
    from ..decoding.kvcache import RaggedCache
    from ..decoding.static_cache import static_cache_for_call

    rounds = as_int("rounds", rounds, minimum=1)
    widths = [as_int("width", w, minimum=1) for w in widths]
    batch = as_int("batch", batch, minimum=1)
    device = model_device(model)
    if isinstance(target_cache, str) and target_cache == "dynamic":
        cache = RaggedCache(model, batch, device)
    else:
        cache = static_cache_for_call(target_cache, model, batch, device, len(context) + max(widths) + 1, cuda_graphs)
    cache.feed([list(context)] * batch)
    keep = torch.tensor([len(context)] * batch, device=device)
    times: dict[int, list[float]] = {w: [] for w in widths}
    for round_ in range(rounds + 1):  # round 0 warms every width up (and captures its graph)
        for width in widths:
            chunk = torch.full((batch, width), int(context[-1]), device=device)
            counts = torch.tensor([width] * batch, device=device)
            seconds, _ = timed(lambda: cache.feed_tensor(chunk, counts), device)
            cache.rollback(keep)
            if round_:
                times[width].append(seconds)
    return {w: statistics.median(ts) for w, ts in times.items()}


def lookup_cost(draft, context: list[int], num_tokens: int, *, rounds: int = 5, batch: int = 1) -> float:
    """Median seconds of one prompt-lookup proposal of ``num_tokens`` after ``context`` for ``batch`` rows."""
    contexts = [list(context)] * as_int("batch", batch, minimum=1)
    draft.start(contexts, sampling=None, prob_dtype=torch.float32, device=torch.device("cpu"))
    times = [timed(lambda: draft.propose(contexts, num_tokens, None), torch.device("cpu"))[0] for _ in range(rounds + 1)]
    return statistics.median(times[1:])


def calibrate(target, context: list[int], max_k: int, *, draft_model=None, draft_lookup=None, rounds: int = 5,
              target_cache="dynamic", cuda_graphs: bool = False, batch: int = 1) -> StepCosts:
    """Target costs for K = 0..max_k (through ``target_cache``) and the draft cost per token (a model's
    cached step, or a lookup), for a step over ``batch`` rows (F24 with a batch-dependent verify cost)."""
    max_k = as_int("max_k", max_k, minimum=0)
    target_times = forward_costs(target, context, range(1, max_k + 2), rounds=rounds, target_cache=target_cache,
                                 cuda_graphs=cuda_graphs, batch=batch)
    if draft_model is not None:
        per_token = forward_costs(draft_model, context, [1], rounds=rounds, batch=batch)[1]
    elif draft_lookup is not None:
        per_token = lookup_cost(draft_lookup, context, max(max_k, 1), rounds=rounds, batch=batch) / max(max_k, 1)
    else:
        per_token = 0.0
    return StepCosts({k: target_times[k + 1] for k in range(max_k + 1)}, per_token)
