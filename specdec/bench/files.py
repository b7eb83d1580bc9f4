"""Reading the benchmark files (stored runs, ``rows.json``): every problem is one line naming the file.

:class:`BenchFileError` is the one error: ``"<path>: <what is wrong>"``, where what is wrong names
the entry (``benchmarks[3]``, ``extra_info['ratios']['speedup']``) and shows the value found,
shortened.  The command line turns it into the NO_VERDICT exit status; a library caller gets a
``ValueError``.
"""

from __future__ import annotations

import codecs
import json
import math
import reprlib
from datetime import datetime
from pathlib import Path

from ..errors import BenchFileError

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40
_SHORT.maxlist = _SHORT.maxdict = 4


def shown(value) -> str:
    """``value`` for a one-line message: JSON's names for null / true / false, long values shortened."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return _SHORT.repr(value)


def read_json(path):
    """The JSON value in the file at ``path``: UTF-8 text (a BOM is refused too), any JSON value."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise BenchFileError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        raise BenchFileError(path, "not UTF-8 text: " + ("UTF-16 (re-save it as UTF-8)" if utf16
                                                         else f"byte {error.start}: {error.reason}")) from None
    if not text.strip():
        raise BenchFileError(path, "not JSON: the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise BenchFileError(path, f"not JSON ({error.msg}: line {error.lineno} column {error.colno}); "
                                   "truncated, or not a benchmark file") from None


class Checker:
    """Shape checks on one file's decoded JSON, each failure a :class:`BenchFileError` naming ``path``."""

    def __init__(self, path):
        self.path = Path(path)

    def fail(self, problem: str):
        raise BenchFileError(self.path, problem)

    def entry(self, where: str, mapping: dict, key: str):
        """``mapping[key]``, which must be there (its type is checked by the caller)."""
        if key not in mapping:
            self.fail(f"{where} has no {key!r}")
        return mapping[key]

    def mapping(self, where: str, value, *, optional: bool = False) -> dict:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            self.fail(f"{where} must be a JSON object, got {shown(value)}")
        return value

    def sequence(self, where: str, value, *, nonempty: bool = False) -> list:
        if not isinstance(value, list):
            self.fail(f"{where} must be a JSON list, got {shown(value)}")
        if nonempty and not value:
            self.fail(f"{where} is empty")
        return value

    def text(self, where: str, value, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            self.fail(f"{where} must be a string, got {shown(value)}")
        return value

    def flag(self, where: str, value) -> bool:
        if not isinstance(value, bool):
            self.fail(f"{where} must be true or false, got {shown(value)}")
        return value

    def number(self, where: str, value, *, positive: bool = False, nonnegative: bool = False, optional: bool = False) -> float | None:
        """A finite real (JSON's NaN and Infinity refused; true / false are not numbers), > 0 when ``positive``,
        >= 0 when ``nonnegative``."""
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(f"{where} must be a finite number, got {shown(value)}")
        if positive and not value > 0:
            self.fail(f"{where} must be positive, got {shown(value)}")
        if nonnegative and not value >= 0:
            self.fail(f"{where} must be >= 0, got {shown(value)}")
        return value

    def timestamp(self, where: str, value) -> str:
        """An ISO 8601 date and time (pytest-benchmark's ``datetime``); kept as the string stored."""
        self.text(where, value)
        try:
            datetime.fromisoformat(value)
        except ValueError:
            self.fail(f"{where} must be an ISO date and time, got {shown(value)}")
        return value
