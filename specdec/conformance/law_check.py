"""One goodness-of-fit check of outcomes against an exact law, under a run's error budget.

For tests that sample something themselves (a mutant, a multi-draft sampler, a
decoder's first token) and compare it with an exact law they computed::

    n = budget.sample_size(law, tv=0.02)              # planned before sampling (F34)
    check = check_law(outcome_ids, law, name="...", budget=budget)
    assert check.passed, check.describe()

It goes through the same pieces as the engine: the budget's allotment and the judge
(:func:`specdec.conformance.engine.allot`, :func:`~specdec.conformance.engine.judge`), pooled
Pearson / Monte-Carlo test, detectable TV on the pooled bins, breakdown on failure.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_float, as_law
from .budget import ErrorBudget
from .checks import Check, gof_check
from . import engine


def _ids(outcomes) -> np.ndarray:
    if isinstance(outcomes, torch.Tensor):
        outcomes = outcomes.detach().cpu().numpy()
    arr = np.asarray(outcomes)
    if arr.dtype == object or arr.dtype.kind not in "iu":
        raise TypeError(f"outcomes must be integer outcome ids, got dtype {arr.dtype}")
    return arr.astype(np.int64).ravel()


def check_law(outcomes, law, *, name: str, budget: ErrorBudget | None = None, alpha: float | None = None, sees: str = "") -> Check:
    """Test integer ``outcomes`` (ids into ``law``; anything outside [0, len(law)) is an invalid
    outcome, which fails at once) against the exact ``law``.

    The level is one check's share of ``budget`` (the pytest plugin's run budget), or ``alpha``.
    """
    law = as_law("law", law, ndim=1).numpy()
    if (budget is None) == (alpha is None):
        raise ValueError("give exactly one of budget (a run's ErrorBudget) or alpha")
    if alpha is not None:
        alpha = as_float("alpha", alpha, minimum=0.0, maximum=1.0, low_open=True, high_open=True)
    entry, level = engine.allot(budget, 1, name, alpha)
    ids = _ids(outcomes)
    invalid = (ids < 0) | (ids >= law.size)
    counts = np.bincount(np.where(invalid, law.size, ids), minlength=law.size + 1)
    check = gof_check(name, "law", sees, counts, law, alpha=level)
    return engine.judge([check], level, entry)[0]
