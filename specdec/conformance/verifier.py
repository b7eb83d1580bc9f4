"""check_verifier, check_multidraft and check_tree: conformance reports of verifiers (docs/verifier.md)."""

from __future__ import annotations

from typing import Sequence

from .budget import ErrorBudget
from .cases import ChainCase, MultiDraftCase, TokenCase, TreeCase
from .catalogue import chain_cases, multidraft_cases, token_cases, tree_cases
from .console import Console
from .drivers import chain_stream, multidraft_stream, token_stream
from .engine import resolve_device, run, subject_name
from .plan import DEFAULT_MAX_N, SampleRequest
from .report import Report
from .subject import DEFAULT_CALL_TIMEOUT, CallGuard
from .tree_stream import tree_stream


def _cases(name: str, values, kind, default):
    if values is None:
        return default()
    values = list(values)
    for value in values:
        if not isinstance(value, kind):
            raise TypeError(f"{name} must hold {kind.__name__} objects (specdec.conformance), got {type(value).__name__}")
    return values


SETTINGS = ("tv", "time_budget", "n", "max_n", "chunk_size", "seed", "family_alpha", "budget", "device", "console", "name", "call_timeout")


def _settings(arguments: dict) -> dict:
    return {key: arguments[key] for key in SETTINGS}


def _callable(verifier, protocol: str) -> None:
    if not callable(verifier):
        raise TypeError(f"verifier must be callable (specdec.protocols.{protocol}), got {type(verifier).__name__}")


def _campaign(verifier, level: str, make_streams, *, tv, time_budget, n, max_n, chunk_size, seed, family_alpha, budget, device,
              console, name, call_timeout) -> Report:
    """One campaign of a verifier's streams through the engine (the body every check_* shares)."""
    request = SampleRequest(tv, time_budget, n, max_n, chunk_size)
    device = resolve_device(device)
    streams = make_streams(device, CallGuard(call_timeout, device=device))
    return run(name or subject_name(verifier), level, streams, request, seed=seed, family_alpha=family_alpha, budget=budget,
               device=device, console=console or Console.auto())


def check_verifier(
    verifier,
    *,
    cases: Sequence[TokenCase] | None = None,
    chains: Sequence[ChainCase] | None = None,
    tv: float | None = 0.01,
    time_budget: float | None = None,
    n: int | None = None,
    max_n: int = DEFAULT_MAX_N,
    chunk_size: int | None = None,
    seed: int = 0,
    family_alpha: float = 1e-6,
    budget: ErrorBudget | None = None,
    device=None,
    console: Console | None = None,
    name: str | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
) -> Report:
    """Conformance report of a token-level verifier (:class:`specdec.protocols.TokenVerifier`).

    Per :class:`TokenCase` (default: :func:`token_cases`): the first emitted token vs the
    target (F4) and the acceptance at position 1 vs its optimum (F1).  Per
    :class:`ChainCase` (default: :func:`chain_cases`): the first L tokens of a decoder
    driven by the verifier vs the chain law (F35), located by F36.

    n per check: planned to detect ``tv`` with power 0.99, fixed by ``n``, or as many as
    ``time_budget`` seconds allow (capped by ``max_n``).  Family-wise ``family_alpha``
    (Holm), or an allotment from ``budget`` (the pytest plugin's run budget).
    ``device``: where drafts, the subject and the counting run (default: CUDA when
    available).  ``console``: where the plan and progress go (default: a terminal's stderr).
    ``call_timeout``: seconds one call of the verifier may take (None: no limit); a verifier that
    raises, hangs or returns what its Protocol does not allow gets the verdict ERROR, with the call.
    """
    _callable(verifier, "TokenVerifier")
    cases = _cases("cases", cases, TokenCase, token_cases)
    chains = _cases("chains", chains, ChainCase, chain_cases)
    if not cases and not chains:
        raise ValueError("give at least one case or chain")
    return _campaign(verifier, "verifier", lambda device, guard: [token_stream(verifier, c, device, guard=guard) for c in cases]
                     + [chain_stream(verifier, c, device, guard=guard) for c in chains], **_settings(locals()))


def check_multidraft(
    verifier,
    *,
    cases: Sequence[MultiDraftCase] | None = None,
    children=("iid", "distinct"),
    tv: float | None = 0.01,
    time_budget: float | None = None,
    n: int | None = None,
    max_n: int = DEFAULT_MAX_N,
    chunk_size: int | None = None,
    seed: int = 0,
    family_alpha: float = 1e-6,
    budget: ErrorBudget | None = None,
    device=None,
    console: Console | None = None,
    name: str | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
) -> Report:
    """Conformance report of a multi-draft verifier (:class:`specdec.protocols.MultiDraftVerifier`).

    Per :class:`MultiDraftCase` (default: :func:`multidraft_cases`): the emitted token vs the
    target, and the acceptance vs the proven optimum alpha*_k (F7-F10; p(children) for
    distinct deterministic children, F15): above it fails, significantly below it is
    reported.  ``children`` picks the default cases a subject supports: "iid" drafts
    with draft_probs, "distinct" deterministic children with draft_probs None (K-SEQ:
    "iid" only).  Other arguments as in :func:`check_verifier`.
    """
    _callable(verifier, "MultiDraftVerifier")
    cases = _cases("cases", cases, MultiDraftCase, lambda: multidraft_cases(children=children))
    if not cases:
        raise ValueError("give at least one case")
    return _campaign(verifier, "multi-draft verifier", lambda device, guard: [multidraft_stream(verifier, c, device, guard=guard) for c in cases],
                     **_settings(locals()))


def check_tree(
    verifier,
    *,
    cases: Sequence[TreeCase] | None = None,
    children=("iid", "distinct"),
    tv: float | None = 0.01,
    time_budget: float | None = None,
    n: int | None = None,
    max_n: int = DEFAULT_MAX_N,
    chunk_size: int | None = None,
    seed: int = 0,
    family_alpha: float = 1e-6,
    budget: ErrorBudget | None = None,
    device=None,
    console: Console | None = None,
    name: str | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
) -> Report:
    """Conformance report of a tree verifier (:class:`specdec.protocols.TreeVerifier`).

    Per :class:`TreeCase` (default: :func:`tree_cases`, trees of depth 2-3 and width 2-3): the first L
    tokens of a decoder driven by the verifier vs the chain law (F35, located by F36), and the
    acceptance at the root vs its optimum (alpha*_m, F9-F10; p(children) for distinct children, F15):
    above it fails.  ``children`` picks the default cases a subject supports ("iid" trees pass
    draft_probs, "distinct" trees pass None: a target-only sampler takes "distinct" only).  Other
    arguments as in :func:`check_verifier`.
    """
    _callable(verifier, "TreeVerifier")
    cases = _cases("cases", cases, TreeCase, lambda: tree_cases(children=children))
    if not cases:
        raise ValueError("give at least one case")
    return _campaign(verifier, "tree verifier", lambda device, guard: [tree_stream(verifier, c, device, guard=guard) for c in cases],
                     **_settings(locals()))
