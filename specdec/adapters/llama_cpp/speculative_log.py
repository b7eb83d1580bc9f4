"""The token ids of one run of llama.cpp's ``llama-speculative`` example, read from its debug log (``-lv 5``).

The example (``examples/speculative/speculative.cpp``, ``main``, llama.cpp ``0c1e570`` as vendored in
llama-cpp-python 0.3.36's sdist) prints the generated *text* on stdout and no token ids; with ``-lv 5`` (debug in this commit) its
``LOG_DBG`` lines on stderr name every emitted token's id, once, in order:

* ``draft token I of sequence S (ID, 'PIECE') accepted`` - a drafted token kept by the stochastic verification
  (temperature > 0);
* ``the sampled target token matches the Ith drafted token of sequence S (ID, 'PIECE') - accepted`` - a drafted
  token kept by the greedy verification (temperature 0);
* ``the sampled target token (ID, 'PIECE') did not match, or we ran out of drafted tokens`` - the last token of
  each verification round: drawn in place of a rejected draft, or after the last draft, or (first round) from the
  prompt alone.

``draft token I of sequence S (ID, 'PIECE') rejected`` marks a rejection (its id is not emitted).  A piece may hold
a newline, so lines are matched on the whole text (``re.DOTALL``) with the piece matched lazily up to its closing
``')``.  The summary lines ``n_drafted = N`` and ``n_accept = N`` (``LOG_INF``) are the example's own counters.

:func:`parse_transcript` returns a :class:`Transcript`; it raises :class:`specdec.errors.ContractError` when the
log does not have the shape above (no round, no summary), never guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import ContractError

__all__ = ["Transcript", "parse_transcript"]

_EVENT = re.compile(
    r"draft token (?P<i>\d+) of sequence (?P<s>\d+) \((?P<stoch>-?\d+), '.*?'\) (?P<verdict>accepted|rejected)\n"
    r"|the sampled target token matches the (?P<gi>\d+)th drafted token of sequence (?P<gs>\d+) \((?P<greedy>-?\d+), '.*?'\) - accepted\n"
    r"|the sampled target token \((?P<last>-?\d+), '.*?'\) did not match, or we ran out of drafted tokens\n",
    re.DOTALL,
)
_COUNTER = re.compile(r"\b(n_draft|n_predict|n_drafted|n_accept)\s+=\s+(\d+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Transcript:
    """One run: ``tokens`` (every emitted id in order), ``rounds`` (how many tokens each verification round emitted:
    its accepted drafts, then its last token), ``rejected`` (rejected drafts seen), and the example's own counters
    ``n_drafted`` (draft-model steps; one drafted token each with one sequence) and ``n_accept`` (drafts kept)."""

    tokens: tuple[int, ...]
    rounds: tuple[int, ...]
    rejected: int
    n_drafted: int
    n_accept: int
    n_predict: int

    @property
    def accepted(self) -> int:
        """Drafted tokens kept, counted from the per-token lines (equals ``n_accept``, which :func:`parse_transcript` checks)."""
        return sum(self.rounds) - len(self.rounds)


def parse_transcript(log: str) -> Transcript:
    """The :class:`Transcript` of a ``llama-speculative -lv 5`` run's stderr ``log`` (module docstring)."""
    if not isinstance(log, str):
        raise TypeError(f"log must be the run's stderr as a str, got {type(log).__name__}")
    tokens: list[int] = []
    rounds: list[int] = []
    current = rejected = 0
    for match in _EVENT.finditer(log):
        if match.group("verdict") == "rejected":
            rejected += 1
            continue
        token = match.group("stoch") or match.group("greedy") or match.group("last")
        tokens.append(int(token))
        current += 1
        if match.group("last") is not None:
            rounds.append(current)
            current = 0
    counters = {name: int(value) for name, value in _COUNTER.findall(log)}
    missing = [name for name in ("n_drafted", "n_accept", "n_predict") if name not in counters]
    if not rounds or missing:
        raise ContractError(f"not a llama-speculative -lv 5 log: {len(rounds)} verification rounds found, summary lines "
                            f"missing: {missing or 'none'}; its last lines: {log[-400:]!r}")
    if current:
        raise ContractError(f"llama-speculative's log ends with {current} accepted tokens after its last round: a cut log?")
    transcript = Transcript(tuple(tokens), tuple(rounds), rejected, counters["n_drafted"], counters["n_accept"], counters["n_predict"])
    if transcript.accepted != transcript.n_accept or len(tokens) != transcript.n_predict:
        raise ContractError(f"llama-speculative's log names {len(tokens)} tokens, {transcript.accepted} of them accepted drafts, "
                            f"but its summary says n_predict = {transcript.n_predict}, n_accept = {transcript.n_accept}")
    return transcript
