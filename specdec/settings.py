"""The settings of a conformance run: one immutable record, its defaults and its validation.

Every ``check_*`` function takes ``settings=`` (a :class:`RunSettings`) and, for convenience, any
of its fields as keyword arguments, which replace the record's fields::

    fast = RunSettings(tv=0.05, seed=3)
    check_verifier(my_verifier, settings=fast)
    check_verifier(my_verifier, settings=fast, n=10_000)   # a changed copy
    check_verifier(my_verifier, tv=0.05)                    # the defaults, one field changed

A record is validated once, when it is made (``TypeError`` / ``ValueError`` naming the field);
``replace`` returns a validated copy.  Checks with other defaults (:func:`check_ab` plans for
TV 0.05 and at most 10^6 samples per side) start from their own record (:data:`AB_DEFAULTS`).

This module imports neither torch nor the conformance engine: the CLI reads the defaults from it
cheaply.  ``budget`` and ``console`` are checked by what they do (an ``allot`` method; ``say`` and
``progress``), ``device`` when the engine resolves it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from ._validation.scalars import as_float, as_int, as_seed

__all__ = ["AB_DEFAULTS", "DEFAULT_AB_MAX_N", "DEFAULT_CALL_TIMEOUT", "DEFAULT_MAX_N", "RunSettings", "resolve"]

DEFAULT_MAX_N = 20_000_000  # samples per check
DEFAULT_AB_MAX_N = 1_000_000  # samples per side and prompt of a two-sample check
DEFAULT_CALL_TIMEOUT = 600.0  # seconds per call of the subject; a chunk of a CPU check takes a few
POWER = 0.99  # every planned check catches its stated TV with this probability


@dataclass(frozen=True)
class RunSettings:
    """How a check samples and judges (the fields, in the order ``SampleRequest`` took its first five).

    ``tv``: the TV every check must detect with power 0.99 (n planned by F34 on the pooled bins), and
    the TV the verdict is held to.  ``time_budget``: seconds of sampling (n as large as they allow).
    ``n``: samples per check (per side and prompt for two samples), fixed; with ``time_budget`` too,
    the budget may stop it first.  ``max_n``: the most any check draws.  ``chunk_size``: samples per
    call of the subject (with the seed, what makes a campaign reproducible).  ``seed``: chunk c of
    stream s draws from (seed, s, c).  ``family_alpha``: the report's false-alarm rate, Holm across its
    checks, unless ``budget`` (a run's :class:`~specdec.conformance.ErrorBudget`) allots it.
    ``device``: where verifiers' drafts, calls and counting run (default: CUDA when available).
    ``console``: where the plan and progress go (default: a terminal's stderr).  ``name``: the report's
    subject.  ``call_timeout``: seconds one call of the subject may take (None: no limit).
    ``checkpoint``: where the campaign's counts are written as it goes (a path, replaced atomically, or
    a callable given the checkpoint dict); ``resume``: a checkpoint to continue (a path or a dict: a
    checkpoint, a report's JSON, or a ``specdec check --json`` document) - the same subject, settings
    and seed, or a ValueError naming the difference (:mod:`specdec.conformance.checkpoints`).
    ``early_stop``: look at the counts as they grow and stop at the first look where a check rejects at
    the interim level (a tenth of the alpha, spread over at most 32 looks; the final test keeps the rest:
    docs/reference.md §10, P4).
    """

    tv: float | None = 0.01
    time_budget: float | None = None
    n: int | None = None
    max_n: int = DEFAULT_MAX_N
    chunk_size: int | None = None
    seed: int = 0
    family_alpha: float = 1e-6
    budget: Any = None
    device: Any = None
    console: Any = None
    name: str | None = None
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT
    checkpoint: Any = None
    resume: Any = None
    early_stop: bool = True

    def __post_init__(self) -> None:
        set_ = lambda field, value: object.__setattr__(self, field, value)  # noqa: E731
        if self.tv is not None:
            set_("tv", as_float("tv", self.tv, minimum=0.0, maximum=1.0, low_open=True, high_open=True))
        if self.time_budget is not None:
            set_("time_budget", as_float("time_budget", self.time_budget, minimum=0.0, low_open=True))
        if self.n is not None:
            set_("n", as_int("n", self.n, minimum=1))
        set_("max_n", as_int("max_n", self.max_n, minimum=1))
        if self.chunk_size is not None:
            set_("chunk_size", as_int("chunk_size", self.chunk_size, minimum=1))
        set_("seed", as_seed(self.seed))
        set_("family_alpha", as_float("family_alpha", self.family_alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True))
        if self.call_timeout is not None:
            set_("call_timeout", as_float("call_timeout", self.call_timeout, minimum=0.0, low_open=True))
        if self.tv is None and self.time_budget is None and self.n is None:
            raise ValueError("give tv, n or time_budget (the deviation to detect, samples per check, or seconds of sampling)")
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"name must be a str or None, got {type(self.name).__name__} {self.name!r}")
        if self.budget is not None and not callable(getattr(self.budget, "allot", None)):
            raise TypeError(f"budget must be a specdec.conformance.ErrorBudget or None, got {type(self.budget).__name__}")
        if self.console is not None and not all(callable(getattr(self.console, m, None)) for m in ("say", "progress")):
            raise TypeError(f"console must be a specdec.conformance.Console or None, got {type(self.console).__name__}")
        if self.checkpoint is not None and not (callable(self.checkpoint) or isinstance(self.checkpoint, (str, os.PathLike))):
            raise TypeError(f"checkpoint must be a path, a callable or None, got {type(self.checkpoint).__name__}")
        if isinstance(self.checkpoint, (str, os.PathLike)):
            _writable_file("checkpoint", self.checkpoint)
        if not isinstance(self.early_stop, bool):
            raise TypeError(f"early_stop must be a bool, got {type(self.early_stop).__name__} {self.early_stop!r}")
        if self.resume is not None and not isinstance(self.resume, (str, os.PathLike, dict)):
            raise TypeError(f"resume must be a path, a checkpoint dict or None, got {type(self.resume).__name__}")

    def replace(self, **changes) -> "RunSettings":
        """A validated copy with ``changes``; an unknown field is a TypeError naming it."""
        unknown = sorted(set(changes) - FIELDS)
        if unknown:
            raise TypeError(f"unknown run setting(s) {', '.join(map(repr, unknown))}; the settings are {', '.join(sorted(FIELDS))}")
        return replace(self, **changes)

    def describe(self) -> str:
        """How n is chosen, in one phrase (the report's ``sample_size_rule``)."""
        within = f" within a time budget of {self.time_budget:g} s" if self.time_budget is not None else ""
        if self.n is not None:
            if self.n > self.max_n:
                return f"n = {self.max_n:,} per check (asked {self.n:,}, capped by max_n){within}"
            return f"n = {self.n:,} per check, fixed by the caller{within}"
        if self.time_budget is not None:
            return f"as many samples as fit a time budget of {self.time_budget:g} s (max_n {self.max_n:,})"
        return f"planned to detect TV {self.tv:g} with power {POWER} (max_n {self.max_n:,})"


def _writable_file(name: str, path) -> None:
    """A ValueError unless ``path`` can be written as a file: not a folder, its folder exists (checked when the
    record is made, not after sampling started)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not path or os.path.isdir(path):
        raise ValueError(f"{name} must be the path of a file, got the folder {path!r}")
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: the folder {folder!r} of {path!r} does not exist")


FIELDS = frozenset(f.name for f in fields(RunSettings))
AB_DEFAULTS = RunSettings(tv=0.05, max_n=DEFAULT_AB_MAX_N)  # two samples: twice a one-sample check's n per side


def resolve(settings: RunSettings | None, overrides: dict, defaults: RunSettings = RunSettings()) -> RunSettings:
    """``settings`` (or ``defaults``) with the keyword ``overrides`` applied: what a ``check_*`` runs with."""
    if settings is None:
        settings = defaults
    elif not isinstance(settings, RunSettings):
        raise TypeError(f"settings must be a specdec.RunSettings or None, got {type(settings).__name__}")
    return settings.replace(**overrides) if overrides else settings
