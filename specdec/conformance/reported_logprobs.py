"""Reported log-probabilities: does an engine report the law it samples from? (issue 38, item 4)

An engine that returns a log-probability for each emitted token (vLLM ``logprobs``, llama-server
``n_probs``, transformers ``scores``) claims a law at that position: the raw model's log-softmax, or the
processed law it sampled from (``claims``: engines differ; the caller passes the oracle of the law claimed,
e.g. a raw oracle at temperature 1 for ``"raw"``).  For every emitted token ``continuation[t]`` this module
computes ``|reported[t] - log p_oracle(continuation[t] | prompt + continuation[:t])|``, summarised by its max,
its mean, per position and for drafted vs not drafted positions (a :class:`specdec.protocols.DraftMarker`'s
``last_drafted()``).

The tolerance comes from the control: the same engine with speculation off, on the same prompts, compared with
the same oracle (:func:`control_tolerance`).  Decision (the issue is silent): tolerance = ``CONTROL_FACTOR`` x
the control's max deviation + ``CONTROL_MARGIN`` (an exact control, deviation 0, still allows float rounding).
A speculative subject whose max deviation exceeds it reports a law it does not sample from, or a law that
speculation changed: a candidate finding, once the control PASSes against a fixed absolute bound of its own.

A token whose oracle probability is 0 gives deviation inf (the engine emitted a token the law forbids); a token
outside a compact law's listed ids (its probability is folded in ``rest``) cannot be compared: it is counted as
``unlisted`` and left out of the summaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .._validation import as_float
from ..laws.oracles import TokenLaw

__all__ = ["CLAIMS", "CONTROL_FACTOR", "CONTROL_MARGIN", "LogprobReport", "compare_logprobs", "control_tolerance"]

CLAIMS = ("raw", "sampled")  # raw: the model's log-softmax; sampled: the processed law the token was drawn from
CONTROL_FACTOR = 2.0  # tolerance = CONTROL_FACTOR * control max deviation + CONTROL_MARGIN
CONTROL_MARGIN = 1e-6


@dataclass(frozen=True)
class LogprobReport:
    """Per-token |reported - oracle| log-probability deviations and their summaries."""

    claims: str
    tokens: int  # tokens compared (listed in the oracle's law)
    unlisted: int  # tokens the oracle's law did not list (left out)
    max_deviation: float
    mean_deviation: float
    by_position: tuple[float, ...]  # max deviation at position t (nan where no token was compared)
    drafted_max: float | None  # max over drafted positions (None when drafts were not marked or none were)
    undrafted_max: float | None
    drafted_tokens: int
    tolerance: float | None = None
    deviations: tuple[tuple[float, ...], ...] = field(default=(), repr=False)  # per answer, per token (nan: unlisted)

    @property
    def verdict(self) -> str:
        """PASS / FAIL against ``tolerance``; NO TOLERANCE when none was given, NO TOKENS when none compared."""
        if self.tokens == 0:
            return "NO TOKENS"
        if self.tolerance is None:
            return "NO TOLERANCE"
        return "PASS" if self.max_deviation <= self.tolerance else "FAIL"


def _oracle_logprob(law: TokenLaw, token: int) -> float:
    """log p(token) under ``law``; nan when the law does not list it (its mass is in ``rest``)."""
    probs = np.asarray(law.probs, dtype=np.float64)
    if law.ids is None:
        if not 0 <= token < probs.size:
            raise ValueError(f"token {token} is outside the oracle's vocabulary of {probs.size}")
        p = float(probs[token])
    else:
        found = np.flatnonzero(np.asarray(law.ids) == token)
        if not found.size:
            return math.nan if law.rest > 0 else -math.inf
        p = float(probs[found[0]])
    return math.log(p) if p > 0 else -math.inf


def _as_answers(prompts, continuations, reported, drafted) -> None:
    for name, value in (("prompts", prompts), ("continuations", continuations), ("reported", reported)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError(f"{name} must be a sequence of sequences, got {type(value).__name__}")
    if not (len(prompts) == len(continuations) == len(reported)):
        raise ValueError(f"prompts, continuations and reported must have one entry per answer, got lengths "
                         f"{len(prompts)}, {len(continuations)}, {len(reported)}")
    for i, (c, r) in enumerate(zip(continuations, reported)):
        if len(c) != len(r):
            raise ValueError(f"reported[{i}] has {len(r)} log-probabilities for {len(c)} tokens")
        for t, value in enumerate(r):
            v = float(value)
            if math.isnan(v) or v > 1e-6:
                raise ValueError(f"reported[{i}][{t}] must be a log-probability (<= 0, not nan), got {value!r}")
    if drafted is not None:
        if len(drafted) != len(continuations) or any(len(d) != len(c) for d, c in zip(drafted, continuations)):
            raise ValueError("drafted must have one bool per emitted token (DraftMarker.last_drafted())")


def compare_logprobs(oracle, prompts, continuations, reported, *, claims: str, drafted=None,
                     tolerance: float | None = None) -> LogprobReport:
    """Compare an engine's reported log-probabilities with ``oracle``'s law of the same token at the same prefix.

    ``oracle``: a :class:`specdec.protocols.LawOracle` stating the law ``claims`` names (``"raw"`` or
    ``"sampled"``); ``reported[i][t]``: the natural-log probability the engine reported for
    ``continuations[i][t]``; ``drafted``: optional, ``last_drafted()`` of the subject; ``tolerance``: from
    :func:`control_tolerance` (None: summaries without a verdict).
    """
    if claims not in CLAIMS:
        raise ValueError(f"claims must be one of {CLAIMS}, got {claims!r}")
    if not callable(getattr(oracle, "token_laws", None)):
        raise TypeError(f"oracle must be a LawOracle (token_laws), got {type(oracle).__name__}")
    _as_answers(prompts, continuations, reported, drafted)
    if tolerance is not None:
        tolerance = as_float("tolerance", tolerance, minimum=0.0)
    laws = oracle.token_laws([list(p) for p in prompts], [list(c) for c in continuations])
    if len(laws) != len(continuations) or any(len(a) != len(c) for a, c in zip(laws, continuations)):
        raise ValueError("oracle.token_laws returned a different number of laws than answers/tokens")
    deviations = []
    for answer, law_row, rep in zip(continuations, laws, reported):
        deviations.append(tuple(abs(float(r) - lp) if not math.isnan(lp := _oracle_logprob(law, int(tok))) else math.nan
                                for tok, law, r in zip(answer, law_row, rep)))
    return _summarise(claims, deviations, drafted, tolerance)


def _summarise(claims, deviations, drafted, tolerance) -> LogprobReport:
    flat = np.array([d for row in deviations for d in row], dtype=np.float64)
    listed = flat[~np.isnan(flat)]
    length = max((len(row) for row in deviations), default=0)
    by_position = []
    for t in range(length):
        at = np.array([row[t] for row in deviations if len(row) > t and not math.isnan(row[t])])
        by_position.append(float(at.max()) if at.size else math.nan)
    drafted_max = undrafted_max = None
    drafted_tokens = 0
    if drafted is not None:
        marks = np.array([bool(m) for row in drafted for m in row], dtype=bool)
        keep = ~np.isnan(flat)
        drafted_tokens = int(marks.sum())
        if (marks & keep).any():
            drafted_max = float(flat[marks & keep].max())
        if (~marks & keep).any():
            undrafted_max = float(flat[~marks & keep].max())
    return LogprobReport(
        claims=claims, tokens=int(listed.size), unlisted=int(flat.size - listed.size),
        max_deviation=float(listed.max()) if listed.size else math.nan,
        mean_deviation=float(listed.mean()) if listed.size else math.nan,
        by_position=tuple(by_position), drafted_max=drafted_max, undrafted_max=undrafted_max,
        drafted_tokens=drafted_tokens, tolerance=tolerance, deviations=tuple(deviations))


def control_tolerance(control: LogprobReport, *, factor: float = CONTROL_FACTOR, margin: float = CONTROL_MARGIN) -> float:
    """The tolerance a speculative subject is judged at: ``factor`` x the control's max deviation + ``margin``.

    ``control``: :func:`compare_logprobs` of the same engine without speculation, same prompts, same oracle.  A
    control with no compared token or an infinite deviation cannot set a tolerance (ValueError: the oracle does
    not match the engine without speculation - a finding about the oracle or the engine, never hidden)."""
    if not isinstance(control, LogprobReport):
        raise TypeError(f"control must be a LogprobReport, got {type(control).__name__}")
    factor = as_float("factor", factor, minimum=1.0)
    margin = as_float("margin", margin, minimum=0.0)
    if control.tokens == 0 or not math.isfinite(control.max_deviation):
        raise ValueError(f"the control cannot set a tolerance: {control.tokens} tokens compared, max deviation "
                         f"{control.max_deviation}")
    return factor * control.max_deviation + margin
