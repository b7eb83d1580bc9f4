"""The registry of verification schemes, and of the callables that implement them.

* :func:`register` adds a :class:`Scheme` (validated: a missing piece is refused, named);
* :func:`get` / :func:`names` read it, optionally for one shape;
* :func:`declare` records that a callable (a peer's adapter, a user's verifier) implements a
  registered scheme; :func:`scheme_of` answers which scheme a callable implements (its reference
  verifier, its uniforms form, its fused twin, or a declared implementation), or None.
"""

from __future__ import annotations

from .record import SHAPES, Scheme, SchemeError, validate

_SCHEMES: dict[str, Scheme] = {}
_IMPLEMENTATIONS: dict[int, tuple[object, str]] = {}  # id(callable) -> (callable, scheme name); the callable kept alive


def register(scheme: Scheme, *, replace: bool = False) -> Scheme:
    """Add ``scheme`` (validated); a name already taken is refused unless ``replace``."""
    validate(scheme)
    if scheme.name in _SCHEMES and not replace:
        raise SchemeError(f"a scheme named {scheme.name!r} is already registered")
    _SCHEMES[scheme.name] = scheme
    for fn in (scheme.verifier, scheme.with_uniforms):
        if fn is not None:
            _IMPLEMENTATIONS[id(fn)] = (fn, scheme.name)
    return scheme


def get(name: str, *, shape: str | None = None) -> Scheme:
    """The registered scheme ``name`` (of ``shape``, when given); a ValueError listing the known ones."""
    if shape is not None and shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    scheme = _SCHEMES.get(name) if isinstance(name, str) else None
    if scheme is None or (shape is not None and scheme.shape != shape):
        known = names(shape)
        what = f"a {shape} scheme" if shape else "a scheme"
        raise ValueError(f"{name!r} is not {what}; registered: {', '.join(known) or 'none'}")
    return scheme


def names(shape: str | None = None) -> list[str]:
    return [n for n, s in _SCHEMES.items() if shape is None or s.shape == shape]


def declare(fn, scheme: str):
    """Record that ``fn`` implements the registered ``scheme``; returns ``fn`` (usable as a decorator
    argument).  The engine then knows its rule, e.g. for F28's exact tokens per step."""
    if not callable(fn):
        raise TypeError(f"declare: {fn!r} is not callable")
    get(scheme)
    _IMPLEMENTATIONS[id(fn)] = (fn, scheme)
    return fn


def scheme_of(fn) -> Scheme | None:
    """The scheme ``fn`` implements (a reference verifier, a uniforms form, a loaded fused twin or a
    declared implementation), or None when nothing says."""
    entry = _IMPLEMENTATIONS.get(id(fn))
    if entry is not None and entry[0] is fn:
        return _SCHEMES.get(entry[1])
    where = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__name__', '')}"
    for scheme in _SCHEMES.values():  # a fused twin imported by the caller, not through load_fused
        if scheme.fused == where:
            _IMPLEMENTATIONS[id(fn)] = (fn, scheme.name)
            return scheme
    return None


def load_fused(scheme: Scheme, device):
    """``scheme``'s fused twin on ``device`` (None when it has none or it cannot run there); once
    loaded it is known to :func:`scheme_of`."""
    fused = scheme.fused_verifier(device)
    if fused is not None:
        _IMPLEMENTATIONS[id(fused)] = (fused, scheme.name)
    return fused


def unregister(name: str) -> Scheme:
    """Remove a registered scheme (and what was declared to implement it); returns it."""
    scheme = get(name)
    del _SCHEMES[name]
    for key in [k for k, (_, owner) in _IMPLEMENTATIONS.items() if owner == name]:
        del _IMPLEMENTATIONS[key]
    return scheme
