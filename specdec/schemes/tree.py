"""Token-tree verification (F14-F15 along a draft tree): SpecInfer's recursive rejection sampling over
siblings at every node of the accepted path.  Verifier: :mod:`specdec.verify.tree`; exact laws:
:mod:`specdec.laws.tree`.  The step's ``spec`` is the tree's ``parents``; ``children`` says how the
children were proposed ("iid" or "distinct")."""

from __future__ import annotations

from ..laws.tree import tree_step_law, tree_step_moments
from ..verify.tree import verify_tree, verify_tree_with_uniforms
from .record import Scheme


def step_law(target_fn, draft_fn, parents, *, children: str = "iid") -> dict:
    return tree_step_law(parents, target_fn, draft_fn, children=children)


def moments(target_fn, draft_fn, parents, *, children: str = "iid") -> tuple[float, float]:
    return tree_step_moments(parents, target_fn, draft_fn, children=children)


SCHEME = Scheme(
    name="tree",
    shape="tree",
    verifier=verify_tree,
    summary="recursive rejection sampling over the siblings of a draft tree (F14, F15)",
    with_uniforms=verify_tree_with_uniforms,
    step_law=step_law,
    moments=moments,
    cases=("tree-iid", "tree-distinct"),
)
