"""The ratio gate: did a commit make speculative decoding slower *relative to its baseline*?

pytest-benchmark's ``--benchmark-compare-fail`` compares absolute times, which on a shared
machine move with the load.  Our benchmarks store, per round, ratios measured side by side
(speculative vs autoregressive, implementation vs memory floor), in
``extra_info["ratios"][metric] = {"values": [...], "higher_is_better": bool}``.  For each
benchmark and metric present in both runs, the gate bootstraps the ratio
median(current) / median(baseline), resampling the rounds of each run, and takes a
two-sided percentile interval.  It fails a metric only when the whole interval lies beyond
the margin on the bad side (below 1 - margin when higher is better); an interval beyond it
on the good side is reported as an improvement.  With R rounds a run's median takes at most
R values, so the interval is coarse at R = 3: more rounds (``--bench-rounds``) sharpen it.  The
interval covers the spread of rounds within each run, not the drift between runs (machine load,
page faults): on this project's shared 2-core CPU, two runs of unchanged micro benchmarks differed
by up to 1.8x in their ratio to the memory floor, hence the default margin of 20%.

A row's F23 prediction (end to end) carries an interval over its calibration's rounds (``predicted_interval``,
docs/reference.md §6): the gate compares it too, and a prediction whose intervals in the two runs are disjoint is
``changed`` (the costs moved beyond their own spread), which fails like a regression.

Deterministic metrics (seeded acceptance and tokens per step, ``extra_info["exact"]``) are
compared exactly: any change fails, because the same seed on the same machine must give the
same counts.  Compare runs from one machine (the gate warns when the machine info differs).

A benchmark present in one run only is a ``missing`` finding that says which run holds it; it is
listed, not judged (a run of a subset of the suite compares on what it ran).  A metric of a benchmark
present in both runs that the current run no longer holds is ``dropped``: a measurement that stopped
being made is not a pass, so it fails the gate like a regression - also when every metric was dropped
(an open-loop run whose requests all failed stores no ratio: that is a failing gate, not "nothing to
compare"); a metric only the current run holds is ``missing`` (new), listed.  When nothing is left to
judge or drop, :func:`nothing_to_judge` says why (an empty run, no shared benchmark, no shared metric):
the command line exits NO_VERDICT rather than passing on nothing.  The ratios were checked when the run
was loaded (:func:`specdec.bench.history.load_run`): finite and positive, or 0 for a higher-is-better
ratio (a goodput that fell to 0 is judged: a regression from any positive baseline; 0 -> 0 is
unchanged, 0 -> anything above it an improvement).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import as_float, as_int
from .history import Run


@dataclass(frozen=True)
class Finding:
    benchmark: str
    metric: str
    verdict: str  # "ok", "regression", "improvement", "changed", "dropped", "missing"
    baseline: float | None = None
    current: float | None = None
    low: float | None = None  # interval on current / baseline, or on baseline / current when lower is better
    high: float | None = None  # (so that above 1 is always better)
    only_in: str | None = None  # "baseline" or "current", for a missing benchmark or metric
    exact: bool = False  # a seeded metric compared exactly (``extra_info["exact"]``)
    interval_of_baseline: tuple | None = None  # a prediction's: the baseline run's interval (low, high is the current run's)
    higher_is_better: bool = True

    @property
    def judged(self) -> bool:
        """A comparison ran (a dropped metric compares nothing, and fails the gate all the same)."""
        return self.verdict not in ("missing", "dropped")

    def line(self) -> str:
        if self.exact:
            return f"{self.verdict.upper():11s} {self.benchmark} {self.metric}: {self.baseline!r} -> {self.current!r} (exact metric)"
        if self.verdict == "missing":
            return f"MISSING     {' '.join(filter(None, (self.benchmark, self.metric)))}: only in the {self.only_in} run"
        if self.interval_of_baseline is not None:
            low, high = self.interval_of_baseline
            return (f"{self.verdict.upper():11s} {self.benchmark} prediction (F23 end to end): {self.baseline:.3f}x [{low:.3f}-{high:.3f}] "
                    f"-> {self.current:.3f}x [{self.low:.3f}-{self.high:.3f}] (" + ("intervals overlap" if self.verdict == "ok"
                                                                                    else "disjoint: the costs moved beyond their spread") + ")")
        if self.verdict == "dropped":
            return (f"DROPPED     {self.benchmark} {self.metric}: in the baseline run, not in the current one "
                    "(a measurement the current run no longer makes fails the gate)")
        change = _quotient(self.current, self.baseline)
        judged = "" if self.higher_is_better else f"; lower is better, so judged on baseline / current: {_inverse(change):.3f}"
        return (f"{self.verdict.upper():11s} {self.benchmark} {self.metric}: {self.baseline:.4g} -> {self.current:.4g} "
                f"(x{change:.3f}{judged}, interval [{self.low:.3f}, {self.high:.3f}])")


def _quotient(numerator: float, denominator: float) -> float:
    """numerator / denominator of two ratios >= 0: 0 / 0 (and inf / inf) is 1 (unchanged), x / 0 is inf."""
    if numerator == denominator:
        return 1.0
    return math.inf if denominator == 0 else numerator / denominator


def _inverse(value: float) -> float:
    return math.inf if value == 0 else 1.0 / value


def ratio_interval(baseline, current, *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0,
                   zero: bool = False) -> tuple[float, float]:
    """Percentile bootstrap interval for median(current) / median(baseline), rounds resampled within each run.
    ``zero=True`` lets ratios of 0 through (a higher-is-better ratio that fell to 0): a quotient 0 / 0 is 1, x / 0
    is inf (an interval bound beyond float range is inf too)."""
    base = np.asarray(baseline, dtype=np.float64)
    cur = np.asarray(current, dtype=np.float64)
    least = (lambda a: a >= 0) if zero else (lambda a: a > 0)
    if base.size == 0 or cur.size == 0 or not (np.all(np.isfinite(base) & least(base)) and np.all(np.isfinite(cur) & least(cur))):
        raise ValueError(f"ratios must be finite, {'non-negative' if zero else 'positive'} and non-empty, got baseline "
                         f"{base.tolist()} and current {cur.tolist()}")
    rng = np.random.default_rng(seed)
    top = np.finfo(np.float64).max
    with np.errstate(all="ignore"):  # medians of ratios near float's range, x / 0: handled below
        base_medians = np.median(base[rng.integers(0, base.size, (resamples, base.size))], axis=1)
        cur_medians = np.median(cur[rng.integers(0, cur.size, (resamples, cur.size))], axis=1)
        quotient = cur_medians / base_medians
    quotient[cur_medians == base_medians] = 1.0  # 0 / 0 and inf / inf: unchanged
    tail = (1 - confidence) / 2
    low, high = np.quantile(np.minimum(quotient, top), [tail, 1 - tail])
    return tuple(math.inf if bound >= top else float(bound) for bound in (low, high))


def compare_runs(baseline: Run, current: Run, *, margin: float = 0.2, confidence: float = 0.95,
                 resamples: int = 10_000, exact: bool = True, seed: int = 0) -> list[Finding]:
    """Every (benchmark, metric) of two runs judged as described in the module docstring."""
    margin = as_float("margin", margin, minimum=0.0, maximum=1.0, high_open=True)
    confidence = as_float("confidence", confidence, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    resamples = as_int("resamples", resamples, minimum=100)
    findings = []
    for name in sorted(set(baseline.benchmarks) | set(current.benchmarks)):
        if name not in baseline.benchmarks or name not in current.benchmarks:
            findings.append(Finding(name, "", "missing", only_in="baseline" if name in baseline.benchmarks else "current"))
            continue
        old, new = baseline.benchmarks[name]["extra_info"], current.benchmarks[name]["extra_info"]
        old_ratios, new_ratios = old.get("ratios") or {}, new.get("ratios") or {}
        findings += _missing(name, old_ratios, new_ratios)
        for metric in sorted(set(old_ratios) & set(new_ratios)):
            before, after = old_ratios[metric]["values"], new_ratios[metric]["values"]
            higher_is_better = bool(new_ratios[metric].get("higher_is_better", True))
            low, high = ratio_interval(before, after, confidence=confidence, resamples=resamples, seed=seed, zero=higher_is_better)
            if not higher_is_better:  # judge 1 / ratio so that "up" is always good
                low, high = _inverse(high), _inverse(low)
            verdict = "regression" if high < 1 - margin else "improvement" if low > 1 + margin else "ok"
            with np.errstate(over="ignore"):  # the median of two ratios near float's range is inf
                medians = float(np.median(before)), float(np.median(after))
            findings.append(Finding(name, metric, verdict, *medians, low, high, higher_is_better=higher_is_better))
        finding = _prediction(name, old.get("predicted_interval"), new.get("predicted_interval"))
        if finding is not None:
            findings.append(finding)
        if exact:
            old_exact, new_exact = old.get("exact") or {}, new.get("exact") or {}
            findings += _missing(name, old_exact, new_exact)
            for metric in sorted(set(old_exact) & set(new_exact)):
                verdict = "ok" if old_exact[metric] == new_exact[metric] else "changed"
                findings.append(Finding(name, metric, verdict, old_exact[metric], new_exact[metric], exact=True))
    return findings


def _prediction(name: str, old: dict | None, new: dict | None) -> Finding | None:
    """F23's end-to-end prediction of a row in both runs: "ok" when their intervals over the calibration rounds overlap,
    "changed" when they are disjoint (the costs moved beyond their own spread); None when either run has no interval."""
    if not old or not new:
        return None
    overlap = old["low"] <= new["high"] and new["low"] <= old["high"]
    return Finding(name, "prediction", "ok" if overlap else "changed", float(old["median"]), float(new["median"]),
                   float(new["low"]), float(new["high"]), interval_of_baseline=(float(old["low"]), float(old["high"])))


def _missing(name: str, old: dict, new: dict) -> list[Finding]:
    """Metrics of a benchmark in both runs held by one run only: dropped (baseline only) or missing (new)."""
    return [Finding(name, metric, "dropped" if metric in old else "missing", only_in="baseline" if metric in old else "current")
            for metric in sorted(set(old) ^ set(new))]


def nothing_to_judge(baseline: Run, current: Run, findings: list[Finding], *, exact: bool = True) -> str | None:
    """Why ``findings`` (from :func:`compare_runs`) judge nothing, or None when at least one comparison ran or one
    metric was dropped (a dropped metric fails the gate, alone too)."""
    if any(f.judged or f.verdict == "dropped" for f in findings):
        return None
    for side, run in (("baseline", baseline), ("current", current)):
        if not run.benchmarks:
            return f"the {side} run {run.path} holds no benchmark"
    shared = set(baseline.benchmarks) & set(current.benchmarks)
    if not shared:
        return (f"no benchmark in both runs ({len(baseline.benchmarks)} only in the baseline {baseline.path}, "
                f"{len(current.benchmarks)} only in the current {current.path}): renamed or another suite?")
    metrics = "no ratio or exact metric" if exact else "no ratio (exact metrics not compared: --no-exact)"
    return (f"the {len(shared)} benchmark(s) in both runs share {metrics} "
            f"(extra_info in the baseline {baseline.path} and the current {current.path})")


def same_machine(baseline: Run, current: Run) -> bool:
    keys = ("cpu_model", "gpu", "torch", "torch_threads")
    return all(baseline.machine.get(k) == current.machine.get(k) for k in keys)
