"""The end-to-end benchmark's configurations and its paired rounds (issue 12).

A configuration is a draft source, a draft length (K or adaptive) and a temperature.
One test measures one configuration on one task kind: each round decodes the kind's
prompts autoregressively (our loop with K = 0) in pytest-benchmark's untimed ``setup``,
then speculatively as the timed ``target`` - so the time pytest-benchmark stores under
the test's name is the speculative decoding it names, and the paired autoregressive time
of the same round lands in ``extra_info``.  Both sides generate exactly ``new_tokens``
tokens per prompt (EOS is an ordinary token on both: the same stop rule).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import torch

from specdec.bench.breakdown import step_breakdown
from specdec.bench.clock import StepClock, pin_threads, timed
from specdec.bench.costs import CALIBRATION_ROUNDS, StepCosts, calibrate
from specdec.bench.memory import PeakMemory
from specdec.workload.prompts import KINDS, PROMPTS, prompt_ids
from specdec.bench.rows import Round
from specdec.decoding import AdaptiveDraftLength, ModelDraft, NgramDraft, StaticKVCache, generate
from specdec.warpers import SamplingConfig

MAX_K = 8
SWEEP_K = (1, 2, 4, 8, "adaptive")
NO_EOS = None  # no stop token: both sides generate exactly new_tokens tokens


@dataclass(frozen=True)
class Config:
    draft: str  # "lookup-n2", "lookup-n3", "model-greedy", "model-sampled"
    k: int | str  # K, or "adaptive"
    temperature: float
    cache: str = "dynamic"  # the target's KV cache on both sides: "dynamic" or "static" (CUDA graphs on CUDA)

    @property
    def name(self) -> str:
        mode = "greedy" if self.temperature == 0 else f"T{self.temperature:g}"
        k = "Kadapt" if self.k == "adaptive" else f"K{self.k}"
        return f"{self.draft}-{k}-{mode}" + ("-static" if self.cache == "static" else "")

    @property
    def sampling(self) -> SamplingConfig:
        return SamplingConfig(temperature=self.temperature)

    @property
    def cost_key(self) -> str:
        return ("model" if self.draft.startswith("model") else self.draft) + ("-static" if self.cache == "static" else "")


def default_grid() -> list[Config]:
    """What ``make bench`` runs in about 12 minutes on a 2-core CPU (README): the K sweep (2, 4, 8 and
    adaptive) for greedy prompt lookup, and K = 4 for sampled lookup and both model drafts."""
    grid = [Config("lookup-n3", k, 0.0) for k in SWEEP_K if k != 1]
    return grid + [Config("lookup-n3", 4, 0.7), Config("model-greedy", 4, 0.0), Config("model-sampled", 4, 0.7)]


def full_grid() -> list[Config]:
    """Every draft source x K in {1, 2, 4, 8, adaptive} x temperature where the pair means something."""
    pairs = [("lookup-n2", 0.0), ("lookup-n2", 0.7), ("lookup-n3", 0.0), ("lookup-n3", 0.7),
             ("model-greedy", 0.0), ("model-greedy", 0.7), ("model-sampled", 0.7)]
    return [Config(d, k, t) for d, t in pairs for k in SWEEP_K]


STATIC_GRID = [Config("lookup-n3", 4, 0.0, cache="static")]  # the static-cache regime on CPU, on STATIC_KINDS
STATIC_KINDS = ("qa", "retrieval")
CUDA_STATIC_GRID = [Config("lookup-n3", k, 0.0, cache="static") for k in SWEEP_K if k != 1]  # on CUDA: graphs, every kind
PEER_GRID = [Config("lookup-n3", 4, 0.0), Config("model-greedy", 4, 0.0)]
FULL_PEER_GRID = PEER_GRID + [Config("lookup-n2", 4, 0.0), Config("lookup-n3", 4, 0.7), Config("model-sampled", 4, 0.7),
                              Config("model-greedy", "adaptive", 0.0)]


@dataclass(frozen=True)
class Plan:
    new_tokens: int
    rounds: int
    prompts: int
    device: torch.device


class Workbench:
    """Models, prompts and calibrated costs for one session (built lazily, cached)."""

    def __init__(self, device: torch.device, threads: int | None, max_new_tokens: int,
                 calibration_rounds: int = CALIBRATION_ROUNDS) -> None:
        """``calibration_rounds``: the fewest rounds of each cost calibration (the test suite, which times nothing,
        asks 2: the spread's code path with a tenth of the forwards)."""
        from fixtures.models import smollm2

        self.device = device
        self.calibration_rounds = calibration_rounds
        self.max_new_tokens = max_new_tokens
        self.threads = pin_threads(threads) if device.type == "cpu" else torch.get_num_threads()
        model, self.tokenizer = smollm2()
        self.target = model.to(device)
        self._costs: dict[str, StepCosts] = {}

    @functools.cached_property
    def draft_model(self):
        """SmolLM2 in bfloat16: the same network at half the bytes (this project has no smaller model)."""
        return copy.deepcopy(self.target).to(torch.bfloat16)

    @functools.cached_property
    def static_cache(self) -> StaticKVCache:
        """The target's static KV cache, one per session: graphs captured once (in calibration) serve
        every later call, as in a serving engine."""
        longest = max(len(p) for kind in KINDS for p in self.prompts(kind, len(PROMPTS[kind])))
        return StaticKVCache(self.target, 1, self.device, max_length=longest + self.max_new_tokens + MAX_K + 1,
                             cuda_graphs=self.device.type == "cuda")

    def target_cache(self, config: Config):
        return self.static_cache if config.cache == "static" else "dynamic"

    @functools.lru_cache(maxsize=None)
    def prompts(self, kind: str, count: int) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(p) for p in prompt_ids(self.tokenizer, kind, count))

    def costs(self, key: str, rounds: int) -> StepCosts:
        """Target pass costs for K = 0..MAX_K and the draft's cost per token, calibrated once per draft kind (at least
        ``calibration_rounds`` interleaved rounds: each row's prediction carries their spread)."""
        if key not in self._costs:
            context = list(self.prompts("summarisation", 1)[0])
            draft = key.removesuffix("-static")
            kwargs = {"draft_model": self.draft_model} if draft == "model" else {"draft_lookup": self.draft_source(draft)}
            cache = self.static_cache if key.endswith("-static") else "dynamic"
            self._costs[key] = calibrate(self.target, context, MAX_K, rounds=max(rounds, self.calibration_rounds), target_cache=cache, **kwargs)
        return self._costs[key]

    def draft_source(self, draft: str):
        if draft.startswith("lookup"):
            return NgramDraft(max_ngram_size=int(draft[-1]))
        return ModelDraft(self.draft_model, greedy=draft == "model-greedy")

    def draft_length(self, config: Config, rounds: int):
        if config.k != "adaptive":
            return config.k
        costs = self.costs(config.cost_key, rounds)
        return AdaptiveDraftLength(MAX_K, draft_step_ratio=costs.draft_step_ratio, verify_cost_ratios=costs.verify_cost_ratios)

    def decode(self, prompt, config: Config, new_tokens: int, clock: StepClock, draft_length):
        """One generation of exactly ``new_tokens`` with ``config``'s sampling; autoregressive when draft_length is None."""
        draft = None if draft_length is None else self.draft_source(config.draft)
        clock.start()
        return generate(self.target, draft, [list(prompt)], max_new_tokens=new_tokens, num_draft_tokens=draft_length or 0,
                        sampling=config.sampling, eos_token_id=NO_EOS, seed=0, on_step=clock,
                        target_cache=self.target_cache(config))


def run_side(bench: Workbench, prompts, config: Config, plan: Plan, draft_length=None):
    """Decode every prompt once (autoregressively when ``draft_length`` is None); (seconds, peak bytes, results, clocks)."""
    results, clocks, peak = [], [], None
    seconds = 0.0
    for prompt in prompts:
        clock = StepClock(plan.device)
        with PeakMemory(plan.device) as memory:
            elapsed, result = timed(lambda: bench.decode(prompt, config, plan.new_tokens, clock, draft_length), plan.device)
        seconds += elapsed
        if memory.bytes is not None:
            peak = max(peak or 0, memory.bytes)
        results.append(result)
        clocks.append(clock)
    return seconds, peak, results, clocks


def breakdown_run(bench: Workbench, prompt, config: Config, plan: Plan, draft_length) -> dict:
    """Per-phase milliseconds per step of one extra speculative decode of ``prompt`` under a phase timer,
    untimed by pytest-benchmark and after the timed rounds (its clock reads never touch them)."""
    return step_breakdown(bench.target, bench.draft_source(config.draft), [list(prompt)], max_new_tokens=plan.new_tokens,
                          num_draft_tokens=draft_length, sampling=config.sampling, seed=0,
                          target_cache=bench.target_cache(config))


__all__ = ["CALIBRATION_ROUNDS", "CUDA_STATIC_GRID", "Config", "KINDS", "PEER_GRID", "STATIC_GRID", "STATIC_KINDS", "Plan", "Round", "Workbench", "default_grid", "full_grid", "run_side"]
