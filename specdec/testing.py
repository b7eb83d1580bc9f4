"""Planned statistical checks for test suites (SPEC §7), shared by this project and third parties.

:class:`StatChecks` holds a family-wise false-alarm budget: every check of a run
uses level ``alpha_per_check = family_alpha / max_checks``, so a correct decoder
fails a whole run with probability <= ``family_alpha`` (Bonferroni).  A run that
makes more checks than ``max_checks`` fails loudly instead of spending more alpha.

Usage (the ``stat_checks`` fixture of the pytest plugin is one of these)::

    n = stat_checks.plan(num_cells=V, tv=0.02)           # before sampling
    samples = my_sampler(n)                               # ids in [0, V)
    stat_checks.assert_follows(samples, exact_law, label="my case")
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .stats import GofResult, detectable_tv, goodness_of_fit, plan_sample_size


@dataclass
class CheckRecord:
    label: str
    n: int
    cells: int  # cells with positive probability
    alpha: float
    detectable_tv: float  # TV caught with power `power` at this n
    result: GofResult

    @property
    def passed(self) -> bool:
        return self.result.pvalue > self.alpha


@dataclass
class StatChecks:
    family_alpha: float = 1e-6
    max_checks: int = 200
    power: float = 0.99
    records: list[CheckRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (0 < self.family_alpha < 1):
            raise ValueError(f"family_alpha must be in (0, 1), got {self.family_alpha!r}")
        if not (isinstance(self.max_checks, int) and self.max_checks >= 1):
            raise ValueError(f"max_checks must be an integer >= 1, got {self.max_checks!r}")

    @property
    def alpha_per_check(self) -> float:
        return self.family_alpha / self.max_checks

    def plan(self, *, num_cells: int, tv: float) -> int:
        """Sample size that detects TV ``tv`` over ``num_cells`` cells with ``power`` (F34)."""
        return plan_sample_size(max(int(num_cells), 2), tv, alpha=self.alpha_per_check, power=self.power)

    def assert_follows(self, samples, law, *, label: str, method: str = "pearson") -> CheckRecord:
        """Assert that integer ``samples`` (ids into ``law``) follow the exact ``law``."""
        if len(self.records) >= self.max_checks:
            raise AssertionError(
                f"statistical budget exhausted: more than max_checks={self.max_checks} checks in one run; "
                "raise --specdec-max-checks (which lowers each check's alpha)"
            )
        law = np.asarray(law.cpu() if isinstance(law, torch.Tensor) else law, dtype=np.float64).ravel()
        ids = np.asarray(samples.cpu() if isinstance(samples, torch.Tensor) else samples).ravel()
        if ids.size and (ids.min() < 0 or ids.max() >= law.size):
            raise AssertionError(f"{label}: sample ids outside [0, {law.size}): min {ids.min()}, max {ids.max()}")
        counts = np.bincount(ids, minlength=law.size)
        result = goodness_of_fit(counts, law, method=method)
        cells = int((law > 0).sum())
        record = CheckRecord(
            label=label,
            n=result.n,
            cells=cells,
            alpha=self.alpha_per_check,
            detectable_tv=detectable_tv(max(cells, 2), max(result.n, 1), alpha=self.alpha_per_check, power=self.power),
            result=result,
        )
        self.records.append(record)
        if not record.passed:
            raise AssertionError(
                f"{label}: samples do not follow the exact law: {result.describe()}; "
                f"alpha={record.alpha:.3g}, cells={cells}, detectable TV={record.detectable_tv:.4f} at power {self.power}"
            )
        return record

    def summary_lines(self) -> list[str]:
        lines = [f"{'check':60s} {'n':>9s} {'cells':>6s} {'alpha':>8s} {'TV@.99':>7s} {'p-value':>9s}"]
        for r in self.records:
            lines.append(
                f"{r.label[:60]:60s} {r.n:9d} {r.cells:6d} {r.alpha:8.1e} {r.detectable_tv:7.4f} {r.result.pvalue:9.3g}"
                + ("" if r.passed else "  FAIL")
            )
        return lines


def sample_one_step(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor | None,
    n: int,
    generator: torch.Generator,
    *,
    bonus_probs: torch.Tensor | None = None,
    draft_token: int | None = None,
    verifier=None,
):
    """Run ``n`` independent K=1 verification steps of one (target, draft) pair.

    target_probs, draft_probs: (V,) - the draft is drawn from ``draft_probs`` with
    ``generator``; pass ``draft_probs=None`` and a fixed ``draft_token`` for a
    deterministic drafter (E5).  ``bonus_probs`` (V,) is the target row after an
    accepted draft (default: ``target_probs``).  ``verifier`` has the signature of
    :func:`specdec.verify_tokens` (the default).  Returns (draft ids, first emitted
    ids, number accepted), each (n,) on the inputs' device.
    """
    from .verify import verify_tokens

    verifier = verify_tokens if verifier is None else verifier
    vocab = target_probs.shape[-1]
    bonus = target_probs if bonus_probs is None else bonus_probs
    target_rows = torch.stack([target_probs, bonus]).expand(n, 2, vocab)  # (n, K+1, V), no copy
    if draft_probs is None:
        if draft_token is None:
            raise ValueError("a deterministic drafter (draft_probs=None) needs draft_token")
        draft_tokens = torch.full((n, 1), draft_token, dtype=torch.long, device=target_probs.device)
        draft_rows = None
    else:
        draft_rows = draft_probs.expand(n, 1, vocab)  # (n, K, V), no copy
        # torch's own sampler, from the one row: an implementation independent of ours.
        draft_tokens = torch.multinomial(draft_probs, n, replacement=True, generator=generator).unsqueeze(-1)
    result = verifier(draft_tokens, draft_rows, target_rows, generator)
    return draft_tokens[:, 0], result.tokens[:, 0], result.num_accepted


def sample_chain_blocks(target_fn, draft_fn, num_draft: int, vocab: int, n: int, generator: torch.Generator, *, verifier=None):
    """Run ``n`` verification steps on a chain of conditional tables (as in
    :func:`specdec.emitted_block_law`): drafts drawn position by position from
    ``draft_fn(prefix)``, target rows from ``target_fn(prefix)``.  Returns the
    emitted blocks as a list of tuples (accepted drafts, then the last token).
    ``verifier`` has the signature of :func:`specdec.verify_tokens` (the default).
    """
    import itertools

    from .sampling import sample_categorical
    from .verify import verify_tokens

    verifier = verify_tokens if verifier is None else verifier
    # Rows for every prefix of length <= K, indexed by the prefix's base-V code.
    tables = {}
    for length in range(num_draft + 1):
        prefixes = list(itertools.product(range(vocab), repeat=length))
        tables[length] = (
            torch.stack([torch.as_tensor(target_fn(pre), dtype=torch.float64) for pre in prefixes]),
            None if length == num_draft else torch.stack([torch.as_tensor(draft_fn(pre), dtype=torch.float64) for pre in prefixes]),
        )
    code = torch.zeros(n, dtype=torch.long)
    draft_rows, target_rows, tokens = [], [], []
    for length in range(num_draft):
        target_table, draft_table = tables[length]
        draft_rows.append(draft_table[code])  # (n, V)
        target_rows.append(target_table[code])
        token = sample_categorical(draft_rows[-1], generator)
        tokens.append(token)
        code = code * vocab + token
    target_rows.append(tables[num_draft][0][code])
    draft_tokens = torch.stack(tokens, 1) if tokens else torch.zeros(n, 0, dtype=torch.long)
    draft_probs = torch.stack(draft_rows, 1) if draft_rows else torch.zeros(n, 0, vocab, dtype=torch.float64)
    result = verifier(draft_tokens, draft_probs, torch.stack(target_rows, 1), generator)
    emitted = result.tokens.tolist()
    return [tuple(row[: k + 1]) for row, k in zip(emitted, result.num_accepted.tolist())]


def check_sequence_law(
    stat_checks: StatChecks,
    decoder,
    target,
    prompts: list[list[int]],
    length: int,
    *,
    tv: float,
    seed: int,
    label: str,
    sampling=None,
    eos_token_id=None,
    chunk: int = 8192,
) -> list[CheckRecord]:
    """Assert that ``decoder``'s first ``length`` tokens after each prompt follow the target's exact law.

    ``decoder(prompts, max_new_tokens, seed) -> list of new-token lists`` (the
    shared decoder signature).  The law of each prompt is enumerated with the
    target and the warpers (:func:`specdec.sequence_law.sequence_law`); the
    sample size per prompt is planned for ``tv`` over its cells.  Prompts are
    interleaved in every call, so batch rows of different lengths run together.
    """
    from .conformance import decode_samples
    from .sequence_law import sequence_law
    from .warpers import SamplingConfig

    sampling = SamplingConfig() if sampling is None else sampling
    laws = [sequence_law(target, p, length, sampling=sampling, eos_token_id=eos_token_id) for p in prompts]
    n = max(stat_checks.plan(num_cells=len(law.sequences), tv=tv) for law in laws)
    per_prompt = decode_samples(decoder, prompts, n, length, seed=seed, chunk=chunk)
    records = []
    for i, law in enumerate(laws):
        ids = law.index(per_prompt[i])
        records.append(stat_checks.assert_follows(ids, law.probs, label=f"{label} prompt {i}"))
    return records
