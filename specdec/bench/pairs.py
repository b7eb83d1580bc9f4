"""A benchmark subject: a speculative decoder and its non-speculative twin (issue 22).

``specdec bench run MODULE:ATTR`` and the ``specdec_bench`` pytest fixture measure any decoder
the way ``specdec check`` checks any: through the :class:`specdec.protocols.Decoder` call
``decoder(prompts, max_new_tokens, seed) -> new-token lists``.  A speedup needs a baseline, so a
subject is a *pair* (:class:`BenchSubject`): the speculative decoder and its autoregressive twin,
the same engine with speculation off, generating the same number of tokens on the same prompts
with the same seeds.  :func:`resolve_subject` accepts three forms of ``ATTR``:

1. an object with ``speculative`` and ``autoregressive`` attributes (a :class:`BenchSubject`);
2. a factory with a ``num_draft_tokens`` parameter: the pair is ``factory(num_draft_tokens=K)``
   and ``factory(num_draft_tokens=0)`` (the twin is the same factory with K = 0);
3. a Decoder together with a second object given as its twin (``--twin MODULE:ATTR``).

What a speculative decoder may add, each optional, each used when present:

* ``speculation_counts()`` (:class:`specdec.protocols.SpeculationCounter`): drafts, draft tokens
  and accepted tokens, so the row gets the measured acceptance (docs/reference.md §6) and the
  acceptance length;
* ``step_costs(max_k)`` (:class:`CostedDecoder`): the subject's own measured costs of a target pass
  over K + 1 tokens and of a draft token (:class:`specdec.bench.costs.StepCosts`), so F23's prediction
  uses what the subject's passes cost.  Without it the row's prediction is F23 with free drafts and a
  flat verify cost (rho = 0, v(K) = 1): the most that speculation could give at the measured
  acceptance, labelled ``cost_model: "ideal"``.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from ..protocols import Decoder


@runtime_checkable
class BenchSubject(Protocol):
    """What ``specdec bench run`` measures: ``speculative`` against ``autoregressive``, named ``name``.

    Both are Decoders that generate exactly ``max_new_tokens`` tokens per prompt (EOS is an
    ordinary token, or the row's stop rule is the same on both sides) and draw all randomness
    from the call's seed.  ``num_draft_tokens``: the K the speculative side drafts (None: unknown
    or adaptive).
    """

    name: str
    speculative: Decoder
    autoregressive: Decoder
    num_draft_tokens: int | None


@runtime_checkable
class CostedDecoder(Protocol):
    """A decoder that times its own passes: ``step_costs(max_k)`` returns a
    :class:`specdec.bench.costs.StepCosts` (T_target(K + 1) for K = 0..max_k and the draft's seconds per token)."""

    def step_costs(self, max_k: int) -> Any: ...


@dataclass
class SubjectPair:
    """The plain :class:`BenchSubject`."""

    name: str
    speculative: Decoder
    autoregressive: Decoder
    num_draft_tokens: int | None = None

    def __post_init__(self) -> None:
        for role in ("speculative", "autoregressive"):
            if not callable(getattr(self, role)):
                raise TypeError(f"{role} must be a Decoder (callable as decoder(prompts, max_new_tokens, seed)), "
                                f"got {type(getattr(self, role)).__name__}")
        if self.num_draft_tokens is not None and (isinstance(self.num_draft_tokens, bool) or int(self.num_draft_tokens) < 0):
            raise ValueError(f"num_draft_tokens must be None or an int >= 0, got {self.num_draft_tokens!r}")


def import_object(spec: str, *, what: str = "SUBJECT") -> Any:
    """The object named by ``"package.module:attr"`` (attr may be dotted)."""
    module_name, colon, attr = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not colon or not module_name or not attr:
        raise ValueError(f"{what} must look like package.module:attribute, got {spec!r}")
    try:
        obj = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's to read, in one line
        raise ValueError(f"{what} {spec!r}: cannot import {module_name!r}: {type(error).__name__}: {error}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{what} {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def is_factory(obj) -> bool:
    """A callable whose signature has a ``num_draft_tokens`` parameter (a class or a function)."""
    if not callable(obj):
        return False
    try:
        return "num_draft_tokens" in inspect.signature(obj).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _name_of(obj, fallback: str) -> str:
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(obj, "__name__", None) or fallback


def resolve_subject(obj, *, num_draft_tokens: int | None = None, twin=None, name: str | None = None,
                    cache: dict | None = None) -> BenchSubject:
    """The :class:`BenchSubject` for ``obj`` (one of the module docstring's three forms).

    ``num_draft_tokens``: K for a factory (required then).  ``twin``: the autoregressive decoder
    for form 3 (or a factory, called with K = 0).  ``cache``: a dict that keeps the decoders built
    from a factory, keyed by (factory, K), so a K sweep builds the K = 0 twin once.
    """
    cache = {} if cache is None else cache

    def build(factory: Callable, k: int):
        key = (id(factory), k)
        if key not in cache:
            cache[key] = factory(num_draft_tokens=k)
        return cache[key]

    if isinstance(obj, BenchSubject) or (hasattr(obj, "speculative") and hasattr(obj, "autoregressive")):
        if twin is not None:
            raise ValueError("the subject already names its autoregressive side; do not pass a twin")
        k = getattr(obj, "num_draft_tokens", None)
        return SubjectPair(name or _name_of(obj, "subject"), obj.speculative, obj.autoregressive, k)
    if is_factory(obj) and not isinstance(obj, type(None)):
        if num_draft_tokens is None:
            raise ValueError(f"{_name_of(obj, 'the factory')} is a factory of num_draft_tokens: give num_draft_tokens (K >= 1)")
        k = int(num_draft_tokens)
        if k < 1:
            raise ValueError(f"num_draft_tokens must be >= 1 for the speculative side, got {num_draft_tokens!r}")
        base = _name_of(obj, "subject")
        autoregressive = build(twin, 0) if is_factory(twin) else (twin if twin is not None else build(obj, 0))
        return SubjectPair(name or base, build(obj, k), autoregressive, k)
    if not callable(obj):
        raise TypeError(f"the subject must be a Decoder (a callable), a factory of num_draft_tokens or a BenchSubject, "
                        f"got {type(obj).__name__} {obj!r}")
    if twin is None:
        raise ValueError(f"{type(obj).__name__} is a Decoder without a twin: pass its autoregressive twin "
                         "(--twin MODULE:ATTR), or a factory with a num_draft_tokens parameter, or an object "
                         "with speculative and autoregressive attributes")
    if not callable(obj):
        raise TypeError(f"the subject must be a Decoder, a factory or a BenchSubject, got {type(obj).__name__}")
    autoregressive = build(twin, 0) if is_factory(twin) else twin
    k = getattr(obj, "num_draft_tokens", None)
    return SubjectPair(name or _name_of(obj, "subject"), obj, autoregressive, k if isinstance(k, int) else None)
