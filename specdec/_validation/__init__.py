"""Argument validation shared by every public entry point of specdec.

One policy, used everywhere:

* **Numbers** are accepted the way numpy and torch accept them: ``operator.index``
  for integers (int, numpy integers, 0-d integer tensors), ``float`` for reals
  (int, float, numpy reals, 0-d real tensors).  ``bool`` is refused as a number,
  complex values and strings are refused, NaN is refused unless a caller allows it.
* **Probability rows** are finite, non-negative and sum to one within one
  tolerance per dtype (:data:`SUM_TOL`: 1e-4 for float32 and lower precisions,
  1e-9 for float64 and exact inputs); ``sum_tol=`` overrides it where offered.
* **Tensors** are checked for type, dtype, rank and shape at once (no device
  work); value checks on tensors (NaN, negative mass, row sums, token ranges,
  E1 proposal mismatch) are collected in a :class:`DeferredChecks` and resolved
  with **one** host synchronisation.  The failing entry is located only on the
  error path.

Every error is a ``TypeError`` (wrong kind of value) or ``ValueError`` (right
kind, wrong value) whose message names the argument and shows the value.

The policy lives in four modules by what is checked: :mod:`.scalars` (numbers and choices; it
imports neither torch nor numpy, so the CLI and the server code use it too), :mod:`.dtypes` (dtypes
and their tolerances), :mod:`.tensors` (tensors and the deferred value checks), :mod:`.laws`
(probability and count vectors given in any form).  The scalar names are imported at once; the
others when first used, so ``from specdec._validation import as_int`` loads no torch.
"""

from __future__ import annotations

import importlib

from .scalars import INT64_MAX, _is_bool, as_choice, as_float, as_int, as_pad_id, as_probability, as_seed  # noqa: F401

_LAZY = {
    "dtypes": ("PROB_DTYPES", "SUM_TOL", "TOKEN_DTYPES", "as_sum_tol", "sum_tolerance"),
    "laws": ("_eps", "_law", "_source", "as_counts", "as_law", "as_law_pair", "count_total"),
    "tensors": ("DeferredChecks", "_describe_bad_sum", "add_probability_checks", "add_proposal_check", "add_token_range_check",
                "check_generator", "check_same_device", "check_shape", "check_tensor", "check_vocabulary",
                "describe_bad_entry", "distinct_view", "first_index"),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'specdec._validation' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
