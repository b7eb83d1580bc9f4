"""F23 across the whole acceptance range (issue 33): our loop with a synthetic acceptance, for timing only.

A real draft gives whatever acceptance its prompts give (0-0.95 across task kinds, few points between), so F23 has
been compared with measurement only there.  Here the acceptance is set:

* :class:`SyntheticAcceptance` - a TokenVerifier that keeps each draft with probability ``rate``, independently
  (F22's i.i.d. model exactly), and emits a draw of the target's row after the last kept draft.  **Lossy** whatever
  the laws (it never reads the draft's law): marked ``timing_only``, so every conformance check refuses it
  (:func:`specdec.conformance.calls.refuse_timing_only`);
* :class:`RepeatDraft` - a draft of K copies of each row's last token, at a cost near nothing (rho ~ 0), so that every
  step drafts exactly K;
* :func:`sweep` - for each batch size, the costs calibrated at that batch (:func:`specdec.bench.costs.calibrate`), then
  for each K and acceptance, paired rounds of our loop at K = 0 and with the synthetic verifier: one
  :class:`specdec.bench.rows.Row` per point, its measured speedup beside F23 end to end (the prediction reads the
  acceptance the steps really had, the measured costs and the prefill share of the same rounds).

Run by ``python -m scripts.synthetic_sweep`` (``make bench-synthetic``).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import torch

from .._validation import as_int, as_probability
from ..decoding import Proposal, generate
from ..verify.result import VerifyResult
from ..warpers import SamplingConfig
from .clock import StepClock, timed
from .costs import calibrate
from .rows import Round, Row, summarise

__all__ = ["RepeatDraft", "SyntheticAcceptance", "sweep"]

SAMPLING = SamplingConfig(temperature=1.0)
SEED = 0


class SyntheticAcceptance:
    """Keeps draft i of a row when draft 1..i-1 were kept and one uniform is below ``rate`` (F22's i.i.d. acceptance),
    then draws the row's next token from the target's law after the kept drafts (inverse CDF, one uniform).  Timing
    only: the output law is not the target's (``timing_only``; every conformance check refuses it)."""

    timing_only = True
    timing_only_why = "it keeps each draft with a set probability, whatever the target's and the draft's laws"

    def __init__(self, rate: float) -> None:
        self.rate = as_probability("rate", rate)

    def __call__(self, draft_tokens, draft_probs, target_probs, generator, *, pad_id: int = -1, **_ignored) -> VerifyResult:
        batch, k = draft_tokens.shape
        device = target_probs.device
        uniforms = torch.rand((batch, k + 1), generator=generator, dtype=torch.float64, device=device)
        kept = (uniforms[:, :k] < self.rate).long()
        accepted = torch.cumprod(kept, dim=1).sum(dim=1) if k else torch.zeros(batch, dtype=torch.long, device=device)
        rows = target_probs[torch.arange(batch, device=device), accepted].double()  # (B, V): the law after the kept drafts
        cdf = rows.cumsum(dim=-1)
        last = torch.searchsorted(cdf, (uniforms[:, k:] * cdf[:, -1:]).contiguous()).clamp_(max=rows.shape[-1] - 1).squeeze(1)
        positions = torch.arange(k + 1, device=device).expand(batch, k + 1)
        tokens = torch.full((batch, k + 1), pad_id, dtype=torch.long, device=device)
        tokens[:, :k] = torch.where(positions[:, :k] < accepted[:, None], draft_tokens.long(), tokens[:, :k])
        tokens[torch.arange(batch, device=device), accepted] = last
        return VerifyResult(accepted, tokens)

    def __repr__(self) -> str:
        return f"SyntheticAcceptance(rate={self.rate:g})"


class RepeatDraft:
    """K copies of each row's last token: a draft whose cost is a tensor of ids (rho ~ 0), drafting K every step."""

    vocab_size = None

    def proposal_law(self, sampling) -> None:
        return None

    def start(self, contexts, *, sampling, prob_dtype, device) -> None:
        self._device = torch.device(device)

    def propose(self, contexts, num_tokens, generator) -> Proposal:
        rows = [[context[-1]] * num_tokens for context in contexts]
        return Proposal(torch.tensor(rows, dtype=torch.long, device=self._device).reshape(len(contexts), num_tokens), None)

    def rollback(self, keep) -> None:
        """Nothing to roll back."""

    def select(self, rows) -> None:
        """Nothing to select."""


def _side(target, prompts, new_tokens: int, k: int, rate: float | None, seed: int, device) -> tuple[float, float, list]:
    """(seconds, seconds to the first token, steps as (K, accepted) per row-step) of one call of our loop."""
    clock = StepClock(device)
    clock.start()
    verifier = "token" if rate is None else SyntheticAcceptance(rate)
    seconds, result = timed(lambda: generate(target, RepeatDraft() if k else None, [list(p) for p in prompts], max_new_tokens=new_tokens,
                                             num_draft_tokens=k, sampling=SAMPLING, seed=seed, verifier=verifier, on_step=clock), device)
    steps = [(s.num_draft_tokens, a) for s in result.steps for a in s.num_accepted]
    return seconds, clock.ttft, steps


def sweep(target, prompts_by_batch: dict[int, Sequence[Sequence[int]]], *, rates: Sequence[float], ks: Sequence[int], new_tokens: int = 24,
          rounds: int = 3, context: Sequence[int] | None = None, progress: Callable[[str], None] = print) -> list[Row]:
    """One row per (batch, K, rate): ``rounds`` paired rounds (K = 0 first, then the synthetic verifier) of the prompts
    of that batch size, summarised with the costs calibrated at that batch on ``context`` (default: the first prompt)."""
    rates = [as_probability("rates[]", r) for r in rates]
    ks = [as_int("ks[]", k, minimum=1) for k in ks]
    new_tokens, rounds = as_int("new_tokens", new_tokens, minimum=2), as_int("rounds", rounds, minimum=1)
    device = next(target.parameters()).device
    rows: list[Row] = []
    points = len(prompts_by_batch) * len(ks) * len(rates)
    started = time.perf_counter()
    for batch, prompts in prompts_by_batch.items():
        costs = calibrate(target, list(context or prompts[0]), max(ks), draft_lookup=RepeatDraft(), batch=batch)
        for k in ks:  # one untimed call of each side at every K first: the shapes a point will run, warmed up
            _side(target, prompts, new_tokens, 0, None, 0, device)
            _side(target, prompts, new_tokens, k, 0.5, 0, device)
        for k in ks:
            for rate in rates:
                measured = []
                for _ in range(rounds):  # one seed for every round: each round repeats the acceptance its steps record
                    base, base_ttft, _ = _side(target, prompts, new_tokens, 0, None, SEED, device)
                    spec, spec_ttft, steps = _side(target, prompts, new_tokens, k, rate, SEED, device)
                    measured.append(Round(base, spec, steps=steps, ttft=[spec_ttft], baseline_ttft=[base_ttft]))
                row = summarise(f"synthetic-a{rate:g}-K{k}", f"B{batch}", measured, costs, generated_tokens=batch * new_tokens,
                                subject={"subject": "ours (synthetic acceptance)", "batch": batch, "prompts": len(prompts),
                                         "new_tokens": new_tokens}, num_draft_tokens=k)
                rows.append(row)
                progress(f"[{len(rows)}/{points}] B={batch} K={k} alpha={rate:g}: measured {row.speedup['median']:.2f}x, "
                         f"predicted {row.predicted:.2f}x, efficiency {row.efficiency:.2f} ({time.perf_counter() - started:.0f} s)")
    return rows
