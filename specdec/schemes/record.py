"""The record of a verification scheme: everything every consumer reads about it, in one place.

A :class:`Scheme` names a rule that turns drafts into emitted tokens and carries its pieces:

* ``shape`` - which Protocol its verifier satisfies: ``"chain"`` (:class:`specdec.protocols.TokenVerifier`:
  K drafts in a row), ``"multidraft"`` (:class:`specdec.protocols.MultiDraftVerifier`: k drafts at one
  position) or ``"tree"`` (:class:`specdec.protocols.TreeVerifier`: a draft tree);
* ``verifier`` - the reference implementation; ``with_uniforms`` - the same rule on explicit uniforms;
  ``fused`` - ``"module:attr"`` of a kernel twin (same tokens on the same uniforms), loaded on demand;
* ``step_law(target_fn, draft_fn, spec)`` - the exact law {emitted tokens: probability} of one step,
  ``spec`` its size (K for a chain, k for a multi-draft step, the tree's ``parents``);
* ``moments(target_fn, draft_fn, spec)`` - (E[T], Var[T]) of the tokens per step, for F28;
* ``cases`` - the catalogue families it is checked on (:data:`CASE_FAMILIES`);
* ``compare(target, draft, max_drafts, num_draft_tokens)`` - its rows of ``specdec compare``.

:func:`validate` refuses a record that lacks a piece its shape needs, naming the piece: nothing a
consumer needs is ever silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import SchemeError  # noqa: F401 - re-exported: its home before specdec.errors

SHAPES = ("chain", "multidraft", "tree")
CASE_FAMILIES = {
    "chain": ("token", "chain"),
    "multidraft": ("multidraft-iid", "multidraft-distinct"),
    "tree": ("tree-iid", "tree-distinct"),
}
# what the engine and the loop read, per shape
REQUIRED = {
    "chain": ("verifier", "step_law", "moments", "cases"),
    "multidraft": ("verifier", "step_law", "cases"),
    "tree": ("verifier", "step_law", "moments", "cases"),
}


@dataclass(frozen=True)
class Scheme:
    name: str
    shape: str
    verifier: Callable
    summary: str = ""  # one line: the rule, with its formula numbers
    with_uniforms: Callable | None = None
    fused: str | None = None  # "module:attr" of a kernel twin, imported when asked for
    step_law: Callable | None = None
    moments: Callable | None = None
    cases: tuple[str, ...] = ()
    compare: Callable | None = None

    def fused_verifier(self, device):
        """The fused twin when it exists and runs on ``device`` (None otherwise)."""
        if self.fused is None:
            return None
        import importlib

        module_name, _, attr = self.fused.partition(":")
        module = importlib.import_module(module_name)
        available = getattr(module, "available", None)
        return getattr(module, attr) if available is None or available(device) else None


def validate(scheme: Scheme) -> Scheme:
    """The record, or a :class:`SchemeError` naming what is missing or wrong."""
    if not isinstance(scheme, Scheme):
        raise SchemeError(f"a scheme must be a specdec.schemes.Scheme, got {type(scheme).__name__}")
    if not isinstance(scheme.name, str) or not scheme.name.isidentifier():
        raise SchemeError(f"scheme name must be an identifier-like string, got {scheme.name!r}")
    if scheme.shape not in SHAPES:
        raise SchemeError(f"scheme {scheme.name!r}: shape must be one of {SHAPES}, got {scheme.shape!r}")
    for piece in REQUIRED[scheme.shape]:
        value = getattr(scheme, piece)
        if piece == "cases":
            if not value:
                raise SchemeError(f"scheme {scheme.name!r} ({scheme.shape}) lacks 'cases': the catalogue families it is checked on")
        elif not callable(value):
            raise SchemeError(f"scheme {scheme.name!r} ({scheme.shape}) lacks {piece!r}, which the engine reads for every {scheme.shape} scheme")
    unknown = [case for case in scheme.cases if case not in CASE_FAMILIES[scheme.shape]]
    if unknown:
        raise SchemeError(f"scheme {scheme.name!r}: unknown case families {unknown} for a {scheme.shape} scheme "
                          f"(known: {CASE_FAMILIES[scheme.shape]})")
    for piece in ("with_uniforms", "compare"):
        if getattr(scheme, piece) is not None and not callable(getattr(scheme, piece)):
            raise SchemeError(f"scheme {scheme.name!r}: {piece} must be callable or None")
    if scheme.fused is not None and (not isinstance(scheme.fused, str) or ":" not in scheme.fused):
        raise SchemeError(f"scheme {scheme.name!r}: fused must be 'module:attr', got {scheme.fused!r}")
    return scheme
