"""One family-wise false-alarm rate for a whole run of checks (docs/reference.md §7).

An :class:`ErrorBudget` holds a family-wise alpha and a capacity of M checks.
Every check of the run gets alpha / M: a report of m checks is allotted
m * alpha / M and applies Holm's procedure inside that allotment.  By the union
bound (Bonferroni across reports, Holm within), a correct implementation fails
the whole run with probability at most alpha, whatever the dependence between
checks.  A run that asks for more than M checks fails loudly instead of
spending more than alpha.

The pytest plugin holds one budget per test session (``--specdec-alpha``,
``--specdec-max-checks``) and prints every check it allotted at the end of the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._validation import as_float, as_int
from ..errors import BudgetExhausted  # noqa: F401 - re-exported: its home before specdec.errors
from .checks import sample_size


@dataclass
class BudgetEntry:
    label: str  # the report's subject or the test's label
    num_checks: int  # checks reserved
    alpha: float  # family-wise alpha allotted to this entry: num_checks * alpha / capacity
    checks: list = field(default_factory=list)  # the Check objects it ran, filled in when they are done


@dataclass
class ErrorBudget:
    """A family-wise alpha shared by up to ``capacity`` checks (alpha / capacity each)."""

    family_alpha: float = 1e-6
    capacity: int = 1000
    entries: list[BudgetEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.family_alpha = as_float("family_alpha", self.family_alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
        self.capacity = as_int("capacity", self.capacity, minimum=1)

    @property
    def per_check_alpha(self) -> float:
        return self.family_alpha / self.capacity

    @property
    def reserved(self) -> int:
        return sum(e.num_checks for e in self.entries)

    def allot(self, num_checks: int, label: str) -> BudgetEntry:
        """Reserve ``num_checks`` checks; the entry's ``alpha`` is num_checks * alpha / capacity."""
        num_checks = as_int("num_checks", num_checks, minimum=1)
        reserved = self.reserved
        if reserved + num_checks > self.capacity:
            raise BudgetExhausted(
                f"the error budget holds {self.capacity} checks and {reserved} are taken; {label!r} asks for "
                f"{num_checks} more.  Raise the capacity (pytest: --specdec-max-checks), which lowers every "
                f"check's alpha (family-wise {self.family_alpha:g} / capacity)"
            )
        entry = BudgetEntry(label, num_checks, num_checks * self.per_check_alpha)
        self.entries.append(entry)
        return entry

    def sample_size(self, law, tv: float) -> int:
        """n planned for one check of this budget: every deviation of TV >= ``tv`` from ``law``
        is caught with power 0.99 at the per-check alpha (F34, on the pooled bins)."""
        return sample_size(law, tv, self.per_check_alpha)

    def summary_lines(self) -> list[str]:
        """The end-of-run table: every check of every entry."""
        lines = [
            f"family-wise alpha {self.family_alpha:g} over at most {self.capacity} checks "
            f"(alpha {self.per_check_alpha:.1e} each); {self.reserved} checks allotted to {len(self.entries)} reports and tests",
            f"{'check':64s} {'n':>10s} {'cells':>6s} {'alpha':>8s} {'TV@.99':>7s} {'p-value':>9s}  result",
        ]
        for entry in self.entries:
            alpha = entry.alpha / entry.num_checks
            for check in entry.checks:
                label = f"{entry.label}: {check.name}"
                cells = "" if check.cells is None else str(check.cells)
                tv = "" if check.detectable_tv is None else f"{check.detectable_tv:7.4f}"
                lines.append(
                    f"{label[:64]:64s} {check.n:10d} {cells:>6s} {alpha:8.1e} {tv:>7s} {check.pvalue:9.3g}  "
                    + ("pass" if check.passed else "FAIL")
                )
        return lines
