"""A conformance report: the checks of one subject, their verdicts, and what was shown.

Verdicts say only what the test can show (docs/reference.md, "Verdicts"):

* ``ERROR``: the subject raised, hung past its call timeout, or returned what its
  Protocol does not allow (:mod:`.subject`); the report names the call and the
  exception's last line, and says nothing about the subject's law.
* ``INTERRUPTED``: the run was stopped (Ctrl-C, SIGTERM) before its plan was drawn; the
  checks show the partial counts and no PASS is claimed.
* ``FAIL``: some check rejected, at the report's family-wise alpha (Holm).
* ``INCONCLUSIVE``: nothing rejected, but the test is weaker than asked: the TV it
  detects with power 0.99 is above the TV asked for (a time budget or ``max_n`` cut n),
  or, when no TV was asked, it could not exclude a deviation of any size (reached TV 1,
  or a check without samples).
* ``PASS``: nothing rejected and no deviation of TV >= the reached TV went unseen
  with probability above 0.01.  "PASS, acceptance below the optimum" when an
  acceptance sits significantly below its proven optimum.

A sampled test never proves losslessness; "lossless" is reserved for exact laws.
"""

from __future__ import annotations

import json
import math
import platform
from dataclasses import asdict, dataclass, field

from ..stats.power import POWER
from .checks import Check


def library_versions() -> dict[str, str]:
    import numpy
    import scipy
    import torch

    from .. import __version__

    versions = {"specdec": __version__, "python": platform.python_version(), "torch": torch.__version__,
                "numpy": numpy.__version__, "scipy": scipy.__version__}
    try:
        import transformers

        versions["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover - optional
        pass
    return versions


@dataclass
class Report:
    subject: str
    level: str  # "verifier", "multi-draft verifier", "decoder"
    checks: list[Check]
    family_alpha: float
    asked_tv: float | None  # the TV the caller asked to detect (None: only a time budget or n was given)
    seed: int
    chunk_size: int
    device: str
    sample_size_rule: str  # how n was chosen
    seconds: float = 0.0
    samples: int = 0
    power: float = POWER
    notes: list[str] = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    error: dict | None = None  # SubjectFailure.to_dict(): kind, call, message, seconds
    interrupted: bool = False
    planned_samples: int = 0  # what the plan meant to draw (the samples drawn are ``samples``)
    speculation: dict | None = None  # drafts, draft tokens and accepted tokens the subject verified during the check
    resume: dict | None = None  # the campaign's checkpoint (conformance.checkpoints): what a continuation starts from
    stopped_early: dict | None = None  # P4: the look at which a check rejected (look, samples, check, p-value, level)

    @property
    def passed(self) -> bool:
        """No check rejected (PASS or INCONCLUSIVE)."""
        return all(c.passed for c in self.checks)

    @property
    def reached_tv(self) -> float | None:
        """The largest TV any goodness-of-fit check could miss with probability above 0.01."""
        tvs = [c.detectable_tv for c in self.checks if c.detectable_tv is not None]
        return max(tvs) if tvs else None

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "ERROR"
        if self.interrupted:
            return "INTERRUPTED"
        if not self.passed:
            return "FAIL"
        reached = self.reached_tv
        if self.asked_tv is not None and reached is not None and reached > self.asked_tv * (1 + 1e-9):
            return "INCONCLUSIVE"
        if self.asked_tv is None and self._no_evidence():
            return "INCONCLUSIVE"
        if self.speculation is not None and not self.speculation.get("drafts"):
            return "INCONCLUSIVE"  # the law passed, but no draft was verified: nothing was shown about speculation
        return "PASS"

    def _no_evidence(self) -> bool:
        """No TV was asked, and the run could not exclude a deviation of any size."""
        if not self.checks or any(c.n == 0 for c in self.checks):
            return True
        reached = self.reached_tv
        return reached is not None and reached >= 1 - 1e-12

    def suboptimal(self) -> list[Check]:
        return [c for c in self.checks if c.details.get("suboptimal")]

    def summary(self) -> str:
        """The verdict as one sentence that says what was tested."""
        verdict, reached = self.verdict, self.reached_tv
        if verdict == "ERROR":
            from .calls import SubjectFailure

            return f"ERROR: {SubjectFailure(**self.error).line()} (no verdict on the law)"
        if verdict == "INTERRUPTED":
            failed = [c for c in self.checks if not c.passed]
            drawn = f"{self.samples:,} of {self.planned_samples:,} planned samples" if self.planned_samples else f"{self.samples:,} samples"
            found = f"a check rejected on the partial counts: {failed[0].describe()}" if failed else "no check rejected on the partial counts"
            return f"INTERRUPTED after {self.seconds:.1f} s ({drawn}): {found}; no PASS is claimed"
        if verdict == "FAIL":
            failed = [c for c in self.checks if not c.passed]
            stop = self.stopped_early
            early = (f" (stopped early at look {stop['look']}, after {self.samples:,} of {self.planned_samples:,} planned samples)"
                     if stop else "")
            return f"FAIL{early}: {failed[0].describe()}" + (f" (and {len(failed) - 1} more failing checks)" if len(failed) > 1 else "")
        if verdict == "INCONCLUSIVE" and self.speculation is not None and not self.speculation.get("drafts") and (
            self.asked_tv is None or reached is None or reached <= self.asked_tv * (1 + 1e-9)
        ):
            return (
                "INCONCLUSIVE about speculation: the subject verified no draft during the check, so its output law "
                f"(no deviation of TV >= {reached or 1.0:.4f} found) says nothing about speculative decoding; "
                "use prompts and lengths where the engine drafts"
            )
        if verdict == "INCONCLUSIVE" and (self.asked_tv is None or reached is None):
            return (
                "INCONCLUSIVE: no check rejected, but the run was too small to exclude a deviation of any size "
                f"(reached TV {1.0 if reached is None else reached:.4f}); raise n or the time budget"
            )
        if verdict == "INCONCLUSIVE":
            return (
                f"INCONCLUSIVE: reached TV {reached:.4f}, asked {self.asked_tv:g} (no check rejected, "
                f"but a deviation between the two could go unseen; raise n or the time budget)"
            )
        head = "PASS: no deviation" + (f" of TV >= {reached:.4f}" if reached is not None else "") + (
            f" found at power {self.power} (family-wise alpha {self.family_alpha:.1e})"
        )
        if self.level.startswith("per-token"):  # what the per-token checks covered (docs/reference.md §10)
            pairs = any(c.kind == "per-token pairs" for c in self.checks)
            head += "; covered: per-token laws" + (" and consecutive pairs (P7)" if pairs else "")
        low = self.suboptimal()
        if low:
            c = low[0]
            head = (
                f"PASS, acceptance below the optimum ({c.details['acceptance']:.4f} vs {c.details['optimum']:.4f}, "
                f"p = {c.details['p_below']:.3g}, {c.name}): a deliberately suboptimal scheme, or a bug in the "
                f"acceptance rule. " + head[len("PASS: "):]
            )
        return head

    def format(self) -> str:
        rate = f", {self.samples / self.seconds:,.0f} samples/s" if self.seconds > 0 and self.samples else ""
        lines = [f"== {self.subject} ({self.level}; {self.device}; {self.seconds:.1f} s{rate})", f"   {self.summary()}"]
        lines.append(f"   n: {self.sample_size_rule}; seed {self.seed}, chunks of {self.chunk_size:,}; Holm at family-wise alpha {self.family_alpha:.1e}")
        if self.checks:
            lines.append(f"   {'check':52s} {'n':>10s} {'cells':>6s} {'method':>16s} {'statistic':>10s} {'p-value':>9s} {'TV@.99':>7s}  result")
        for c in self.checks:
            tv = "" if c.detectable_tv is None else f"{c.detectable_tv:7.4f}"
            cells = "" if c.cells is None else str(c.cells)
            result = "no samples" if c.n == 0 else "pass" if c.passed else "FAIL"
            if c.details.get("suboptimal"):
                result += " (below optimum)"
            lines.append(
                f"   {c.name[:52]:52s} {c.n:10,d} {cells:>6s} {c.method.split(' (')[0][:16]:>16s} "
                f"{c.statistic:10.4g} {c.pvalue:9.3g} {tv:>7s}  {result}"
            )
            if "acceptance" in c.details:
                lines.append(f"     acceptance {c.details['acceptance']:.4f}, optimum {c.details['optimum']:.4f}")
            if "independence" in c.details:
                lines.append(f"     {c.details['independence']['text']}")
            if not c.passed:
                lines.append(f"     {c.describe()}")
        lines.extend(f"   note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(verdict=self.verdict, summary=self.summary(), reached_tv=self.reached_tv, passed=self.passed)
        return _clean(out)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _clean(value.item())
    return value
