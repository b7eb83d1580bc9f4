"""What a server subject's client retries, for how long, and why a retry cannot bias the law.

A real deployment restarts under a check (a rolling update, an out-of-memory kill), throttles (HTTP 429
or 503 with ``Retry-After``), resets connections and answers slowly for a while.  The client retries a
request that failed in transport - and only those:

* the connection was refused, reset or closed (the server restarting, a proxy dropping it), also in the
  middle of an answer (a body cut short is never read as an answer);
* no answer within ``request_timeout`` (a slow phase);
* HTTP 429, 502, 503 and 504, after the server's ``Retry-After`` (seconds or an HTTP date, at most
  ``longest_wait``) when it sends one, else after an exponential backoff (0.5 s doubling to 30 s).

A ``Retry-After`` that is neither a non-negative decimal number of seconds nor an HTTP date (``nan``,
``inf``, ``-1``, ``1e3``, a number too large for a float) is treated as absent: the backoff applies.
The backoff's exponent stops growing after 64 doublings, so no attempt count overflows it.  The budget
always holds: a wait is granted only when the time spent on the request plus the wait stays within it.

Everything else is an answer, and an answer is never retried: an HTTP 4xx or 500, a body that is not
the contract's (missing token ids, the wrong number of choices) are the subject's ERROR at once.  The
retries of one request stop after ``budget`` seconds (default 300, inside the check's per-call
timeout), and the call ends in :class:`~specdec.errors.ServerRequestError` naming the request, the
attempts and the last failure.

**Why retrying cannot bias the law.**  A request is retried with the same body, seed included, so a
server that samples from the request's seed draws the same samples again; whether a request is
retried depends only on how its transport failed, never on the tokens it returned (none were read);
and a call's rows are used only when every one of its requests has its complete answer, so no
half-answered request is counted and no request is counted twice.  A failure that depends on the
sampled tokens (a crash on some output) recurs with the same seed, exhausts the budget and is an
ERROR - retrying never selects the samples that happened to survive.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from dataclasses import dataclass

from ..._validation.scalars import as_float, as_int

__all__ = ["RETRIED_STATUS", "RetryPolicy", "as_retry_policy", "retry_after_seconds"]

RETRIED_STATUS = frozenset({429, 502, 503, 504})
MAX_DOUBLINGS = 64  # the backoff's exponent stops here: first * 2**64 already exceeds any sane longest
_SECONDS = re.compile(r"[ \t]*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)[ \t]*")  # RFC 9110 delay-seconds, decimals tolerated


@dataclass(frozen=True)
class RetryPolicy:
    """``budget``: seconds one request may spend in retries (0: never retry); backoff from ``first`` seconds,
    doubling, at most ``longest``; a server's Retry-After is honoured up to ``longest_wait``."""

    budget: float = 300.0
    first: float = 0.5
    longest: float = 30.0
    longest_wait: float = 120.0

    def __post_init__(self) -> None:
        for name in ("budget", "first", "longest", "longest_wait"):
            object.__setattr__(self, name, as_float(f"retry {name}", getattr(self, name), minimum=0.0))

    def wait(self, attempt: int, retry_after: float | None, started: float) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` (0-based attempts made), or None when the budget is spent:
        a finite delay, at most ``longest_wait`` (a usable ``retry_after``) or ``longest`` (the backoff), granted
        only when ``time.monotonic() - started`` plus the delay stays within the budget.  A ``retry_after`` that is
        not a finite number >= 0 is treated as absent."""
        attempt = as_int("attempt", attempt, minimum=0)
        if _usable(retry_after):
            delay = min(float(retry_after), self.longest_wait)
        else:
            delay = min(self.first * 2.0 ** min(attempt, MAX_DOUBLINGS), self.longest)
        if self.budget == 0 or time.monotonic() + delay - started > self.budget:
            return None
        return delay


def _usable(seconds) -> bool:
    return isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds) and seconds >= 0


def as_retry_policy(value) -> RetryPolicy:
    """A client's ``retry=``: a RetryPolicy, or a number of seconds (its budget; 0: never retry)."""
    if isinstance(value, RetryPolicy):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"retry must be a RetryPolicy or a number of seconds, got {type(value).__name__} {value!r}")
    return RetryPolicy(budget=value)


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (a non-negative number, or an HTTP date: one in the past is 0), None when
    absent or unusable (not such a number nor a date, or not finite)."""
    if not value or not isinstance(value, str):
        return None
    if _SECONDS.fullmatch(value):
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    try:
        seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, OSError, IndexError):
        return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None
