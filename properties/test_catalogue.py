"""The case catalogue (specdec/conformance/data/catalogue-v2.json): versioned data, valid pairs,
exact laws, cases whose rows differ per position.  Exact checks only (no sampling)."""

import math

import pytest
import torch

import specdec as sd
from specdec.conformance import ChainCase, MultiDraftCase, TokenCase, catalogue

KNOWN_ACCEPTANCE = {"spec_section3": 0.7, "spec_section4": 2 / 3, "equal": 1.0, "disjoint": 0.0,
                    "one_hot_mismatch": 0.0, "single_token": 1.0, "tiny_mass": 0.5}


def test_builders_reproduce_the_versioned_data_to_1e_12():
    """The JSON is the source of truth (the same cases on every machine); a builder that drifted
    beyond float rounding means a deliberate change, which needs a new catalogue VERSION."""
    stored = catalogue._data()["pairs"]
    built = catalogue.build_pairs()
    assert set(stored) == set(built), f"catalogue v{catalogue.VERSION}: cases differ: {set(stored) ^ set(built)}"
    for name, (target, draft, _) in built.items():
        for role, values in (("target", target), ("draft", draft)):
            gap = (torch.tensor(values, dtype=torch.float64) - torch.tensor(stored[name][role], dtype=torch.float64)).abs().max()
            assert gap <= 1e-12, f"{name}.{role} moved by {gap:.2e}: bump catalogue.VERSION and rewrite the data file"


@pytest.mark.parametrize("name", catalogue.pair_names())
def test_every_pair_is_valid_and_the_token_rule_is_exact_on_it(name):
    target, draft = catalogue.pair(name)
    assert target.shape == draft.shape
    for probs in (target, draft):
        assert (probs >= 0).all() and abs(probs.sum().item() - 1) < 1e-12
    beta = sd.acceptance_probability(target, draft).item()
    assert beta == pytest.approx(1 - 0.5 * (target - draft).abs().sum().item(), abs=1e-12)
    if name in KNOWN_ACCEPTANCE:
        assert beta == pytest.approx(KNOWN_ACCEPTANCE[name], abs=1e-12)
    assert (sd.token_output_law(target, draft) - target).abs().max() <= 1e-12  # F4


@pytest.mark.parametrize("case", catalogue.token_cases("full"), ids=lambda c: c.name)
def test_token_cases_have_distinct_rows_per_position(case):
    """A verifier that reads the wrong row must change the first token's law: rows differ per
    position (the bonus row too) whenever the pair is not constant."""
    assert case.num_draft_tokens >= 2 and case.target_rows.shape == (case.num_draft_tokens + 1, case.vocab)
    p, q = case.target_rows.double(), case.draft_rows.double()
    if case.vocab > 1 and not torch.allclose(p[0], p[0].roll(1)):
        assert not torch.allclose(p[0], p[-1]) and not torch.allclose(p[0], p[1])
    point_mass = float((p[0] / p[0].sum() * q[0] / q[0].sum()).sum())
    assert case.optimum() == pytest.approx(point_mass if case.drafter == "point_mass" else float(torch.minimum(p[0] / p[0].sum(), q[0] / q[0].sum()).sum()))


def test_default_campaign_covers_positions_drafters_and_precisions():
    tokens, chains = catalogue.token_cases(), catalogue.chain_cases()
    assert {c.drafter for c in tokens} == {"sampled", "point_mass"} and {c.drafter for c in chains} == {"sampled", "point_mass"}
    assert {c.dtype for c in tokens} == {torch.float32, torch.float64} and {c.dtype for c in chains} == {torch.float32, torch.float64}
    assert len({c.vocab for c in chains}) >= 3 and min(c.num_draft_tokens for c in chains) >= 2 and len({c.seed for c in chains}) == len(chains)
    assert any(c.vocab > 1024 and c.target_rows[0, -1] > 0 for c in tokens)  # two-level inverse CDF, the last id has mass (B6)


@pytest.mark.parametrize("case", catalogue.chain_cases("full"), ids=lambda c: c.name)
def test_chain_tables_are_laws_and_the_chain_law_is_their_product(case):
    for role in ("target", "draft"):
        table = case.tables(role).double()
        assert (table.sum(-1) - 1).abs().max() < (1e-6 if case.dtype == torch.float32 else 1e-12)
        assert torch.equal(table, ChainCase(case.name, case.vocab, case.num_draft_tokens, case.length, case.seed, case.sharpness,
                                            case.drafter, case.dtype).tables(role).double())  # deterministic
    law = case.sequence_law()
    assert law.shape == (case.vocab**case.length,) and abs(law.sum() - 1) < 1e-12
    sequence = tuple([1] * case.length)
    expected = math.prod(case.conditional(sequence[:t])[1] for t in range(case.length))
    assert law[sum(case.vocab ** (case.length - 1 - t) for t in range(case.length))] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("case", catalogue.multidraft_cases("full"), ids=lambda c: c.name)
def test_multidraft_optimum(case):
    target = case.target_probs.double() / case.target_probs.double().sum()
    if case.children == "distinct":
        assert case.optimum() == pytest.approx(float(target[case.child_tokens()].sum()), abs=1e-12)
        assert case.child_tokens().unique().numel() == case.num_drafts
    else:
        assert case.optimum() == pytest.approx(sd.multidraft_optimum(target, case.draft_probs.double() / case.draft_probs.double().sum(), case.num_drafts), abs=1e-12)


@pytest.mark.parametrize(
    "build, error, message",
    [
        (lambda: TokenCase("x", torch.ones(2, 3) / 3, torch.ones(2, 3) / 3), ValueError, "target_rows must be"),
        (lambda: TokenCase.from_pair("x", [0.5, 0.5], [0.5, 0.5], drafter="greedy"), ValueError, "drafter must be one of"),
        (lambda: ChainCase("x", vocab=1, num_draft_tokens=2, length=2, seed=0), ValueError, "vocab must be an integer >= 2"),
        (lambda: ChainCase("x", vocab=8, num_draft_tokens=8, length=8, seed=0), ValueError, "table rows is too many"),
        (lambda: MultiDraftCase("x", [0.5, 0.5], [0.5, 0.5], num_drafts=3, children="distinct"), ValueError, "num_drafts must be an integer <= 2"),
        (lambda: catalogue.pair("nope"), ValueError, "unknown case 'nope'"),
        (lambda: catalogue.multidraft_cases(children="iid"), ValueError, "children must be a non-empty subset"),
    ],
)
def test_bad_cases_are_clear_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()
