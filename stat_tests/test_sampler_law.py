"""The vectorised token verifier reproduces its exact law (F4, F6, E5), by planned goodness-of-fit checks.

Each check: n planned before sampling for the TV to detect (``TV``) at one check's share of the
run's error budget (``specdec_budget``), seeded; the cells are the (draft, output) pairs, so the
test sees the whole transport plan, not only the output marginal.  Derandomized: the same cases
and seeds every run.
"""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from fixtures.samplers import sample_one_step
from specdec.conformance import check_law
from specdec.strategies import probability_pairs, probability_vectors

TV = 0.02  # the smallest total-variation deviation each check must catch with power 0.99
CASES = 12  # Hypothesis examples per property (each one is one check of the budget)
RICH = ("independent", "near", "disjoint", "equal")  # one-hot pairs have one cell: the exact properties cover them


def check_joint(budget, target, draft, seed, dtype, label):
    vocab = target.numel()
    law = sd.token_joint_law(target, draft).ravel()  # (V_out * V_draft,)
    n = budget.sample_size(law, TV)
    drafts, outputs, _ = sample_one_step(target.to(dtype), draft.to(dtype), n, torch.Generator().manual_seed(seed))
    check = check_law(outputs * vocab + drafts, law, name=f"{label} V={vocab} seed={seed}", budget=budget)
    assert check.passed, check.describe()


@settings(max_examples=CASES, derandomize=True)
@given(probability_pairs(min_size=2, max_size=10, relations=RICH), st.integers(0, 2**32 - 1))
def test_sampler_follows_the_joint_law_float64(specdec_budget, pair, seed):
    check_joint(specdec_budget, *pair, seed, torch.float64, "joint float64")


@settings(max_examples=CASES, derandomize=True)
@given(probability_pairs(min_size=2, max_size=10, relations=RICH), st.integers(0, 2**32 - 1))
def test_sampler_follows_the_joint_law_float32(specdec_budget, pair, seed):
    """CPU float32 agrees in law with the float64 exact law."""
    target, draft = pair
    if torch.minimum(target, draft).sum() > 1 - 1e-6:
        draft = target  # renormalising in float32 would break p == q exactly; keep the E2 case exact
    check_joint(specdec_budget, target, draft, seed, torch.float32, "joint float32")


@settings(max_examples=CASES, derandomize=True)
@given(probability_vectors(min_size=2, max_size=12, kinds=("dirichlet", "sparse", "uniform", "tiny")), st.data(), st.integers(0, 2**32 - 1))
def test_deterministic_drafter_accepts_with_probability_target_mass(specdec_budget, target, data, seed):
    """(E5) q = point mass: (accepted, output) follows accept w.p. p(x), else p without x."""
    vocab = target.numel()
    x = data.draw(st.integers(0, vocab - 1))
    point_mass = torch.nn.functional.one_hot(torch.tensor(x), vocab).double()
    law = sd.token_joint_law(target, point_mass)[:, x]  # the output law; acceptance is output == x
    n = specdec_budget.sample_size(law, TV)
    _, outputs, accepted = sample_one_step(target, None, n, torch.Generator().manual_seed(seed), draft_token=x)
    assert torch.equal(accepted.bool(), outputs == x) or target[x] == 1.0
    check = check_law(outputs, law, name=f"point-mass draft V={vocab} x={x} seed={seed}", budget=specdec_budget)
    assert check.passed, check.describe()


def test_zero_draft_length_emits_the_target(specdec_budget):
    """K = 0 is the autoregressive step: one token from target_probs."""
    target = torch.tensor([0.5, 0.25, 0.125, 0.125, 0.0], dtype=torch.float64)
    n = specdec_budget.sample_size(target, TV)
    tokens = sd.verify_tokens(torch.zeros(n, 0, dtype=torch.long), None, target.expand(n, 1, 5), torch.Generator().manual_seed(7)).tokens[:, 0]
    check = check_law(tokens, target, name="K=0 autoregressive step", budget=specdec_budget)
    assert check.passed, check.describe()
