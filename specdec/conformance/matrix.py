"""A conformance matrix: engine x speculation method x sampling setting, speculation on against off (issue 30).

Each :class:`Cell` is one :func:`specdec.check_ab` of an engine with speculation against the same engine
without it, both asked with one :class:`specdec.SamplingSettings`; its row says the verdict, the TV the
check reached, the samples per side, the drafts the subject verified, and the time.  A setting an
engine does not take is a cell too, never a gap: ``REFUSED`` by the adapter (an
:class:`~specdec.sampling_settings.UnsupportedSetting` raised before any request) or by the engine (its
answer HTTP 400 says so); a cell whose subject crashed is ``ERROR`` with the failure's first line.

:func:`run_cell` runs one; :func:`markdown_table` writes them as the table ``docs/matrix.md`` holds, with
the date, the versions and the commit.  The engines' drivers live with the peers (``scripts/matrix``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from ..errors import ENGINE_REFUSED
from ..sampling_settings import SamplingSettings, UnsupportedSetting

__all__ = ["Cell", "cell_verdict", "engine_refusal", "markdown_table", "merge_cells", "read_cells", "run_cell", "write_cells"]

DETAIL_CHARS = 160  # characters of a refusal's or error's message kept in a cell


@dataclass
class Cell:
    """One row of the matrix."""

    engine: str  # "vLLM 0.32 server"
    method: str  # "n-gram K=4 (#55005 workaround)"
    setting: str  # the setting's short name
    settings: str  # SamplingSettings.label
    verdict: str  # PASS, FAIL, INCONCLUSIVE, ERROR, REFUSED
    reached_tv: float | None = None
    samples: int = 0  # per side
    drafts: int | None = None
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    seconds: float = 0.0
    detail: str = ""  # where a FAIL lives, what refused, why it crashed
    extra: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line for a log: the verdict, the control's verdict and reached TV (a per-token cell's), the tokens and
        reached TV, the engine's drafts and accepted tokens, the time and the detail."""
        extra = self.extra
        control = f", control {extra['control_verdict']} at {extra.get('control_reached_tv')}" if "control_verdict" in extra \
            else ""
        return (f"{self.verdict}{control}, {extra.get('tokens', self.samples)} tokens at {self.reached_tv}, drafts "
                f"{self.drafts} ({self.draft_tokens}, {self.accepted_tokens}), {self.seconds:.0f} s; {self.detail}")


def cell_verdict(report) -> tuple[str, str]:
    """(verdict, detail) of a check_ab report (or a :class:`~specdec.conformance.greedy_equality.GreedyComparison`):
    an ERROR whose subject answered HTTP 400, or raised :class:`specdec.errors.EngineRefusal`, is the engine's refusal."""
    if report.verdict == "ERROR":
        message = str((report.error or {}).get("message", ""))
        refusal = engine_refusal(message)
        if refusal is not None:
            return "REFUSED", refusal
        return "ERROR", _short(message.strip().splitlines()[0] if message.strip() else "")
    if report.verdict == "FAIL":
        failed = [c for c in report.checks if not c.passed]
        where = (failed[0].location or failed[0].name) if failed else ""  # a stratum's check has a name, not a location
        p = failed[0].pvalue if failed else None
        return "FAIL", _short(getattr(report, "detail", "") or f"{where}" + (f", p = {p:.2g}" if p is not None else ""))
    return report.verdict, _short(getattr(report, "detail", ""))


def engine_refusal(message: str) -> str | None:
    """The detail of a REFUSED cell ("by the engine: ...") when an error's ``message`` is the engine refusing the
    request's settings - a server's HTTP 400 (what follows the status) or :class:`specdec.errors.EngineRefusal` (an
    in-process engine's own words) - else None."""
    if "HTTP 400" in message:
        return "by the engine: " + _short(message[message.index("HTTP 400"):].splitlines()[0])
    if ENGINE_REFUSED in message:
        return "by the engine: " + _short(message[message.index(ENGINE_REFUSED) + len(ENGINE_REFUSED):].lstrip(" :"))
    return None


def run_cell(engine: str, method: str, setting: str, settings: SamplingSettings,
             build: Callable[[SamplingSettings], tuple], check: Callable[..., object], *, keep: Callable | None = None,
             **check_args) -> Cell:
    """Build (subject, reference) for ``settings`` with ``build`` and run ``check(subject, reference, **check_args)``
    (:func:`specdec.check_ab` or a wrapper): one :class:`Cell`.  An UnsupportedSetting from ``build`` is REFUSED.
    ``keep(report)``, when given, receives the whole report (to be written beside the table)."""
    started = time.perf_counter()
    try:
        subject, reference = build(settings)
    except UnsupportedSetting as refused:
        return Cell(engine, method, setting, settings.label, "REFUSED", detail=_short(f"by the adapter: {refused}"))
    report = check(subject, reference, **check_args)
    if keep is not None:
        keep(report)
    verdict, detail = cell_verdict(report)
    spec = report.speculation or {}
    return Cell(engine, method, setting, settings.label, verdict, report.reached_tv, report.samples // 2, spec.get("drafts"),
                spec.get("draft_tokens"), spec.get("accepted_tokens"), time.perf_counter() - started, detail)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS - 3] + "..."


def write_cells(cells: list[Cell], path, header: dict) -> None:
    """The cells and their header (date, versions, commit, plan) as JSON."""
    from .._io import atomic_write_text

    atomic_write_text(path, json.dumps({"header": header, "cells": [asdict(c) for c in cells]}, indent=1))


def read_cells(path) -> tuple[dict, list[Cell]]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return data["header"], [Cell(**c) for c in data["cells"]]


def merge_cells(earlier: list[Cell], later: list[Cell]) -> list[Cell]:
    """``earlier`` with each cell of the same (engine, method, setting) replaced by ``later``'s, new ones appended."""
    key = lambda c: (c.engine, c.method, c.setting)  # noqa: E731
    newer = {key(c): c for c in later}
    out = [newer.pop(key(c), c) for c in earlier]
    return out + [c for c in later if key(c) in newer]


def _number(value, spec: str) -> str:
    return "" if value is None else format(value, spec)


def markdown_table(cells: list[Cell]) -> str:
    """The cells as one markdown table (engine, method, setting, verdict, reached TV, n, drafts, time, detail)."""
    lines = ["| engine | method | setting | settings | verdict | reached TV | n per side | drafts (tokens, accepted) | time | detail |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        drafts = "" if c.drafts is None else f"{c.drafts:,} ({c.draft_tokens:,}, {c.accepted_tokens:,})"
        lines.append(f"| {c.engine} | {c.method} | {c.setting} | `{c.settings}` | **{c.verdict}** | {_number(c.reached_tv, '.3f')} | "
                     f"{c.samples:,} | {drafts} | {c.seconds:.0f} s | {c.detail.replace('|', '/')} |")
    return "\n".join(lines)
