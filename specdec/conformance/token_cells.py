"""A matrix cell judged token by token, after its control (issue 38): may the oracle judge this engine here?

:func:`run_token_cell` runs, for one engine x speculation method x sampling setting:

1. **the control** - the engine *without* speculation, every token it emits judged against the law oracle built
   for the same :class:`specdec.SamplingSettings` (:func:`specdec.check_tokens`).  Only a control that PASSes at the
   cell's TV lets the oracle judge the speculative subject: a control FAIL is the cell's verdict ``CONTROL FAIL``
   ("the oracle does not match the engine without speculation": a finding about the oracle or the engine, reported,
   never hidden), a control that cannot reach the TV is ``CONTROL INCONCLUSIVE``;
2. **the subject per token** - the engine with speculation against the same oracle, every emitted token counted,
   in strata by position and, where the subject marks them (:class:`specdec.protocols.DraftMarker`), drafted or not;
3. **the omnibus beside it** - :func:`specdec.check_ab` of the subject against the engine without speculation
   (optional: ``ab_n``), which sees what a per-token law cannot (docs/reference.md §10, "what it cannot see").

The cell's verdict: the control's when it did not PASS; else FAIL when either check of the subject failed, else
the per-token verdict (its reached TV is the cell's).  An :class:`~specdec.sampling_settings.UnsupportedSetting`
from the engine's adapter or from the oracle is ``REFUSED``, naming which refused.  Before the control, the subject
is asked for one answer to the first prompt, as long as the checks' answers: an engine that refuses the setting (a
server's HTTP 400, :class:`specdec.errors.EngineRefusal`) makes the cell ``REFUSED`` by the engine at once (vLLM
0.32's n-gram server refused a logit bias only after a 7-minute control), a subject that fails otherwise ``ERROR``
with the failure's first line.  The oracle's floor goes into the cell, so every table states it.

A setting's control does not depend on the method: it is run once per setting and shared by the methods' cells, in
one run (its report) or across runs (a :class:`StoredControl` read back from an earlier cell of the same engine
versions, setting, oracle, prompts, length and asked TV); a shared control's cell says so and, stored, which run
made it.

A cell stopped midway need not start again: with ``checkpoints`` (a folder) each check writes its counts there as it
goes (``control.json``, ``tokens.json``, ``ab.json``: :mod:`specdec.conformance.checkpoints`) and a check whose file is
there continues from it, drawing only what it had left (the same arguments, or a ValueError naming what changed); the
cell's time then includes the sampling time its checks spent before.  A check interrupted (Ctrl-C) ends the cell at
once, ``INTERRUPTED``, the next checks not run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..sampling_settings import SamplingSettings, UnsupportedSetting
from .checkpoints import load as load_checkpoint
from .matrix import Cell, _short, cell_verdict, engine_refusal

__all__ = ["StoredControl", "run_token_cell", "token_counts", "token_table"]


@dataclass(frozen=True)
class StoredControl:
    """A control judged in an earlier run, read back from its cell (module docstring): ``verdict`` and
    ``reached_tv`` of the engine without speculation, the ``tokens`` it judged, ``source`` the run that made it
    (date and commit)."""

    verdict: str
    reached_tv: float | None
    tokens: int
    source: str


def token_counts(report) -> tuple[int, int | None]:
    """(tokens judged, tokens at drafted positions or None when the subject did not mark drafts) of a
    :func:`specdec.check_tokens` report, read from its checks (P1's pooled check counts every token)."""
    tokens = next((c.n for c in report.checks if "(P1)" in c.name), 0)
    drafted = next((c.n for c in report.checks if c.name.startswith("drafted positions")), None)
    return tokens, drafted


def run_token_cell(engine: str, method: str, setting: str, settings: SamplingSettings,
                   build: Callable[[SamplingSettings], tuple], oracle_of: Callable[[SamplingSettings], object], *,
                   prompts, length: int, tv: float, seed: int, budget=None, eos_token_id=None, rows_per_call: int = 16,
                   ab_n: int | None = None, ab_length: int = 2, keep: Callable | None = None, control_report=None,
                   checkpoints: str | os.PathLike | None = None, **run_args) -> Cell:
    """One per-token cell (module docstring).  ``build(settings)`` -> (subject with speculation, the engine without);
    ``oracle_of(settings)`` -> a :class:`specdec.protocols.LawOracle` of the engine under ``settings``.  ``tv``: the
    per-token TV the control and the subject are planned for (the cell's asked TV); ``ab_n``: answers per side of the
    A/B check beside them (None: no A/B check), on the first ``ab_length`` tokens.  ``keep(kind, report)`` receives
    each report ("control", "tokens", "ab").  ``control_report``: the control of an earlier cell of the same engine,
    setting, oracle, prompts, length and TV (the engine without speculation does not depend on the method), its
    report or a :class:`StoredControl`: judged as if run here, not run again (its keep is not called again).
    ``checkpoints``: a folder where each check's counts are kept as it goes and from which a check continues (module
    docstring).  Further keywords go to every check (``time_budget``, ``console``...)."""
    from .ab_check import check_ab
    from .token_check import check_tokens

    saved = _checkpoint_files(checkpoints, run_args)
    started = time.perf_counter() - sum(_seconds_before(path) for path in saved.values())
    try:
        subject, reference = build(settings)
    except UnsupportedSetting as refused:
        return Cell(engine, method, setting, settings.label, "REFUSED", detail=_short(f"by the adapter: {refused}"))
    try:
        oracle = oracle_of(settings)
    except UnsupportedSetting as refused:
        return Cell(engine, method, setting, settings.label, "REFUSED", detail=_short(f"by the oracle: {refused}"))
    asked = _ask_subject(subject, prompts[0], length, seed)
    if asked is not None:
        verdict, detail = asked
        return Cell(engine, method, setting, settings.label, verdict, seconds=time.perf_counter() - started, detail=detail)
    floor = float(getattr(oracle, "floor", 0.0))
    common = dict(length=length, eos_token_id=eos_token_id, rows_per_call=rows_per_call, tv=tv, budget=budget, **run_args)
    name = f"{engine}, {method}, {setting}"
    if control_report is None:
        control = check_tokens(reference, oracle, prompts, seed=seed, name=f"{name}: control (no speculation) per token",
                               speculating=False, **common, **_continued(saved, "control"))
        _keep(keep, "control", control)
    else:
        control = control_report
    stored = isinstance(control, StoredControl)
    extra = {"kind": "per token", "oracle_floor": floor, "control_verdict": control.verdict, "control_shared": control_report is not None,
             "control_reached_tv": control.reached_tv, "control_tokens": control.tokens if stored else token_counts(control)[0],
             "asked_tv": tv, **({"control_source": control.source} if stored else {})}
    if control.verdict != "PASS":
        verdict, detail = cell_verdict(control)
        if verdict in ("FAIL", "INCONCLUSIVE"):
            verdict, detail = f"CONTROL {verdict}", ("the oracle does not match the engine without speculation: " + detail
                                                     if verdict == "FAIL" else "the control did not reach the TV: " + detail)
        return Cell(engine, method, setting, settings.label, verdict, control.reached_tv, 0, seconds=time.perf_counter() - started,
                    detail=_short(detail), extra=extra)
    tokens = check_tokens(subject, oracle, prompts, seed=seed + 1, name=f"{name}: per token", **common, **_continued(saved, "tokens"))
    _keep(keep, "tokens", tokens)
    if tokens.verdict == "INTERRUPTED":
        return Cell(engine, method, setting, settings.label, "INTERRUPTED", tokens.reached_tv, tokens.samples,
                    seconds=time.perf_counter() - started, detail=_short(cell_verdict(tokens)[1]), extra=extra)
    counted, drafted = token_counts(tokens)
    extra.update(token_verdict=tokens.verdict, token_reached_tv=tokens.reached_tv, tokens=counted, drafted_tokens=drafted)
    reports = [tokens]
    if ab_n is not None:
        ab = check_ab(subject, reference, prompts, length=ab_length, eos_token_id=eos_token_id, rows_per_call=rows_per_call,
                      n=ab_n, tv=None, seed=seed + 2, budget=budget, name=f"{name}: A/B", **run_args, **_continued(saved, "ab"))
        _keep(keep, "ab", ab)
        extra.update(ab_verdict=ab.verdict, ab_reached_tv=ab.reached_tv, ab_samples=ab.samples // 2)
        reports.append(ab)
    failed = next((r for r in reports if r.verdict in ("FAIL", "ERROR")), None)
    verdict, detail = cell_verdict(failed or tokens)
    spec = tokens.speculation or {}
    return Cell(engine, method, setting, settings.label, verdict, tokens.reached_tv, tokens.samples, spec.get("drafts"),
                spec.get("draft_tokens"), spec.get("accepted_tokens"), time.perf_counter() - started, detail, extra)


def _ask_subject(subject, prompt, length: int, seed: int) -> tuple[str, str] | None:
    """(verdict, detail) when ``subject`` cannot answer one answer of ``length`` tokens to ``prompt`` (module
    docstring): ``REFUSED`` by the engine, or ``ERROR`` with the failure's first line (a crashing subject is not worth
    its control's minutes); None when it answers.  The checks' own length: a shorter ask can be refused for itself (a
    minimum of 2 new tokens with ``max_tokens`` 1: vLLM's HTTP 400)."""
    try:
        subject([list(prompt)], length, seed)
    except UnsupportedSetting as refused:
        return "REFUSED", _short(f"by the adapter: {refused}")
    except Exception as error:  # noqa: BLE001 - every failure becomes the cell's verdict, named
        message = f"{type(error).__name__}: {error}"
        refusal = engine_refusal(message)
        if refusal is not None:
            return "REFUSED", refusal
        return "ERROR", _short("one answer asked of the subject before its control: " + message.strip().splitlines()[0])
    return None


def _checkpoint_files(folder, run_args: dict) -> dict[str, Path]:
    """Check kind -> its checkpoint file in ``folder`` (module docstring); {} without a folder."""
    if folder is None:
        return {}
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"checkpoints must be a folder's path or None, got {type(folder).__name__}")
    clash = sorted({"checkpoint", "resume"} & set(run_args))
    if clash:
        raise ValueError(f"checkpoints={os.fspath(folder)!r} names each check's checkpoint; {clash} may not be given beside it")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"checkpoints={os.fspath(folder)!r} is a file, not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    return {kind: folder / f"{kind}.json" for kind in ("control", "tokens", "ab")}


def _continued(saved: dict[str, Path], kind: str) -> dict:
    """The check's ``checkpoint`` and, when its file is there, ``resume`` keywords."""
    if not saved:
        return {}
    path = saved[kind]
    return {"checkpoint": path, "resume": path if path.is_file() else None}


def _seconds_before(path: Path) -> float:
    """The sampling seconds a checkpoint file records (0 when there is none; a ValueError when it is not one)."""
    return float(load_checkpoint(path, "")["seconds"]) if path.is_file() else 0.0


def _keep(keep, kind: str, report) -> None:
    if keep is not None:
        keep(kind, report)


def _tv(value) -> str:
    return "" if value is None else f"{value:.3f}"


def token_table(cells) -> str:
    """Per-token cells as one markdown table: the control's verdict and reached TV, the per-token verdict and reached
    TV, tokens and drafted tokens, the A/B check beside it, the oracle's floor, drafts verified and wall time."""
    lines = ["| engine | method | setting | settings | verdict | control (reached TV) | per-token verdict | per-token reached TV | "
             "tokens | drafted tokens | A/B (reached TV, n per side) | oracle floor | drafts (tokens, accepted) | time | detail |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        e = c.extra
        shared = ", shared" if e.get("control_shared") else ""  # an earlier cell's control of the same setting
        shared += f" from {e['control_source']}" if e.get("control_source") else ""  # ... made by an earlier run
        control = f"{e['control_verdict']} ({_tv(e.get('control_reached_tv'))}{shared})" if "control_verdict" in e else ""
        ab = f"{e['ab_verdict']} ({_tv(e.get('ab_reached_tv'))}, {e.get('ab_samples', 0):,})" if "ab_verdict" in e else ""
        drafts = "" if c.drafts is None else f"{c.drafts:,} ({c.draft_tokens or 0:,}, {c.accepted_tokens or 0:,})"
        drafted = "" if e.get("drafted_tokens") is None else f"{e['drafted_tokens']:,}"
        tokens = f"{e['tokens']:,}" if e.get("tokens") is not None else ""
        floor = "" if e.get("oracle_floor") is None else f"{e['oracle_floor']:g}"
        lines.append(f"| {c.engine} | {c.method} | {c.setting} | `{c.settings}` | **{c.verdict}** | {control} | {e.get('token_verdict', '')} | "
                     f"{_tv(e.get('token_reached_tv'))} | {tokens} | {drafted} | {ab} | {floor} | {drafts} | {c.seconds:.0f} s | "
                     f"{c.detail.replace('|', '/')} |")
    return "\n".join(lines)
