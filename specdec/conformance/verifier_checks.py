"""check_verifier, check_multidraft and check_tree: conformance reports of verifiers (docs/verifier.md)."""

from __future__ import annotations

from typing import Sequence

from ..settings import RunSettings, resolve
from .calls import CallGuard, refuse_timing_only
from .cases import ChainCase, MultiDraftCase, TokenCase, TreeCase
from .catalogue import chain_cases, multidraft_cases, token_cases, tree_cases
from .engine import resolve_device, run, subject_name
from .report import Report
from .streams.chains import chain_stream
from .streams.one_step import multidraft_stream, token_stream
from .streams.trees import tree_stream

__all__ = ["check_multidraft", "check_tree", "check_verifier"]


def _cases(name: str, values, kind, default):
    if values is None:
        return default()
    values = list(values)
    for value in values:
        if not isinstance(value, kind):
            raise TypeError(f"{name} must hold {kind.__name__} objects (specdec.conformance), got {type(value).__name__}")
    return values


def _campaign(verifier, protocol: str, level: str, make_streams, settings: RunSettings | None, overrides: dict) -> Report:
    """One campaign of a verifier's streams through the engine (the body every check_* of a verifier shares)."""
    if not callable(verifier):
        raise TypeError(f"verifier must be callable (specdec.protocols.{protocol}), got {type(verifier).__name__}")
    refuse_timing_only(verifier, "verifier")
    run_settings = resolve(settings, overrides)
    device = resolve_device(run_settings.device)
    streams = make_streams(device, CallGuard(run_settings.call_timeout, device=device))
    return run(run_settings.name or subject_name(verifier), level, streams, run_settings, device=device)


def check_verifier(verifier, *, cases: Sequence[TokenCase] | None = None, chains: Sequence[ChainCase] | None = None,
                   settings: RunSettings | None = None, **overrides) -> Report:
    """Conformance report of a token-level verifier (:class:`specdec.protocols.TokenVerifier`).

    Per :class:`TokenCase` (default: :func:`token_cases`): the first emitted token vs the
    target (F4) and the acceptance at position 1 vs its optimum (F1).  Per
    :class:`ChainCase` (default: :func:`chain_cases`): the first L tokens of a decoder
    driven by the verifier vs the chain law (F35), located by F36.

    ``settings`` (a :class:`specdec.RunSettings`) and any of its fields as keywords: n per check is
    planned to detect ``tv`` with power 0.99, fixed by ``n``, or as many as ``time_budget`` seconds
    allow (capped by ``max_n``); family-wise ``family_alpha`` (Holm), or an allotment from ``budget``
    (the pytest plugin's run budget); ``device`` is where drafts, the subject and the counting run
    (default: CUDA when available); ``call_timeout``: seconds one call of the verifier may take (None:
    no limit): a verifier that raises, hangs or returns what its Protocol does not allow gets the
    verdict ERROR, with the call.
    """
    cases = _cases("cases", cases, TokenCase, token_cases)
    chains = _cases("chains", chains, ChainCase, chain_cases)
    if not cases and not chains:
        raise ValueError("give at least one case or chain")
    return _campaign(verifier, "TokenVerifier", "verifier",
                     lambda device, guard: [token_stream(verifier, c, device, guard=guard) for c in cases]
                     + [chain_stream(verifier, c, device, guard=guard) for c in chains], settings, overrides)


def check_multidraft(verifier, *, cases: Sequence[MultiDraftCase] | None = None, children=("iid", "distinct"),
                     settings: RunSettings | None = None, **overrides) -> Report:
    """Conformance report of a multi-draft verifier (:class:`specdec.protocols.MultiDraftVerifier`).

    Per :class:`MultiDraftCase` (default: :func:`multidraft_cases`): the emitted token vs the
    target, and the acceptance vs the proven optimum alpha*_k (F7-F10; p(children) for
    distinct deterministic children, F15): above it fails, significantly below it is
    reported.  ``children`` picks the default cases a subject supports: "iid" drafts
    with draft_probs, "distinct" deterministic children with draft_probs None (K-SEQ:
    "iid" only).  Settings as in :func:`check_verifier`.
    """
    cases = _cases("cases", cases, MultiDraftCase, lambda: multidraft_cases(children=children))
    if not cases:
        raise ValueError("give at least one case")
    return _campaign(verifier, "MultiDraftVerifier", "multi-draft verifier",
                     lambda device, guard: [multidraft_stream(verifier, c, device, guard=guard) for c in cases], settings, overrides)


def check_tree(verifier, *, cases: Sequence[TreeCase] | None = None, children=("iid", "distinct"),
               settings: RunSettings | None = None, **overrides) -> Report:
    """Conformance report of a tree verifier (:class:`specdec.protocols.TreeVerifier`).

    Per :class:`TreeCase` (default: :func:`tree_cases`, trees of depth 2-3 and width 2-3): the first L
    tokens of a decoder driven by the verifier vs the chain law (F35, located by F36), and the
    acceptance at the root vs its optimum (alpha*_m, F9-F10; p(children) for distinct children, F15):
    above it fails.  ``children`` picks the default cases a subject supports ("iid" trees pass
    draft_probs, "distinct" trees pass None: a target-only sampler takes "distinct" only).  Settings
    as in :func:`check_verifier`.
    """
    cases = _cases("cases", cases, TreeCase, lambda: tree_cases(children=children))
    if not cases:
        raise ValueError("give at least one case")
    return _campaign(verifier, "TreeVerifier", "tree verifier",
                     lambda device, guard: [tree_stream(verifier, c, device, guard=guard) for c in cases], settings, overrides)
