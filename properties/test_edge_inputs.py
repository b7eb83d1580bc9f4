"""Edge inputs found by the fuzzing trial of issue 23: each test failed on the code before its fix.

Integer token dtypes compared in int64, B = 0 at any V, :func:`specdec.inverse_cdf` validated,
counts totalled exactly, F22 exact near alpha = 1 and one E2 rule, 1-D only where 1-D is meant,
no hang inside a documented limit (a cap refused at once instead), float overflow as a named
ValueError, and one rule for prompts.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings

import specdec as sd
from specdec import _validation as c
from specdec import schemes
from specdec.laws import block, chain, multidraft as md
from specdec.laws import token as token_law
from specdec.laws.speedup import MAX_SCANNED_DRAFT_TOKENS
from specdec.stats import goodness_of_fit, monte_carlo_gof, required_sample_size
from specdec.strategies import probability_pairs

INT_DTYPES = [getattr(torch, n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64") if hasattr(torch, n)]


def uniform_rows(*shape, dtype=torch.float64):
    return torch.full(shape, 1.0 / shape[-1], dtype=dtype)


@contextlib.contextmanager
def within(seconds: float):
    """Fail (TimeoutError) instead of hanging when the body runs past ``seconds``."""

    def expire(*_):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------ 1. every integer dtype, compared in int64


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_token_ids_of_every_integer_dtype_are_compared_in_int64(dtype):
    bits = torch.iinfo(dtype).bits
    vocab = 2**bits if bits <= 16 else 300  # V itself wraps to 0 in the ids' own dtype
    tokens = torch.tensor([[5]], dtype=dtype)
    target, draft = uniform_rows(1, 2, vocab), uniform_rows(1, 1, vocab)
    for verifier in (sd.verify_tokens, sd.verify_block):
        got = verifier(tokens, draft, target, torch.Generator().manual_seed(1))
        want = verifier(tokens.long(), draft, target, torch.Generator().manual_seed(1))
        assert torch.equal(got.tokens, want.tokens) and got.tokens.dtype == torch.int64
    assert torch.equal(sd.verify_greedy(tokens, target).tokens, sd.verify_greedy(tokens.long(), target).tokens)
    row = uniform_rows(1, vocab)
    for verifier in (sd.verify_kseq, sd.verify_mss):
        got = verifier(tokens, row, row, torch.Generator().manual_seed(2))
        assert got.token.tolist() == verifier(tokens.long(), row, row, torch.Generator().manual_seed(2)).token.tolist()
    if dtype.is_signed:
        with pytest.raises(ValueError, match=r"draft_tokens has token id -3 at index \(0, 0\), outside \[0, 300\)"):
            sd.verify_tokens(torch.tensor([[-3]], dtype=dtype), uniform_rows(1, 1, 300), uniform_rows(1, 2, 300), torch.Generator())
    with pytest.raises(ValueError, match=r"draft_tokens has token id 9 at index \(0, 0\), outside \[0, 7\)"):
        sd.verify_tokens(torch.tensor([[9]], dtype=dtype), uniform_rows(1, 1, 7), uniform_rows(1, 2, 7), torch.Generator())


# ------------------------------------------------------------------ 2. B = 0 at any vocabulary


@pytest.mark.parametrize("vocab", [3, 1025, 5000])
def test_an_empty_batch_gives_empty_results_of_the_right_shapes(vocab):
    g = torch.Generator().manual_seed(0)
    for lead in [(0,), (2, 0), (0, 3)]:
        drawn = sd.sample_categorical(uniform_rows(*lead, vocab), g)
        assert drawn.shape == lead and drawn.dtype == torch.int64
    tokens, draft, target = torch.zeros(0, 2, dtype=torch.long), uniform_rows(0, 2, vocab), uniform_rows(0, 3, vocab)
    results = [sd.verify_tokens(tokens, draft, target, g), sd.verify_block(tokens, draft, target, g),
               sd.verify_tokens(tokens, None, target, g), sd.verify_greedy(tokens, target),
               sd.verify_tokens_with_uniforms(tokens, draft, target, torch.zeros(0, 3, dtype=torch.float64))]
    for result in results:
        assert result.tokens.shape == (0, 3) and result.tokens.dtype == torch.int64
        assert result.num_accepted.shape == (0,) and result.num_accepted.dtype == torch.int64
        assert result.residual_empty.shape == (0,) and result.residual_empty.dtype == torch.bool
    for verifier in (sd.verify_kseq, sd.verify_mss):
        result = verifier(torch.zeros(0, 2, dtype=torch.long), uniform_rows(0, vocab), uniform_rows(0, vocab), g)
        assert result.token.shape == result.accepted_index.shape == (0,) and result.token.dtype == torch.int64


# ------------------------------------------------------------------ 3. inverse_cdf is validated like every entry point


@pytest.mark.parametrize(
    "weights, uniforms, message",
    [
        (torch.zeros(1, 4, dtype=torch.float64), torch.tensor([0.5], dtype=torch.float64), r"weights row \(0,\) has total 0.0"),
        (torch.tensor([[1.0, math.nan]]), torch.tensor([0.5]), r"weights has a non-finite entry nan at index \(0, 1\)"),
        (torch.tensor([[1.0, -1.0, 1.0]]), torch.tensor([0.5]), r"weights has a negative entry -1.0 at index \(0, 1\)"),
        (torch.tensor([[1.0, math.inf]]), torch.tensor([0.5]), r"weights has a non-finite entry inf"),
        (torch.ones(1, 4, dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64), r"uniforms must lie in \[0, 1\), got 1.0 at index \(0,\)"),
        (torch.ones(1, 4), torch.tensor([-0.25]), r"uniforms must lie in \[0, 1\), got -0.25"),
        (torch.ones(1, 4), torch.tensor([math.nan]), r"uniforms must lie in \[0, 1\), got nan"),
        (torch.ones(2, 4), torch.tensor([0.5]), r"uniforms must have shape \(2,\) \(the weights' rows\), got \(1,\)"),
        (torch.ones(4), torch.tensor([0.5]), r"uniforms must have shape \(\)"),
        (torch.ones(2, 0), torch.zeros(2), r"weights must have a non-empty last \(vocabulary\) dimension"),
        (torch.ones(2, 3, dtype=torch.long), torch.zeros(2), r"weights must have dtype"),
        ([[0.5, 0.5]], torch.zeros(1), r"weights must be a torch.Tensor, got list"),
        (torch.ones(1, 3), torch.zeros(1, dtype=torch.long), r"uniforms must have dtype"),
    ],
)
def test_inverse_cdf_refuses_what_has_no_answer(weights, uniforms, message):
    error = TypeError if "dtype" in message or "torch.Tensor" in message else ValueError
    with pytest.raises(error, match=message):
        sd.inverse_cdf(weights, uniforms)


def test_inverse_cdf_answers_are_ids_of_positive_weight_and_unchecked_on_request():
    weights = torch.tensor([[0.0, 2.0, 0.0, 1.0], [5.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    assert sd.inverse_cdf(weights, torch.tensor([0.0, 0.9999999])).tolist() == [1, 0]
    assert sd.inverse_cdf(weights, torch.tensor([0.7, 0.3], dtype=torch.float64)).tolist() == [3, 0]
    assert sd.inverse_cdf(torch.ones(0, 3000), torch.zeros(0)).shape == (0,)
    assert sd.inverse_cdf(torch.ones(3), torch.tensor(0.5)).tolist() == 1  # a single row: uniforms of shape ()
    assert sd.inverse_cdf(weights, torch.tensor([0.0, 0.5]), validate=False).tolist() == [1, 0]


# ------------------------------------------------------------------ 4. counts totalled exactly


def test_counts_beyond_int64_in_total_give_the_exact_ratios():
    big = 2**63 - 1
    assert sd.draft_utilisation([1, 2], big) == 3 / (2 * big)
    assert sd.acceptance_rate([2**62] * 4, big) == 1.0
    assert sd.acceptance_rate([2**62, 0], big) == float(Fraction(2**62, 2**62 + 2))
    assert sd.mean_tokens_per_step([big, big, 1]) == float(Fraction(2 * big + 1, 3))
    result = goodness_of_fit([2**62] * 5, [0.2] * 5)
    assert result.n == 5 * 2**62 and result.pvalue == 1.0 and result.statistic == 0.0
    assert goodness_of_fit([2**62] * 2, [0.5, 0.5]).n == 2**63
    with pytest.raises(ValueError, match=r"observed_counts total 23058430092136939520 is more than monte_carlo_gof can draw"):
        monte_carlo_gof([2**62] * 5, [0.2] * 5, num_resamples=10, seed=0)


# ------------------------------------------------------------------ 5. F22 exact near alpha = 1


def exact_tokens(alpha: float, k: int) -> float:
    a = Fraction(alpha)
    return float(sum(a**i for i in range(k + 1)))


@pytest.mark.parametrize("alpha", [0.9999999997, 1 - 2**-40, 1 - 1e-6, 0.999, 0.6, 0.3, 1e-300, 0.0])
@pytest.mark.parametrize("k", [0, 1, 7, 32, 200])
def test_expected_tokens_is_exact_near_alpha_one(alpha, k):
    want = exact_tokens(alpha, k)
    assert sd.expected_tokens_iid(alpha, k) == pytest.approx(want, rel=4e-15, abs=0)
    assert sd.speedup(alpha, k, 0.0) == pytest.approx(want, rel=4e-15, abs=0)
    assert sd.speedup_with_costs(alpha, k, 0.0, 1.0) == pytest.approx(want, rel=4e-15, abs=0)
    assert sd.predicted_speedup(alpha, [k, k], 0.0) == pytest.approx(want, rel=4e-15, abs=0)


# ------------------------------------------------------------------ 11. one E2 rule (issue item 5)


NOISY_DRAFT = [0.2640516114947549, 0.05846688316193, 0.42524139978199826, 0.052892696209109344, 0.19934740935220732]


def test_a_residual_of_rounding_noise_is_empty_in_the_laws():
    q = torch.tensor(NOISY_DRAFT, dtype=torch.float64)
    q = q / q.sum()
    assert sd.residual_distribution(q * (1 - 1e-10), q).tolist() == pytest.approx(q.tolist(), abs=1e-15)  # E2: the target
    assert (sd.token_output_law(q * (1 - 1e-10), q) - q).abs().max() <= 1e-15
    q32 = torch.tensor([0.1, 0.2, 0.3, 0.4])
    assert sd.residual_distribution(q32 * (1 - 1e-7), q32).tolist() == pytest.approx(q32.tolist(), abs=1e-7)
    assert sd.residual_distribution([0.5, 0.5], [0.5 + 1e-12, 0.5 - 1e-12]).tolist() == [0.0, 1.0]  # a real residual stays


@pytest.mark.parametrize("dtype, ulp", [(torch.float64, 2.0**-54), (torch.float32, 2.0**-25)])
def test_the_verifiers_apply_the_same_e2_rule(dtype, ulp):
    """p = q but for one ulp moved from token 0 to token 1; u just below 1 rejects token 0: the residual
    (p - q)+ is that ulp alone, rounding noise, so the token comes from p and the row is flagged (E2)."""
    draft = torch.tensor([[[0.25, 0.25, 0.5]]], dtype=dtype)
    target = torch.tensor([[[0.25 - ulp, 0.25 + ulp, 0.5], [0.25, 0.25, 0.5]]], dtype=dtype)
    uniforms = torch.tensor([[1 - 2.0**-53, 0.75]], dtype=torch.float64)  # 0.75: token 2 of p, token 1 of the noise
    result = sd.verify_tokens_with_uniforms(torch.tensor([[0]]), draft, target, uniforms)
    assert result.num_accepted.tolist() == [0] and result.residual_empty.tolist() == [True] and result.tokens.tolist() == [[2, -1]]
    assert token_law.residual_is_empty(torch.tensor(ulp, dtype=dtype), dtype)
    assert not token_law.residual_is_empty(torch.tensor(1e-5, dtype=dtype), dtype)


# ------------------------------------------------------------------ 6. 1-D where 1-D is meant


def test_two_dimensional_inputs_are_refused_not_flattened():
    with pytest.raises(ValueError, match=r"alphas must be a 1-D sequence, got shape \(2, 2\)"):
        sd.expected_tokens_positional([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"steps_draft_tokens must be a 1-D sequence, got shape \(2, 2\)"):
        sd.predicted_speedup(0.5, [[1, 2], [3, 4]], 0.1)
    assert sd.expected_tokens_positional([]) == 1.0


# ------------------------------------------------------------------ 7. no hang inside a documented limit


def test_enumerations_at_their_caps_finish_or_are_refused_at_once():
    rows2, rows3 = (lambda prefix: [0.5, 0.5]), (lambda prefix: [0.2, 0.3, 0.5])
    for call, name in [(lambda: sd.acceptance_profile(rows2, rows2, 20), "acceptance_profile: more than 20,000 draft prefixes"),
                       (lambda: sd.emitted_block_law(rows2, rows2, 20), "emitted_block_law: more than 20,000 draft prefixes")]:
        with within(30), pytest.raises(ValueError, match=name):  # pruning makes the count known only by enumerating:
            call()                                               # refused at the cap, after 20,000 prefixes' laws
    for call, name in [(lambda: block.block_law(rows3, rows3, 12, 3), "num_draft_tokens=12 with vocab=3"),
                       (lambda: block.expected_accepted_block(rows3, rows3, 12, 3), "num_draft_tokens=12 with vocab=3"),
                       (lambda: sd.optimal_draft_length(0.8, 0.1, max_draft_tokens=10**7), "max_draft_tokens must be an integer <= 100000"),
                       (lambda: schemes.scheme_table([0.5, 0.5], [0.5, 0.5], max_drafts=3000), "max_drafts must be an integer <= 64")]:
        with within(5), pytest.raises(ValueError, match=name):
            call()
    with within(30):  # the largest enumerations the caps allow finish in a few seconds
        assert sd.acceptance_profile(rows2, rows2, 13).tolist() == [1.0] * 14  # 16,383 prefixes
        assert sum(block.block_law(rows2, lambda p: [0.6, 0.4], 15, 2).values()) == pytest.approx(1.0, abs=1e-12)
        assert sd.optimal_draft_length(1.0, 0.0, max_draft_tokens=MAX_SCANNED_DRAFT_TOKENS)[0] == MAX_SCANNED_DRAFT_TOKENS
    point = lambda prefix: [1.0, 0.0]  # noqa: E731  pruning leaves one prefix per level: any K up to 32
    assert sd.acceptance_profile(point, point, chain.MAX_ENUMERATED_DRAFT_TOKENS).tolist() == [1.0] * 33


def mss_acceptance_exact(target, draft, k) -> Fraction:
    """F14 from its definition in rationals: r_1 = p, r_{s+1} = norm((r_s - q)+), 1 - prod_s TV(r_s, q)."""
    p, q = ([Fraction(x) for x in row.tolist()] for row in (target, draft))
    p, q = [x / sum(p) for x in p], [x / sum(q) for x in q]
    rejected = Fraction(1)
    for _ in range(k):
        tv = sum(max(a - b, 0) for a, b in zip(p, q))
        rejected *= tv
        if tv == 0:
            break
        p = [max(a - b, 0) / tv for a, b in zip(p, q)]
    return 1 - rejected


@settings(max_examples=150)
@given(probability_pairs(max_size=8))
def test_mss_acceptance_in_closed_form_is_the_product_of_f14(pair):
    """(F14) The telescoped closed form equals the k-step product in exact arithmetic (and the float
    k-step recursion, which loses every digit on near-equal pairs after a few steps, is not used)."""
    target, draft = (c.as_law("x", row) for row in pair)
    for k in (1, 2, 3, 7, 20):
        assert md.mss_acceptance(target, draft, k) == pytest.approx(float(mss_acceptance_exact(target, draft, k)), abs=1e-14)


def test_mss_acceptance_takes_max_drafts_at_once():
    target, draft = [0.3, 0.3 + 1e-3, 0.4 - 1e-3, 0.0], [1e-7, 1e-7, 0.5 - 2e-7, 0.5]  # S = {0, 1} after one step, for ~1e7 steps
    with within(5):
        assert md.mss_acceptance(target, draft, md.MAX_DRAFTS) == pytest.approx(1 - (0.601 - 2e-7) * (1 - 2e-7) ** 999_999, rel=1e-9)


def test_compare_refuses_a_table_beyond_the_library_cap_before_any_work(capsys):
    from specdec.cli import main

    start = time.perf_counter()
    with within(5):
        assert main(["compare", "--max-drafts", "3000"]) == 2
    assert time.perf_counter() - start < 2
    err = capsys.readouterr().err.strip()
    assert err == f"specdec compare: error: --max-drafts must be at most {schemes.MAX_TABLE_DRAFTS} (the table's cap), got 3000", err
    with within(20):
        assert main(["compare", "--max-drafts", str(schemes.MAX_TABLE_DRAFTS)]) == 0


# ------------------------------------------------------------------ 8. overflow is a named ValueError


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: required_sample_size(2, 1e-200, alpha=0.05), r"tv=1e-200 needs more than 2\*\*63 - 1 samples"),
        (lambda: required_sample_size(2, 1e-160, alpha=0.05), r"tv=1e-160 needs more than"),
        (lambda: sd.expected_tokens_iid(10**400, 2), r"alpha must be a real number of float range, got an integer of 401 digits"),
        (lambda: sd.speedup(0.5, 2, 10**400), r"cost_ratio must be a real number of float range"),
        (lambda: sd.expected_tokens_iid(0.5, 10**400), r"num_draft_tokens must be an integer <= 9223372036854775807"),
        (lambda: sd.speedup(np.float64(0.5), 2**70, 0.5), r"num_draft_tokens must be an integer <="),
        (lambda: sd.detectable_tv([0.1] * 10, 10**400, alpha=1e-3), r"n must be an integer <= 9223372036854775807"),
        (lambda: sd.required_sample_size(10**400, 0.1, alpha=1e-3), r"num_bins must be an integer <="),
    ],
)
def test_overflow_is_a_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------ 10. one rule for prompts (issue item 8)


PROMPTS = [[1, 2], (3,), np.array([1, 2]), np.array([4], dtype=np.uint8), torch.tensor([5, 6]), [np.int64(2)],
           [], np.array([]), [9], [1.5], np.array([1.5]), torch.tensor([[1, 2]]), "12", [True], 7, torch.tensor([1.0])]


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"{type(p).__name__}:{p!r:.20}")
def test_one_prompt_rule_for_generate_and_sequence_law(prompt, tiny_target_and_draft):
    target, draft = tiny_target_and_draft
    outcomes = []
    for call in (lambda: sd.generate(target, draft, [prompt], max_new_tokens=1, num_draft_tokens=1, seed=0),
                 lambda: sd.sequence_law(target, prompt, 1)):
        try:
            call()
            outcomes.append("ok")
        except (TypeError, ValueError) as error:
            outcomes.append(type(error).__name__)
            assert "prompt" in str(error), error
    assert outcomes[0] == outcomes[1], (prompt, outcomes)
    law = sd.sequence_law(target, prompt, 1) if outcomes[1] == "ok" else None
    if law is not None:
        plain = sd.sequence_law(target, [int(t) for t in (prompt.tolist() if hasattr(prompt, "tolist") else prompt)], 1)
        assert law.sequences == plain.sequences and np.array_equal(law.probs, plain.probs)
