"""The per-token matrix loop every engine's ``*_tokens`` driver shares (issues 38, 39): its command line, one
:func:`specdec.conformance.token_cells.run_token_cell` per (method, setting) on the real prompts of :mod:`.token_prompts`,
the control of a setting run once and shared by the engine's methods, everything built closed after its cell.  A run
that reads its file (``--resume``, ``--append``) also takes the controls earlier runs PASSed from it
(:func:`stored_controls`): a setting's other methods, run on another day, do not pay for its control again.  A matrix
whose engine without speculation is another matrix's (vLLM's in-process engine is judged against the plain server the
server matrix already controlled) names that file in ``control_files``: its PASSed controls are taken in every run.

A driver states its engine and passes two functions: ``build(method, settings)`` -> (the engine speculating with
``method``, the engine without) and ``oracle_of(settings)`` -> the engine's law oracle; each may raise
:class:`specdec.sampling_settings.UnsupportedSetting` (a ``REFUSED`` cell naming who refused).  Greedy settings are
not per-token cells (row-by-row equality: the A/B drivers).

Each cell keeps its checks' counts as they go in ``.peers/matrix/checkpoints/FILE/tvTV/METHOD-SETTING/``
(:func:`checkpoint_folder`; :mod:`specdec.conformance.checkpoints`): ``--resume`` continues a cell stopped midway (a
killed process, a session's end) from them, drawing only what it had left, with the same command line (a changed one
is refused, naming what changed); a run without ``--resume`` starts each of its cells afresh.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from specdec.conformance.matrix import read_cells
from specdec.conformance.token_cells import StoredControl, run_token_cell

from . import runner
from .header import header
from .settings import eos_of
from .token_prompts import LENGTH, token_prompts


@dataclass(frozen=True)
class TokenMatrix:
    """One engine's per-token matrix: ``methods`` (name -> the table's label), ``settings`` (name -> record),
    ``file`` under docs/data/matrix, ``seconds_per_cell`` at ``default_tv`` (scaled by (default_tv / tv)^2 for the
    plan), ``seed_base`` (cell k uses seed_base + 10 k), ``ab_n`` answers per prompt and side of the A/B check beside
    (None: none), ``rows_per_call`` answers per call of the engine, ``eos(settings)`` the checks' absorbing tokens,
    ``prompts()`` the prompts as token ids (default :func:`.token_prompts.token_prompts`) and ``length`` the tokens
    tested per answer; ``control_files``: other files under the same folder whose controls are this matrix's too (the
    same engine without speculation, oracle, prompts and length), taken in every run (:func:`known_controls`)."""

    doc: str
    engine: str
    header_engine: str
    methods: dict[str, str]
    settings: dict
    file: str
    seconds_per_cell: float
    default_tv: float = 0.03
    seed_base: int = 4000
    ab_n: int | None = None
    rows_per_call: int = 16
    checks_per_cell: int = 24  # the control's and the subject's per-token checks (P1, P3 strata, P7) and the A/B check's
    eos: Callable = eos_of  # settings -> the checks' absorbing tokens (an engine that always stops at its EOS says so)
    prompts: Callable = token_prompts
    length: int = LENGTH
    control_files: tuple[str, ...] = ()


def run_matrix(matrix: TokenMatrix, build: Callable, oracle_of: Callable, argv=None, watch: Callable | None = None) -> int:
    """Parse ``argv`` (``--method``, ``--only``, ``--tv``, ``--append``, ``--resume``, ``--out``) and run the planned
    cells, a setting's methods one after another so that they share its control (module docstring).  ``watch(method)``,
    when given, is called before each cell and returns a function applied to the cell once run."""
    settings = {name: s for name, s in matrix.settings.items() if not s.greedy}
    args = runner.arguments(matrix.doc, None, list(matrix.methods), list(settings), argv, default_tv=matrix.default_tv)
    prompts = [list(p) for p in matrix.prompts()]
    controls: dict[str, object] = dict(known_controls(matrix, args))  # setting -> its control (method-free)
    if controls:
        print(f"{len(controls)} settings' controls PASSed in earlier runs, taken from the files: {', '.join(controls)}", flush=True)

    def cell_of(number, method, name, budget):
        folder = checkpoint_folder(matrix, args.tv, method, name)
        if not args.resume:
            shutil.rmtree(folder, ignore_errors=True)  # a fresh cell: no counts of an earlier one
        built = []

        def make(s):
            pair = build(method, s)
            built.extend(pair)
            return pair

        def oracle(s):
            made = oracle_of(s)
            built.append(made)
            return made

        def keep(kind, report):
            if kind == "control":
                controls[name] = report
            runner.keeper(matrix.engine, method, f"{name} {kind}")(report)

        finish = watch(method) if watch is not None else (lambda cell: cell)
        try:
            cell = run_token_cell(matrix.engine, matrix.methods[method], name, settings[name], make, oracle, prompts=prompts,
                                  length=matrix.length, tv=args.tv, seed=matrix.seed_base + 10 * number, budget=budget,
                                  eos_token_id=matrix.eos(settings[name]), rows_per_call=matrix.rows_per_call, ab_n=matrix.ab_n,
                                  keep=keep, control_report=controls.get(name), checkpoints=folder)
        finally:
            for made in built:
                close = getattr(made, "close", None)
                if close is not None:
                    close()
        return finish(cell)

    plan = [(m, name) for name in (args.only or list(settings)) for m in args.method]  # a setting's methods together
    runner.run(plan, cell_of, file=matrix.file, engine=matrix.header_engine, n=None, append=args.append, resume=args.resume,
               seconds_per_cell=matrix.seconds_per_cell * (matrix.default_tv / args.tv) ** 2, out=args.out,
               checks_per_cell=matrix.checks_per_cell, tv=args.tv, label=matrix.methods.get)
    return 0


def checkpoint_folder(matrix: TokenMatrix, tv: float, method: str, setting: str) -> Path:
    """Where a cell's checks keep their counts (module docstring): one folder per file, asked TV, method and setting."""
    return runner.OUT / "checkpoints" / Path(matrix.file).stem / f"tv{tv:g}" / runner.slug(method, setting)


def known_controls(matrix: TokenMatrix, args) -> dict[str, StoredControl]:
    """Setting -> a control earlier runs PASSed at ``args.tv`` with today's versions: from the matrix's
    ``control_files`` always, and from its own file with ``--resume`` or ``--append`` (its own taking precedence)."""
    versions = header(matrix.header_engine, None, args.tv)["versions"]
    found: dict[str, StoredControl] = {}
    for name in matrix.control_files:
        found.update(stored_controls(Path(args.out) / name, versions, args.tv, label=f"{name}, "))
    if args.resume or args.append:
        found.update(stored_controls(Path(args.out) / matrix.file, versions, args.tv))
    return found


def stored_controls(path: Path, versions: dict, tv: float, label: str = "") -> dict[str, StoredControl]:
    """Setting -> the control an earlier run PASSed, read from the cells of ``path``: only where the file's versions
    (engine, oracle libraries, specdec) are ``versions`` and the cell asked this ``tv`` (the driver's prompts, length
    and oracle are the file's own); a control that did not PASS is run again.  ``label`` starts each source (another
    matrix's file names itself)."""
    if not path.exists():
        return {}
    file_header, cells = read_cells(path)
    if file_header.get("versions") != versions:
        return {}
    runs = runner.runs_of(file_header)
    found: dict[str, StoredControl] = {}
    for cell in cells:
        extra = cell.extra
        if (extra.get("kind") != "per token" or extra.get("control_shared") or extra.get("control_verdict") != "PASS"
                or extra.get("asked_tv") != tv or cell.setting in found):
            continue
        number = extra.get("run")
        run = runs[number] if isinstance(number, int) and 0 <= number < len(runs) else {}
        source = f"{label}the run of {run.get('date', 'an unrecorded date')} (commit {str(run.get('commit', 'unrecorded'))[:12]})"
        found[cell.setting] = StoredControl("PASS", extra.get("control_reached_tv"), int(extra.get("control_tokens") or 0), source)
    return found


def run_with_servers(matrix: TokenMatrix, start: Callable, client_of: Callable, oracle_of: Callable, argv=None,
                     watch: Callable | None = None) -> int:
    """:func:`run_matrix` for an engine behind servers: ``start(name)`` -> a started :class:`ServerProcess` for each
    method asked (booting side by side before the first cell) and for ``"plain"``, the engine without speculation,
    started only when a control needs it (:class:`ServerOnDemand`: a setting whose control is stored never asks it);
    ``client_of(server, name, settings)`` -> the client of server ``name``.  Every server is stopped (logs kept) after
    the last cell, whatever happens.  ``watch(servers, method)``, when given, is called before each cell and returns
    what to apply to the cell once run (e.g. the server's counters read around it)."""
    args = runner.arguments(matrix.doc, None, list(matrix.methods), list(matrix.settings), argv, default_tv=matrix.default_tv)
    servers = {name: start(name) for name in args.method}
    plain = ServerOnDemand(lambda: start("plain"), lambda server, settings: client_of(server, "plain", settings))
    try:
        for server in servers.values():
            server.wait_ready()

        def build(method, settings):
            return client_of(servers[method], method, settings), plain.with_settings(settings)

        return run_matrix(matrix, build, oracle_of, argv, watch=None if watch is None else (lambda method: watch(servers, method)))
    finally:
        for server in servers.values():
            server.stop(keep_log=True)
        plain.stop()


class ServerOnDemand:
    """A server started, and waited for, at the first request of one of its clients: the engine without speculation,
    which a cell whose control is stored (or whose subject is refused) never asks.  ``start()`` -> a booting
    :class:`ServerProcess`; ``client_of(server, settings)`` -> its client.  :meth:`with_settings` -> a
    :class:`DeferredClient` of one setting."""

    def __init__(self, start: Callable, client_of: Callable) -> None:
        self._start, self._client_of, self.server = start, client_of, None

    def with_settings(self, settings) -> "DeferredClient":
        return DeferredClient(lambda: self.client(settings))

    def client(self, settings):
        if self.server is None:
            self.server = self._start()
            self.server.wait_ready()
        return self._client_of(self.server, settings)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(keep_log=True)


class DeferredClient:
    """A :class:`specdec.protocols.Decoder` made by ``make()`` at its first request (or first other attribute read);
    closing one never made makes nothing."""

    def __init__(self, make: Callable) -> None:
        self._make, self._made = make, None

    def _client(self):
        if self._made is None:
            self._made = self._make()
        return self._made

    def __call__(self, prompts, max_new_tokens: int, seed: int):
        return self._client()(prompts, max_new_tokens, seed)

    def close(self) -> None:
        close = getattr(self._made, "close", None)
        if close is not None:
            close()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._client(), name)
