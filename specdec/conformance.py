"""The conformance engine: decide, with stated power and error rates, whether a
speculative verifier or decoder is lossless (SPEC §7).

Two public calls, one per level:

* :func:`check_verifier` - any function with :func:`specdec.verify_tokens`'
  signature ``(draft_tokens, draft_probs, target_probs, generator) -> VerifyResult``.
  Checks per case: the first emitted token vs the target (F4); acceptance vs the
  optimum 1 - TV (F1/F5: above it is impossible for a lossless verifier and
  fails; significantly below it is *lossless-suboptimal*, reported with both
  numbers); and, on chains of conditional tables, the first L tokens of a decoder
  driven by the verifier vs the exact chain law, localised by F36.
* :func:`check_decoder` - any ``decoder(prompts, max_new_tokens, seed) -> new-token
  lists``: the first L tokens after each prompt vs the exact law enumerated with
  the target model and the warpers (F35, EOS absorbing), localised by F36.

Every check: support check first (an outcome of probability 0 fails at once,
p = 0); bins pooled from expected counts only; Pearson's X^2 by default (G on
request) after pooling every cell that expects fewer than 5 counts (SPEC §7), and a
Monte-Carlo exact test (F31) when n is too small to leave two pooled bins (its
p-value cannot go below 1 / (B + 1), B = 200,000).  Sample size is planned before sampling (F32-F34)
to detect TV ``tv`` with power 0.99 at the Bonferroni level alpha / m (Holm's
first step; so power holds under Holm too), or fitted to ``time_budget`` seconds
from a timed pilot run; the report says which and the TV it then detects.  All
checks of one report share the family-wise alpha (default 1e-6) through Holm's
procedure.
"""

from __future__ import annotations

import json
import math
import time
import zlib
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from scipy import stats as sps

from .localize import prefix_decomposition
from .stats import detectable_tv, goodness_of_fit, holm, monte_carlo_gof, plan_sample_size, pool_bins

POWER = 0.99
MC_RESAMPLES = 200_000  # Monte-Carlo test (F31) when n is too small for two pooled bins


@dataclass
class Check:
    name: str
    level: str  # "first token", "acceptance", "chain sequences", "sequences"
    method: str
    statistic: float
    pvalue: float
    n: int
    cells: int
    detectable_tv: float | None  # TV caught with power 0.99 at the planning alpha; None where not a GOF test
    passed: bool = True
    location: str | None = None  # F36: where the deviation sits
    details: dict = field(default_factory=dict)


@dataclass
class Report:
    subject: str
    checks: list[Check]
    family_alpha: float
    plan: str  # how n was chosen and what it achieved
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def verdict(self) -> str:
        if not self.passed:
            return "FAIL"
        if any(c.details.get("suboptimal") for c in self.checks):
            return "lossless-suboptimal"
        return "lossless"

    def to_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict
        return out

    def to_json(self) -> str:
        def clean(value):
            if isinstance(value, float) and not math.isfinite(value):
                return str(value)
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            return value

        return json.dumps(clean(self.to_dict()), indent=2)

    def format(self) -> str:
        lines = [f"== {self.subject}: {self.verdict}  ({self.seconds:.1f} s; family-wise alpha {self.family_alpha:g}, Holm)"]
        lines.append(f"   {self.plan}")
        lines.append(f"   {'check':46s} {'n':>8s} {'cells':>5s} {'statistic':>10s} {'p-value':>9s} {'TV@.99':>7s}  verdict")
        for c in self.checks:
            tv = "" if c.detectable_tv is None else f"{c.detectable_tv:7.4f}"
            lines.append(
                f"   {c.name[:46]:46s} {c.n:8d} {c.cells:5d} {c.statistic:10.4g} {c.pvalue:9.3g} {tv:>7s}  "
                + ("pass" if c.passed else "FAIL")
                + (" (suboptimal)" if c.details.get("suboptimal") else "")
            )
            if c.location and not c.passed:
                lines.append(f"     where: {c.location}")
            if "acceptance" in c.details:
                lines.append(
                    f"     acceptance {c.details['acceptance']:.4f} vs optimum {c.details['optimum']:.4f} (1 - TV)"
                )
        lines.extend(f"   note: {note}" for note in self.notes)
        return "\n".join(lines)


# ------------------------------------------------------------------ planning and one GOF check


@dataclass(frozen=True)
class Plan:
    tv: float | None = 0.01  # deviation to detect; None when only a time budget is given
    time_budget: float | None = None  # seconds for the whole report's sampling
    family_alpha: float = 1e-6
    max_n: int = 2_000_000
    fixed_n: int | None = None  # the caller's sample size per check, overriding tv and time_budget

    def __post_init__(self):
        if self.fixed_n is not None and (isinstance(self.fixed_n, bool) or not isinstance(self.fixed_n, int) or self.fixed_n < 1):
            raise ValueError(f"n must be a positive integer, got {self.fixed_n!r}")
        if self.tv is None and self.time_budget is None and self.fixed_n is None:
            raise ValueError("give tv (the deviation to detect) or time_budget (seconds), or both")
        if self.tv is not None and not 0 < self.tv < 1:
            raise ValueError(f"tv must be in (0, 1), got {self.tv!r}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"time_budget must be > 0 seconds, got {self.time_budget!r}")
        if not 0 < self.family_alpha < 1:
            raise ValueError(f"family_alpha must be in (0, 1), got {self.family_alpha!r}")

    def sample_size(self, cells: int, num_checks: int, seconds_per_sample: float | None, share: float) -> int:
        """n for one check: planned for tv, capped by this check's share of the time budget."""
        if self.fixed_n is not None:
            return self.fixed_n
        alpha = self.family_alpha / num_checks
        n = plan_sample_size(max(cells, 2), self.tv, alpha=alpha, power=POWER) if self.tv is not None else self.max_n
        if self.time_budget is not None and seconds_per_sample:
            n = min(n, max(100, int(self.time_budget * share / seconds_per_sample)))
        return int(min(n, self.max_n))

    def describe(self, achieved: float | None) -> str:
        parts = []
        if self.fixed_n is not None:
            parts.append(f"n = {self.fixed_n} per check, fixed by the caller")
        elif self.tv is not None:
            parts.append(f"n planned to detect TV {self.tv:g} with power {POWER}")
        if self.time_budget is not None:
            parts.append(f"capped by a time budget of {self.time_budget:g} s")
        if achieved is not None:
            parts.append(f"worst detectable TV achieved {achieved:.4f}")
        return "; ".join(parts)


def _gof(name: str, level: str, ids, law, plan_alpha: float) -> Check:
    law = np.asarray(law, dtype=np.float64)
    cells = int((law > 0).sum())
    ids = np.asarray(ids, dtype=np.int64)
    invalid = (ids < 0) | (ids >= law.size)  # ids outside the vocabulary: one extra cell of probability 0
    law = np.append(law, 0.0)
    counts = np.bincount(np.where(invalid, law.size - 1, ids), minlength=law.size)
    n = int(counts.sum())
    if int(pool_bins(n * law).max()) >= 1 or counts[law <= 0].any():
        result = goodness_of_fit(counts, law)  # pooled so that every bin expects >= 5 (SPEC §7)
    else:  # too few samples for two pooled bins: Monte-Carlo exact test (F31), resolution 1 / (B + 1)
        result = monte_carlo_gof(counts, law, num_resamples=MC_RESAMPLES, seed=zlib.crc32(name.encode()))
    return Check(
        name=name,
        level=level,
        method=result.method + (" (support violated)" if result.support_violation else ""),
        statistic=result.statistic,
        pvalue=result.pvalue,
        n=n,
        cells=cells,
        detectable_tv=detectable_tv(max(cells, 2), max(n, 1), alpha=plan_alpha, power=POWER),
    )


def _finish(subject, checks, plan: Plan, started, notes=()) -> Report:
    rejected = holm([c.pvalue for c in checks], plan.family_alpha)
    for check, reject in zip(checks, rejected):
        check.passed = not reject
    tvs = [c.detectable_tv for c in checks if c.detectable_tv is not None]
    return Report(subject, checks, plan.family_alpha, plan.describe(max(tvs) if tvs else None), list(notes), time.perf_counter() - started)


# ------------------------------------------------------------------ verifier level


@dataclass(frozen=True)
class VerifierCase:
    """One position: the draft is drawn from draft_probs, the target row is target_probs (the bonus row too)."""

    name: str
    target_probs: torch.Tensor  # (V,) float64
    draft_probs: torch.Tensor  # (V,) float64


@dataclass(frozen=True)
class ChainCase:
    """Conditional tables p(. | prefix), q(. | prefix) from a seed: random peaked chains of vocabulary V."""

    name: str
    vocab: int
    num_draft: int
    length: int
    seed: int
    sharpness: float = 1.5

    def __post_init__(self):
        if self.vocab < 2 or self.num_draft < 0 or self.length < 1:
            raise ValueError(f"a chain needs vocab >= 2, num_draft >= 0, length >= 1; got {self}")

    @property
    def max_prefix(self) -> int:
        """Longest prefix the chain decoder looks up: finished rows keep stepping (ignored) up to L + K."""
        return self.length + self.num_draft

    def tables(self, role: str) -> torch.Tensor:
        """Rows for every prefix of length 0..max_prefix, flattened: prefix of length l, code c at offset(l) + c."""
        g = torch.Generator().manual_seed(zlib.crc32(repr((self.seed, role)).encode()))
        rows = self.offset(self.max_prefix + 1)
        return (self.sharpness * torch.randn(rows, self.vocab, generator=g, dtype=torch.float64)).softmax(-1)

    def offset(self, length):
        """Number of prefixes shorter than ``length`` (int or tensor): sum_{j < length} V^j."""
        return (self.vocab**length - 1) // (self.vocab - 1)


MAX_ELEMENTS_PER_CALL = 8_000_000  # rows x (K+1) x V per verifier call: bounds memory for large V


def _run_first_token(verifier, case: VerifierCase, n: int, generator: torch.Generator):
    """n independent one-position steps (K = 1): (first emitted token, accepted count), each (n,).

    Drafts come from torch's own sampler; rows go to the verifier in calls of at most
    ``MAX_ELEMENTS_PER_CALL`` probability entries."""
    vocab = case.target_probs.shape[0]
    rows_per_call = max(1, MAX_ELEMENTS_PER_CALL // (2 * vocab))
    firsts, accepts = [], []
    for start in range(0, n, rows_per_call):
        size = min(rows_per_call, n - start)
        drafts = torch.multinomial(case.draft_probs, size, replacement=True, generator=generator).unsqueeze(-1)
        result = verifier(drafts, case.draft_probs.expand(size, 1, vocab), case.target_probs.expand(size, 2, vocab), generator)
        firsts.append(result.tokens[:, 0])
        accepts.append(result.num_accepted)
    return torch.cat(firsts), torch.cat(accepts)


def _run_chain(verifier, case: ChainCase, n: int, generator: torch.Generator, target_t: torch.Tensor) -> torch.Tensor:
    """Decode the first L tokens of n independent rows with ``verifier`` on the chain; (n, L) tokens.

    ``target_t``: ``case.tables("target")``, computed once by the caller."""
    vocab, k, length = case.vocab, case.num_draft, case.length
    draft_t = case.tables("draft")
    out = torch.zeros((n, length + k + 1), dtype=torch.long)
    size = torch.zeros(n, dtype=torch.long)
    code = torch.zeros(n, dtype=torch.long)
    rows = torch.arange(n)
    while bool((size < length).any()):
        codes, tokens, draft_rows, target_rows = code.clone(), [], [], []
        for i in range(k + 1):
            index = case.offset(size + i) + codes
            target_rows.append(target_t[index])
            if i < k:
                draft_rows.append(draft_t[index])
                token = torch.multinomial(draft_rows[-1], 1, generator=generator).squeeze(-1)
                tokens.append(token)
                codes = codes * vocab + token
        draft_tokens = torch.stack(tokens, 1) if tokens else torch.zeros((n, 0), dtype=torch.long)
        draft_probs = torch.stack(draft_rows, 1) if draft_rows else torch.zeros((n, 0, vocab), dtype=torch.float64)
        result = verifier(draft_tokens, draft_probs, torch.stack(target_rows, 1), generator)
        accepted = result.num_accepted.cpu()
        emitted = result.tokens.cpu()
        for j in range(k + 1):
            take = (j <= accepted) & (size < length)
            out[rows[take], size[take]] = emitted[take, j]
            code = torch.where(take, code * vocab + emitted[:, j].clamp(0, vocab - 1), code)
            size = size + take.long()
    return out[:, :length]


def _chain_law(case: ChainCase, target_t: torch.Tensor) -> np.ndarray:
    """Exact law of the first L tokens (index = base-V code), from the target tables."""
    law = torch.ones(1, dtype=torch.float64)
    for t in range(case.length):
        rows = target_t[case.offset(t): case.offset(t) + case.vocab**t]  # (V^t, V)
        law = (law.unsqueeze(-1) * rows).reshape(-1)
    return law.numpy()


def default_verifier_cases() -> list[VerifierCase]:
    """A small default catalogue for the CLI; fixtures/catalogue.py holds the full one."""
    spec = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    g = torch.Generator().manual_seed(7)
    peaked_t = (3 * torch.randn(16, generator=g, dtype=torch.float64)).softmax(-1)
    peaked_d = (3 * torch.randn(16, generator=g, dtype=torch.float64)).softmax(-1)
    return [
        VerifierCase("spec_section3", spec(0.5, 0.3, 0.2), spec(0.2, 0.3, 0.5)),
        VerifierCase("peaked_v16", peaked_t, peaked_d),
        VerifierCase("equal_v4", spec(0.1, 0.2, 0.3, 0.4), spec(0.1, 0.2, 0.3, 0.4)),
        VerifierCase("disjoint_v4", spec(0.5, 0.5, 0, 0), spec(0, 0, 0.25, 0.75)),
    ]


def default_chain_cases() -> list[ChainCase]:
    return [ChainCase("chain V=4 K=2 L=3", vocab=4, num_draft=2, length=3, seed=1)]


def check_verifier(
    verifier,
    *,
    name: str | None = None,
    cases: list[VerifierCase] | None = None,
    chains: list[ChainCase] | None = None,
    tv: float | None = 0.01,
    time_budget: float | None = None,
    family_alpha: float = 1e-6,
    seed: int = 0,
    n: int | None = None,
) -> Report:
    """Conformance report of a token-level verifier (see the module docstring).

    Sample size per check: planned for ``tv``, capped by ``time_budget`` seconds
    (measured with a pilot run), or fixed by ``n``.
    """
    if not callable(verifier):
        raise TypeError(f"verifier must be callable, got {type(verifier).__name__}")
    started = time.perf_counter()
    cases = default_verifier_cases() if cases is None else cases
    chains = default_chain_cases() if chains is None else chains
    plan = Plan(tv, time_budget, family_alpha, fixed_n=n)
    num_checks = 2 * len(cases) + len(chains)
    plan_alpha = family_alpha / num_checks
    generator = torch.Generator().manual_seed(seed)
    pilot = _pilot(lambda m: _run_first_token(verifier, cases[0], m, generator)) if time_budget and cases else None
    share = 1 / max(len(cases) + len(chains) * 3, 1)
    checks: list[Check] = []
    for case in cases:
        vocab = case.target_probs.shape[0]
        size = plan.sample_size(vocab, num_checks, pilot, share)
        first, accepted = _run_first_token(verifier, case, size, generator)
        checks.append(_gof(f"{case.name}: first token vs target (F4)", "first token", first.cpu(), case.target_probs, plan_alpha))
        checks.append(_acceptance_check(case, accepted, plan_alpha))
    for chain in chains:
        target_t = chain.tables("target")
        law = _chain_law(chain, target_t)
        size = plan.sample_size(law.size, num_checks, pilot * (chain.length + 1) if pilot else None, 3 * share)
        tokens = _run_chain(verifier, chain, size, generator, target_t)
        codes = torch.zeros(size, dtype=torch.long)
        for t in range(chain.length):
            codes = codes * chain.vocab + tokens[:, t].clamp(0, chain.vocab - 1)
        codes[((tokens < 0) | (tokens >= chain.vocab)).any(1)] = -1  # outside the vocabulary: support violation
        check = _gof(f"{chain.name}: first {chain.length} tokens vs chain law", "chain sequences", codes, law, plan_alpha)
        localization = prefix_decomposition(
            [tuple(row) for row in tokens.tolist()],
            lambda prefix: target_t[chain.offset(len(prefix)) + _code(prefix, chain.vocab)].tolist(),
        )
        check.location = localization.describe()
        checks.append(check)
    return _finish(name or getattr(verifier, "__name__", repr(verifier)), checks, plan, started)


def _code(prefix, vocab) -> int:
    code = 0
    for token in prefix:
        code = code * vocab + token
    return code


def _acceptance_check(case: VerifierCase, accepted: torch.Tensor, plan_alpha: float) -> Check:
    """Acceptance vs the optimum 1 - TV (F1, F5): exact binomial tests, above = FAIL, below = suboptimal."""
    optimum = float(torch.minimum(case.target_probs, case.draft_probs).sum())
    n, hits = int(accepted.numel()), int((accepted > 0).sum())
    above = float(sps.binomtest(hits, n, min(optimum, 1.0), alternative="greater").pvalue) if optimum < 1 else 1.0
    below = float(sps.binomtest(hits, n, optimum, alternative="less").pvalue) if optimum > 0 else 1.0
    return Check(
        name=f"{case.name}: acceptance <= optimum 1 - TV",
        level="acceptance",
        method="exact binomial (greater)",
        statistic=hits / n,
        pvalue=above,
        n=n,
        cells=2,
        detectable_tv=None,
        details={"acceptance": hits / n, "optimum": optimum, "suboptimal": below < plan_alpha, "p_below": below},
    )


def _pilot(run, size: int = 200) -> float:
    """Seconds per sample of ``run(size)`` (second call; the first warms up)."""
    run(min(size, 20))
    started = time.perf_counter()
    run(size)
    return (time.perf_counter() - started) / size


# ------------------------------------------------------------------ decoder level


def check_decoder(
    decoder,
    target,
    prompts: list[list[int]],
    *,
    length: int = 3,
    sampling=None,
    eos_token_id=None,
    name: str | None = None,
    tv: float | None = 0.01,
    time_budget: float | None = None,
    family_alpha: float = 1e-6,
    seed: int = 0,
    chunk: int = 4096,
    n: int | None = None,
) -> Report:
    """Conformance report of a decoder: the first ``length`` tokens after each prompt vs the exact target law.

    Samples per prompt: planned for ``tv``, capped by ``time_budget`` seconds, or fixed by ``n``.
    """
    from .sequence_law import sequence_law
    from .warpers import SamplingConfig

    if not callable(decoder):
        raise TypeError(f"decoder must be callable, got {type(decoder).__name__}")
    if not prompts:
        raise ValueError("prompts must hold at least one prompt")
    started = time.perf_counter()
    sampling = SamplingConfig() if sampling is None else sampling
    plan = Plan(tv, time_budget, family_alpha, fixed_n=n)
    laws = [sequence_law(target, p, length, sampling=sampling, eos_token_id=eos_token_id) for p in prompts]
    num_checks = len(prompts) + int(_acceptance_applies(decoder))
    plan_alpha = family_alpha / num_checks
    pilot = _pilot(lambda m: decoder([prompts[0]] * m, length, seed + 10**6), size=50) if time_budget else None
    size = max(plan.sample_size(len(law.sequences), num_checks, pilot * len(prompts) if pilot else None, 1.0) for law in laws)
    per_prompt = decode_samples(decoder, prompts, size, length, seed=seed, chunk=chunk)
    extra = _acceptance_applies(decoder)  # our loop with a model draft: also F28
    eos = frozenset() if eos_token_id is None else frozenset([eos_token_id] if isinstance(eos_token_id, int) else eos_token_id)
    checks = []
    for i, (prompt, law, samples) in enumerate(zip(prompts, laws, per_prompt)):
        lookup = {s: j for j, s in enumerate(law.sequences)}
        ids = [lookup.get(s, -1) for s in samples]
        check = _gof(f"prompt {i} (len {len(prompt)}): first {length} tokens", "sequences", ids, law.probs, plan_alpha)
        localization = prefix_decomposition(samples, _conditional(law), terminal=eos)
        check.location = localization.describe()
        checks.append(check)
    notes = [f"{len(prompts)} prompt(s) interleaved in every decoder call of up to {chunk} rows"]
    if extra:
        checks.append(acceptance_check(decoder, target, prompts, length=length, seed=seed + 10**7))
    return _finish(name or getattr(decoder, "__name__", type(decoder).__name__), checks, plan, started, notes)


def _acceptance_applies(decoder) -> bool:
    """F26-F28 need the draft's law at every context: our loop with a model draft and the token verifier."""
    from .drafts import ModelDraft
    from .generate import SpeculativeDecoder

    return isinstance(decoder, SpeculativeDecoder) and isinstance(decoder.draft, ModelDraft) and decoder.verifier == "token"


@torch.no_grad()
def acceptance_check(decoder, target, prompts, *, length: int, seed: int, rows: int = 256) -> Check:
    """(F28) Z = sum_k (T_k - mu(c_k)) / sqrt(sum_k sigma^2(c_k)) over the steps of one run.

    T_k = accepted + 1 at step k; mu and sigma^2 from the exact profile at the step's
    context c_k (F26, F27), with the target's and the draft's warped laws in float64.
    Approximately N(0, 1) for a correct decoder (martingale CLT); two-sided p-value.
    """
    from .exact import acceptance_profile, tokens_per_step_moments
    from .warpers import warped_probs

    batch = [p for _ in range(max(1, rows // len(prompts))) for p in prompts]
    outputs = decoder(batch, length, seed)
    result = decoder.last_result
    draft = decoder.draft
    laws = {}

    def law(model, sampling, greedy, context):
        key = (id(model), context)
        if key not in laws:
            logits = model(input_ids=torch.tensor([context], device=next(model.parameters()).device)).logits[0, -1]
            if greedy:
                laws[key] = torch.nn.functional.one_hot(logits.argmax(), logits.shape[-1]).double().cpu()
            else:
                laws[key] = warped_probs(logits.double(), sampling, dtype=torch.float64).cpu()
        return laws[key]

    draft_sampling = draft.own_sampling or decoder.sampling
    done = [0] * len(batch)
    deviation = variance = 0.0
    steps = 0
    for step in result.steps:
        for i, row in enumerate(step.rows):
            context = tuple(batch[row]) + tuple(outputs[row][: done[row]])
            profile = acceptance_profile(
                lambda prefix: law(target, decoder.sampling, False, context + prefix),
                lambda prefix: law(draft.model, draft_sampling, draft.greedy, context + prefix),
                step.num_draft,
            )
            mean, _, var = tokens_per_step_moments(profile)
            deviation += step.num_accepted[i] + 1 - mean
            variance += var
            done[row] += step.num_emitted[i]
            steps += 1
    z = deviation / math.sqrt(variance) if variance > 0 else (0.0 if abs(deviation) < 1e-9 else math.inf)
    pvalue = float(2 * sps.norm.sf(abs(z)))
    measured = sum(a + 1 for s in result.steps for a in s.num_accepted) / max(steps, 1)
    return Check(
        name="acceptance vs exact expectation (F26-F28)",
        level="acceptance",
        method="z (martingale CLT)",
        statistic=z,
        pvalue=pvalue,
        n=steps,
        cells=0,
        detectable_tv=None,
        details={"tokens_per_step": measured, "expected_tokens_per_step": measured - deviation / max(steps, 1)},
    )


def decode_samples(decoder, prompts, n: int, length: int, *, seed: int, chunk: int = 4096) -> list[list[tuple[int, ...]]]:
    """n outputs of ``length`` tokens per prompt, prompts interleaved in calls of at most ``chunk`` rows
    (so rows of different lengths share every batch); call c uses seed + c.  One list per prompt."""
    rows = [p for _ in range(n) for p in prompts]
    outputs: list[list[int]] = []
    for call, start in enumerate(range(0, len(rows), chunk)):
        outputs.extend(decoder(rows[start:start + chunk], length, seed + call))
    if len(outputs) != len(rows):
        raise ValueError(f"decoder returned {len(outputs)} outputs for {len(rows)} prompts")
    return [[tuple(o) for o in outputs[i::len(prompts)]] for i in range(len(prompts))]


def _conditional(law):
    """p(x | prefix) from an enumerated sequence law (marginals of prefixes)."""
    mass: dict[tuple, float] = {}
    for sequence, p in zip(law.sequences, law.probs):
        for t in range(len(sequence) + 1):
            mass[sequence[:t]] = mass.get(sequence[:t], 0.0) + float(p)
    vocab = 1 + max((max(s) for s in law.sequences if s), default=0)

    def conditional(prefix):
        total = mass.get(prefix, 0.0)
        return [mass.get(prefix + (x,), 0.0) / total if total > 0 else 0.0 for x in range(vocab)]

    return conditional
