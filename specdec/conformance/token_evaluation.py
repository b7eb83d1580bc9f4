"""The checks a per-token tally gives (docs/reference.md §10, P1-P3 and P7), and where a FAIL lives.

* **all tokens** - the rank cells of every emitted token pooled (P1, within the oracle's floor P2): the
  check n is planned for, whose detectable TV is the report's;
* **by position** - the same test on the tokens at positions 1, 2, 3-4, 5-8, ... (P3): a deviation
  confined to a few positions is not averaged away by the many others;
* **by draft mark**, when the subject marks where it drafted - the positions where a draft was verified
  (kept, or rejected and replaced) and those without one (bonus tokens, steps without drafts) apart.  The
  mark is known before the token is drawn; a split by whether the draft was *kept* would not be (a correct
  decoder's kept drafts over-represent the draft's favourite tokens), and is not made.

* **consecutive pairs** (P7), when answers hold two tokens or more - every token after the first, its rank cell
  in the row of the previous token's rank group (1, 2, 3-4, 5-8, 9 or beyond) against its law's probabilities
  there: a test of the joint law of consecutive ranks, which sees tokens that depend on each other beyond their
  prefixes (one uniform shared by a verification block, B7) where the pooled law hardly moves.

Every check enters Holm's procedure; the localising ones state their own detectable TV in their details
(it is not the report's: the report is planned on all tokens).  A FAIL says where it lives: the
position group, the ranks over- and under-represented (observed vs expected counts), the draft mark,
and any token of probability 0 with its prompt and prefix.
"""

from __future__ import annotations

from ..stats.rank_cells import RankResult, cell_name, previous_group_name, rank_test
from .checks import Check

SEES_TOKENS = (
    "any change of an emitted token's law given its prefix, by the reference's own per-token law: a lossy acceptance "
    "rule or residual (L1-L6, B1, B10, B12, B14), warpers dropped or misapplied (B3, B4, B9, B15), a draft law mistaken "
    "for the target's (B2) - pooled over tokens, by position and by draft mark; not deviations that cancel across "
    "prefixes (check_ab sees those)"
)
SEES_PAIRS = (
    "tokens of one answer that depend on each other beyond their prefixes: one uniform shared by a verification block "
    "(B7), an acceptance or residual that reads the previous step - by the joint law of consecutive ranks (P7)"
)
SHOWN = 3

__all__ = ["SEES_PAIRS", "SEES_TOKENS", "evaluate_tokens"]


def _check(name: str, result: RankResult, *, planned: bool, location: str | None = None) -> Check:
    method = "support (tokens of probability 0)" if result.support_violation else "pearson (rank cells)"
    check = Check(name, "per-token", SEES_TOKENS, method, result.statistic, result.pvalue, result.n, result.bins or None,
                  result.df, result.detectable_tv if planned else None, location=location,
                  details={"floor": result.floor, "rare_mass": result.rare_mass, "detectable_tv": result.detectable_tv,
                           "over": [(cell_name(c), int(o), e) for c, o, e in result.deviations if o > e][:SHOWN],
                           "under": [(cell_name(c), int(o), e) for c, o, e in result.deviations if o < e][:SHOWN]})
    return check


def _violations_text(tally, prompts) -> str:
    if not tally.violations:
        return ""
    shown = "; ".join(f"prompt {p} (len {len(prompts[p])}), prefix {list(prefix)}: token {token} x{k}"
                      for (p, prefix, token), k in tally.violations.most_common(SHOWN))
    return f"{sum(tally.violations.values()):,} token(s) of probability 0 in the reference's law: {shown}"


def _shifts(result: RankResult) -> str:
    over = [f"{cell_name(c)} {int(o):,} vs {e:,.1f}" for c, o, e in result.deviations if o > e][:SHOWN]
    under = [f"{cell_name(c)} {int(o):,} vs {e:,.1f}" for c, o, e in result.deviations if o < e][:SHOWN]
    return f"over-represented: {', '.join(over) or '-'}; under: {', '.join(under) or '-'} (observed vs expected)"


def _pairs_check(tally, alpha: float, floor: float) -> Check:
    """P7: the pair table as one rank test (bins pooled across its rows), located by its most deviating entries."""
    result = rank_test(tally.pairs_observed.ravel(), tally.pairs_expected.ravel(), alpha=alpha, floor=floor)
    width = tally.pairs_observed.shape[1]
    entry = lambda index: f"{cell_name(index % width)} {previous_group_name(index // width)}"  # noqa: E731
    shifts = [f"{entry(c)}: {int(o):,} vs {e:,.1f}" for c, o, e in result.deviations[:SHOWN]]
    check = Check(f"consecutive pairs: {result.n:,} tokens' rank given the previous token's rank (P7)", "per-token pairs",
                  SEES_PAIRS, "pearson (rank cells by the previous rank)", result.statistic, result.pvalue, result.n,
                  result.bins or None, result.df, None, location=f"detects a TV of {result.detectable_tv:.4f} in the joint law of consecutive ranks at power 0.99; "
                  f"most deviating: {'; '.join(shifts) or '-'} (observed vs expected)",
                  details={"floor": result.floor, "detectable_tv": result.detectable_tv, "rare_mass": result.rare_mass})
    return check


def evaluate_tokens(tally, prompts, alpha: float, floor: float, groups: list[tuple[int, int]], marked: bool,
                    pairs: bool = False) -> list[Check]:
    """The checks of a :class:`~specdec.conformance.streams.tokens.TokenTally` at per-check level ``alpha``."""
    violations = sum(tally.violations.values())
    observed, expected = tally.observed, tally.expected

    pooled = rank_test(observed.sum((0, 1)), expected.sum((0, 1)), alpha=alpha, floor=floor, support_violation=violations)
    local = [(f"position {start + 1}" if stop - start == 1 else f"positions {start + 1}-{stop}",
              rank_test(observed[start:stop].sum((0, 1)), expected[start:stop].sum((0, 1)), alpha=alpha, floor=floor))
             for start, stop in groups]
    if marked:
        local += [(mark, rank_test(observed[:, k].sum(0), expected[:, k].sum(0), alpha=alpha, floor=floor))
                  for k, mark in ((1, "drafted positions"), (0, "positions without a draft"))]
    where = [_violations_text(tally, prompts)] if violations else []
    worst = min(local, key=lambda item: item[1].pvalue, default=None)
    if worst is not None and worst[1].n:
        label, result = worst
        where.append(f"most significant: {label} (X2={result.statistic:.4g}, df={result.df}, p={result.pvalue:.3g}; "
                     f"{_shifts(result)})")
    checks = [_check(f"all {pooled.n:,} tokens: rank in the reference's law (P1)", pooled, planned=True,
                     location="; ".join(where) or None)]
    checks += [_check(f"{label}: rank in the reference's law (P3)", result, planned=False) for label, result in local]
    if pairs:
        checks.append(_pairs_check(tally, alpha, floor))
    return checks
