"""Multi-draft verification (docs/reference.md §3): K-SEQ (F11-F13) and SpecInfer MSS (F14, F15).

Exact laws by enumeration of the V^k draft tuples, float64: lossless, acceptance
equal to the closed forms, K-SEQ >= (1 - 1/e) alpha*_k, nothing above alpha*_k,
the docs/reference.md §3 table, and the lossy MSS variant without the residual update."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from specdec.laws import multidraft as md
from specdec.laws.transport import multidraft_optimum
from specdec.strategies import probability_pairs

TARGET = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
DRAFT = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)


@pytest.mark.parametrize(
    "k, optimum, kseq, rho, mss",
    [(1, 0.700, 0.700, 1.0, 0.700), (2, 0.860, 0.791, 1.457, 0.760), (3, 0.988, 0.859, 1.793, 0.808)],
)
def test_table_of_spec_section_3(k, optimum, kseq, rho, mss):
    assert round(multidraft_optimum(TARGET, DRAFT, k), 3) == optimum
    assert round(float(md.kseq_rho(TARGET, DRAFT, k)), 3) == rho
    assert round(md.kseq_acceptance(TARGET, DRAFT, k), 3) == kseq
    assert round(md.mss_acceptance(TARGET, DRAFT, k), 3) == mss


@settings(max_examples=150)
@given(pair=probability_pairs(min_size=1, max_size=6), k=st.integers(1, 3))
def test_kseq_and_mss_are_lossless_with_their_closed_form_acceptance(pair, k):
    target, draft = pair
    optimum = multidraft_optimum(target, draft, k)
    law, acceptance = md.kseq_law(target, draft, k)
    assert torch.allclose(law, target, atol=1e-12, rtol=0), f"K-SEQ output law {law} != target {target}"
    assert abs(acceptance - md.kseq_acceptance(target, draft, k)) < 1e-9
    assert (1 - 1 / math.e) * optimum - 1e-9 <= acceptance <= optimum + 1e-9
    law, acceptance = md.mss_law(target, draft, k)
    assert torch.allclose(law, target, atol=1e-12, rtol=0), f"MSS output law {law} != target {target}"
    assert abs(acceptance - md.mss_acceptance(target, draft, k)) < 1e-9
    assert acceptance <= optimum + 1e-9


@given(pair=probability_pairs(min_size=2, max_size=8), data=st.data())
def test_distinct_deterministic_children_are_lossless(pair, data):
    target, _ = pair
    vocab = target.shape[0]
    children = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=vocab, unique=True))
    law, acceptance = md.distinct_children_law(target, children)
    assert torch.allclose(law, target, atol=1e-12, rtol=0)
    assert abs(acceptance - float(target[children].sum())) < 1e-12  # accepted iff the target's draw is a child


def test_mss_without_the_residual_update_is_lossy():
    """docs/reference.md §3.4 says TV 0.32 at k = 2 without naming the case; on the §3 example it is 0.15 (k=2), 0.195 (k=3)."""
    for k, tv in [(2, 0.15), (3, 0.195)]:
        law, _ = md.mss_law(TARGET, DRAFT, k, update_residual=False)
        assert abs(0.5 * float((law - TARGET).abs().sum()) - tv) < 1e-12


def test_rho_is_vectorised_and_one_when_target_equals_draft():
    rows = torch.stack([TARGET, DRAFT, TARGET])
    drafts = torch.stack([DRAFT, TARGET, TARGET])
    rho = md.kseq_rho(rows, drafts, 2)
    assert rho.shape == (3,)
    assert abs(float(rho[0]) - float(md.kseq_rho(TARGET, DRAFT, 2))) < 1e-12
    assert float(rho[2]) == 1.0


def _sample(verifier, k, n=64, draft_probs=DRAFT, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.multinomial(DRAFT, n * k, replacement=True, generator=g).reshape(n, k)
    q = None if draft_probs is None else draft_probs.expand(n, 3)
    return tokens, verifier(tokens, q, TARGET.expand(n, 3), g)


@pytest.mark.parametrize("verifier", [sd.verify_kseq, sd.verify_mss])
def test_result_structure(verifier):
    tokens, result = _sample(verifier, 3)
    accepted = result.accepted_index >= 0
    picked = tokens.gather(1, result.accepted_index.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    assert torch.equal(result.token[accepted], picked[accepted])
    assert result.token.min() >= 0 and result.token.max() < 3
    assert not result.residual_empty.any()


def test_bad_inputs_are_clear_errors():
    g = torch.Generator()
    with pytest.raises(ValueError, match="draft_probs is required"):
        sd.verify_kseq(torch.zeros(1, 2, dtype=torch.long), None, TARGET[None], g)
    with pytest.raises(ValueError, match="k >= 1"):
        sd.verify_mss(torch.zeros(1, 0, dtype=torch.long), DRAFT[None], TARGET[None], g)
    with pytest.raises(ValueError, match="distinct"):
        sd.verify_mss(torch.tensor([[1, 1]]), None, TARGET[None], g)
    with pytest.raises(ValueError, match="proposal mismatch"):
        sd.verify_mss(torch.tensor([[1]]), torch.tensor([[0.5, 0.0, 0.5]], dtype=torch.float64), TARGET[None], g)
    with pytest.raises(ValueError, match="num_drafts must be an integer >= 1"):
        md.kseq_acceptance(TARGET, DRAFT, 0)
    with pytest.raises(ValueError, match="vocabulary of at least 1"):
        sd.verify_kseq(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 0, dtype=torch.float64), torch.zeros(1, 0, dtype=torch.float64), g)
    with pytest.raises(ValueError, match="must have 1 dimension"):
        md.mss_acceptance(TARGET[None].expand(2, 3), DRAFT[None].expand(2, 3), 2)
    with pytest.raises(ValueError, match="children\\[0\\]"):
        md.distinct_children_law(TARGET, [-1])
    with pytest.raises(ValueError, match="too many to enumerate"):
        md.kseq_law(torch.full((50,), 0.02, dtype=torch.float64), torch.full((50,), 0.02, dtype=torch.float64), 4)


@pytest.mark.parametrize("k", [1, 2, 3, 10])
@pytest.mark.parametrize("tiny", [5e-324, 1e-320, 2.2e-308, 1e-300])
def test_mss_acceptance_holds_with_subnormal_draft_probabilities(k, tiny):
    """p = (1/2, 1/2), q = (1 - tiny, tiny): r_2 is the point mass on token 1 and every later TV(r_s, q) is
    1 - tiny, so the acceptance is 1/2 to within tiny at every k (issue 31: -inf at k = 1, NaN after)."""
    assert md.mss_acceptance([0.5, 0.5], [1.0, tiny], k) == pytest.approx(0.5, abs=1e-12)
    assert md.mss_acceptance([tiny, 1.0], [1.0, tiny], k) == pytest.approx(0.0, abs=1e-12)
