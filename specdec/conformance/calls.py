"""Calls of the subject under test: a subject that misbehaves gets an ERROR verdict, not a traceback.

A check calls its subject (a verifier, a decoder, an engine behind a Protocol) many times.  Real
subjects crash on some settings, hang, or return what their Protocol does not allow.  Every call
the drivers make goes through a :class:`CallGuard`, which

* runs the call in a worker thread when a per-call timeout is set, and gives up waiting after it
  (a Python thread cannot be killed: a hung call is abandoned, as a daemon thread, and the check
  stops; a CLI run then exits, which ends it);
* turns an exception raised by the subject, a timeout, or a :class:`ContractError` raised while its
  output is read into a :class:`SubjectError` that names the subject's call (case, batch size,
  settings) and the exception's last line.

The engine catches :class:`SubjectError`, stops sampling, and returns a report whose verdict is
ERROR: no statement about the subject's law, only what went wrong and where
(docs/reference.md, "Verdicts").  Errors of the harness itself (a bad argument, a bug in specdec)
are not caught: they are not the subject's.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

from ..errors import ContractError, SubjectError
from ..settings import DEFAULT_CALL_TIMEOUT



@dataclass(frozen=True)
class SubjectFailure:
    """What went wrong with the subject, as the report and its JSON keep it."""

    kind: str  # "raised", "timeout", "contract"
    call: str  # which call: case or prompts, batch size, settings
    message: str  # the exception's type and last line, or what the timeout was
    seconds: float  # how long the failing call ran
    party: str = "subject"  # whose call failed: "subject", or the check's "law oracle"

    def line(self) -> str:
        what = {"raised": "raised", "timeout": "did not return", "contract": "broke its Protocol"}[self.kind]
        return f"the {self.party} {what} during {self.call}: {self.message}"

    def to_dict(self) -> dict:
        return asdict(self)


def last_line(error: BaseException) -> str:
    """``Type: last line of the message`` - what a one-line report can show of an exception."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[-1]}" if lines else type(error).__name__


class CallGuard:
    """Calls the subject with a timeout (None: wait forever, in the calling thread) and reports failures."""

    def __init__(self, timeout: float | None = DEFAULT_CALL_TIMEOUT, *, device=None, party: str = "subject") -> None:
        if timeout is not None and not (timeout > 0):
            raise ValueError(f"call_timeout must be a positive number of seconds or None, got {timeout!r}")
        self.timeout = timeout
        self.device = device
        self.party = party  # named in the report's ERROR: "the subject raised ..." or "the law oracle raised ..."

    def call(self, subject: Callable, args: tuple, describe: Callable[[], str]):
        """``subject(*args)``; a :class:`SubjectError` naming ``describe()`` if it raises or times out."""
        started = time.perf_counter()
        if self.timeout is None:
            try:
                return subject(*args)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:  # noqa: BLE001 - any exception of the subject is the subject's
                raise self._failure("raised", describe(), last_line(error), started) from error
        box: dict = {}
        worker = threading.Thread(target=self._run, args=(subject, args, box), daemon=True, name="specdec-subject-call")
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise self._failure("timeout", describe(), f"no result after the per-call timeout of {self.timeout:g} s "
                                "(call_timeout / --call-timeout); the call was abandoned", started)
        if "error" in box:
            error = box["error"]
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise error
            raise self._failure("raised", describe(), last_line(error), started) from error
        return box["value"]

    def read(self, reader: Callable, describe: Callable[[], str]):
        """``reader()`` (the driver reading the subject's output); a ContractError becomes a SubjectError."""
        try:
            return reader()
        except ContractError as error:
            raise self._failure("contract", describe(), str(error), time.perf_counter()) from error

    def _run(self, subject, args, box: dict) -> None:
        try:
            if self.device is not None and getattr(self.device, "type", None) == "cuda":
                import torch

                torch.cuda.set_device(self.device)  # the current device is per thread
            box["value"] = subject(*args)
        except BaseException as error:  # noqa: BLE001 - handed back to the waiting thread
            box["error"] = error

    def _failure(self, kind: str, call: str, message: str, started: float) -> SubjectError:
        return SubjectError(SubjectFailure(kind, call, message, time.perf_counter() - started, self.party))


def subject_name(subject) -> str:
    """A readable name for any callable: module.qualname, ``<lambda at file:line>``, class name."""
    code = getattr(subject, "__code__", None)
    name = getattr(subject, "__qualname__", None) or getattr(subject, "__name__", None)
    if name and name.endswith("<lambda>") and code is not None:
        return f"<lambda at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}>"
    if name:
        module = getattr(subject, "__module__", None)
        return f"{module}.{name}" if module and module != "__main__" else name
    func = getattr(subject, "func", None)  # functools.partial
    if func is not None:
        return f"partial({subject_name(func)})"
    return type(subject).__name__


def refuse_timing_only(subject, role: str = "subject") -> None:
    """A ValueError for a subject marked ``timing_only`` (a lossy stand-in built for timing, such as
    :class:`specdec.bench.synthetic.SyntheticAcceptance` or a decoder that verifies with it): no conformance check
    takes one, since its verdict would be known in advance and mean nothing."""
    if getattr(subject, "timing_only", False):
        raise ValueError(f"{role} {subject_name(subject)} is timing-only (lossy by construction: "
                         f"{getattr(subject, 'timing_only_why', 'built for benchmarks')}); no conformance check takes it")

