"""Every exception specdec raises on purpose, under one base class.

``except specdec.errors.SpecdecError`` catches all of them.  Each class also keeps the built-in
base that callers caught before this module existed (a :class:`ContractError` is still a
``TypeError``, a :class:`PeerVersionError` still an ``ImportError``), so old ``except`` clauses keep
working.  Argument validation raises plain ``TypeError`` / ``ValueError`` naming the argument
(:mod:`specdec._validation`); the classes here are for what is not a bad argument.

This module imports nothing: the CLI, the server code and the plugin can use it cheaply.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "BenchFileError",
    "BudgetExhausted",
    "ContractError",
    "EngineRefusal",
    "PeerVersionError",
    "SchemeError",
    "ServerRequestError",
    "ServerStartError",
    "SpecdecError",
    "SubjectError",
    "UsageError",
]


class SpecdecError(Exception):
    """The base of every exception specdec raises on purpose."""


class ContractError(SpecdecError, TypeError):
    """A subject returned something its Protocol does not allow (the message names the Protocol)."""


class SubjectError(SpecdecError):
    """A guarded call of the subject under test failed (it raised, hung past its timeout, or broke
    its Protocol); ``failure`` is the :class:`specdec.conformance.calls.SubjectFailure` the report keeps."""

    def __init__(self, failure) -> None:
        super().__init__(failure.line())
        self.failure = failure


class BudgetExhausted(SpecdecError, RuntimeError):
    """More checks were asked for than the run's error budget holds."""


class SchemeError(SpecdecError, ValueError):
    """A scheme record that cannot be registered (a missing or malformed piece, a name taken)."""


class PeerVersionError(SpecdecError, ImportError):
    """The installed peer is not a version the adapter was tested on: one line naming both."""


class EngineRefusal(SpecdecError, ValueError):
    """An engine refused a request's settings in its own words (an in-process engine's ``ValueError``, as a server
    answers HTTP 400): the message starts with :data:`ENGINE_REFUSED`, so a matrix cell reads it as REFUSED."""

    def __init__(self, engine: str, message: str) -> None:
        super().__init__(f"{ENGINE_REFUSED} ({engine}): {' '.join(str(message).split())}")


ENGINE_REFUSED = "refused by the engine"


class ServerRequestError(SpecdecError, RuntimeError):
    """A request to a server subject failed; the message names the request."""


class ServerStartError(SpecdecError, RuntimeError):
    """A server subprocess exited or did not answer before its startup timeout (the message shows its log's tail)."""


class BenchFileError(SpecdecError, ValueError):
    """A benchmark file that cannot be read or does not have the shape its reader needs."""

    def __init__(self, path, problem: str):
        self.path = Path(path)
        super().__init__(f"{self.path}: {' '.join(problem.split())}")


class UsageError(SpecdecError):
    """A bad command-line argument: reported in one line, exit status 2."""
