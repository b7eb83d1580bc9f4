"""What a server subject's client retries, for how long, and why a retry cannot bias the law.

A real deployment restarts under a check (a rolling update, an out-of-memory kill), throttles (HTTP 429
or 503 with ``Retry-After``), resets connections and answers slowly for a while.  The client retries a
request that failed in transport - and only those:

* the connection was refused, reset or closed (the server restarting, a proxy dropping it), also in the
  middle of an answer (a body cut short is never read as an answer);
* no answer within ``request_timeout`` (a slow phase);
* HTTP 429, 502, 503 and 504, after the server's ``Retry-After`` (seconds or an HTTP date) when it
  sends one, else after an exponential backoff (0.5 s doubling to 30 s).

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
import time
from dataclasses import dataclass

from ..._validation.scalars import as_float

__all__ = ["RETRIED_STATUS", "RetryPolicy", "retry_after_seconds"]

RETRIED_STATUS = frozenset({429, 502, 503, 504})


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
        """Seconds to wait before attempt ``attempt + 1`` (0-based attempts made), or None when the budget is spent."""
        delay = min(retry_after, self.longest_wait) if retry_after is not None else min(self.first * 2**attempt, self.longest)
        if time.monotonic() + delay - started > self.budget:
            return None
        return delay


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (a number, or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
