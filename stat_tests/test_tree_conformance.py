"""Tree verification through the engine: the reference passes the tree checks, the emitted law of one
step matches the exact law (computed without the verifier's code), and planted tree bugs fail,
located by position and prefix."""

import pytest
import torch

from fixtures.mutants import TREE_MUTANTS
from specdec.conformance import check_law, check_tree, tree_cases
from specdec.conformance.cases import exact_law
from specdec.laws.tree import tree_step_law
from specdec.schemes import get

TREE = get("tree").verifier


def test_the_reference_tree_verifier_passes_every_tree_case(specdec_budget):
    report = check_tree(TREE, tv=0.05, seed=1, device="cpu", budget=specdec_budget, name="specdec verify_tree")
    print(report.format())
    assert report.verdict == "PASS", report.format()


@pytest.mark.parametrize("children", ["iid", "distinct"])
def test_one_step_follows_its_exact_law(children, specdec_budget):
    """The sampler (verify_tree) against the law (laws.tree, plain Python from the rule), at the root."""
    case = next(c for c in tree_cases(children=(children,)) if "depth 2, width 2" in c.name and c.dtype == torch.float64)
    target, draft = exact_law(case.tables("target")), exact_law(case.tables("draft"))
    vocab, parents = case.vocab, case.parents

    def row(table, path):
        index = sum(vocab**t for t in range(len(path)))  # prefix_offset: rows of shorter prefixes first
        code = 0
        for token in path:
            code = code * vocab + token
        return table[index + code].numpy()

    law = tree_step_law(parents, lambda path: row(target, path), lambda path: row(draft, path), children=children)
    outcomes = sorted(law)
    n = specdec_budget.sample_size([law[o] for o in outcomes], tv=0.02)
    from specdec.conformance.streams.trees import _build_trees
    from specdec.laws.tree import tree_shape

    g = torch.Generator().manual_seed(4)
    zeros = torch.zeros(n, dtype=torch.long)
    tokens, target_rows, draft_rows = _build_trees(case, tree_shape(parents), (case.tables("target"), case.tables("draft")),
                                                   exact_law(case.tables("draft")), zeros, zeros, g)
    out = TREE(tokens, parents, draft_rows if children == "iid" else None, target_rows, g)
    index = {o: i for i, o in enumerate(outcomes)}
    ids = [index.get(tuple(t[: a + 1]), -1) for t, a in zip(out.tokens.tolist(), out.num_accepted.tolist())]
    check = check_law(ids, [law[o] for o in outcomes], name=f"tree step law ({children})", budget=specdec_budget)
    assert check.passed, check.describe()


@pytest.mark.parametrize("name", sorted(TREE_MUTANTS))
def test_planted_tree_bugs_fail_with_position_and_prefix(name):
    """Outside the run's budget (these reports are meant to fail), at the production level 1e-6."""
    case = next(c for c in tree_cases(children=("iid",)) if "depth 2, width 2" in c.name and c.dtype == torch.float64)
    report = check_tree(TREE_MUTANTS[name], cases=[case], n=3000, seed=2, device="cpu", name=name)
    failed = [c for c in report.checks if not c.passed]
    assert report.verdict == "FAIL" and failed, report.format()
    located = [c for c in failed if c.location]
    assert located and located[0].location.startswith("position ") and "prefix [" in located[0].location, report.format()
