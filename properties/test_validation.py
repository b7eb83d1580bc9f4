"""Every public entry point validates its input: a ValueError / TypeError naming the argument and
showing the value, never a NaN, a raw RuntimeError or a silent wrong answer.  Numbers are accepted
the way numpy and torch accept them (numpy scalars included); bools are refused as numbers."""

import math

import numpy as np
import pytest
import torch

import specdec as sd
from specdec.laws import multidraft as md
from specdec.stats import detectable_tv, goodness_of_fit, monte_carlo_gof

B, K, V = 2, 3, 5


def good():
    g = torch.Generator().manual_seed(0)
    draft = torch.rand(B, K, V, generator=g, dtype=torch.float64).softmax(-1)
    target = torch.rand(B, K + 1, V, generator=g, dtype=torch.float64).softmax(-1)
    return {"draft_tokens": sd.sample_categorical(draft, g), "draft_probs": draft, "target_probs": target}


def with_entry(name, index, value):
    inputs = good()
    tensor = inputs[name].clone()
    tensor[index] = value
    inputs[name] = tensor
    return inputs


def replaced(**changes):
    inputs = good()
    inputs.update(changes)
    return inputs


def zero_at_draft():
    inputs = good()
    draft = inputs["draft_probs"].clone()
    x = int(inputs["draft_tokens"][1, 2])
    draft[1, 2, x] = 0.0
    draft[1, 2] /= draft[1, 2].sum()
    inputs["draft_probs"] = draft
    return inputs


def shifted_mass(name, delta):
    inputs = good()
    tensor = inputs[name].clone()
    tensor[0, 1, 0] += delta
    inputs[name] = tensor
    return inputs


VERIFIER_CASES = {
    "nan in target": (with_entry("target_probs", (0, 1, 2), math.nan), ValueError, r"target_probs has a non-finite entry nan at index \(0, 1, 2\)"),
    "inf in draft": (with_entry("draft_probs", (1, 0, 0), math.inf), ValueError, r"draft_probs has a non-finite entry inf"),
    "negative mass": (shifted_mass("target_probs", -2.0), ValueError, r"target_probs has a negative probability"),
    "unnormalised row": (shifted_mass("draft_probs", 1e-3), ValueError, r"draft_probs row \(0, 1\) sums to 1.001"),
    "token too large": (with_entry("draft_tokens", (0, 0), V), ValueError, r"draft_tokens has token id 5 at index \(0, 0\), outside \[0, 5\)"),
    "negative token": (with_entry("draft_tokens", (1, 1), -1), ValueError, r"draft_tokens has token id -1"),
    "proposal mismatch": (zero_at_draft(), ValueError, r"proposal mismatch \(E1\).*\(1, 2\)"),
    "float tokens": (replaced(draft_tokens=torch.zeros(B, K)), TypeError, r"draft_tokens must have dtype"),
    "list target": (replaced(target_probs=[[0.5, 0.5]]), TypeError, r"target_probs must be a torch.Tensor, got list"),
    "bf16 target": (replaced(target_probs=good()["target_probs"].bfloat16()), TypeError, r"target_probs must have dtype"),
    "dtype mismatch": (replaced(draft_probs=good()["draft_probs"].float()), TypeError, r"draft_probs dtype torch.float32 differs"),
    "2-d target": (replaced(target_probs=torch.ones(B, V) / V), ValueError, r"target_probs must have 3 dimensions"),
    "target rows != K+1": (replaced(target_probs=good()["target_probs"][:, :K]), ValueError, r"target_probs must have shape \(2, 4, 5\) \(B, K\+1, V\)"),
    "draft vocab mismatch": (replaced(draft_probs=torch.ones(B, K, V + 1, dtype=torch.float64) / (V + 1)), ValueError, r"draft_probs must have shape \(2, 3, 5\)"),
    "empty vocabulary": (replaced(draft_probs=None, target_probs=torch.ones(B, K + 1, 0, dtype=torch.float64)), ValueError, r"vocabulary of at least 1"),
    "meta target": (replaced(target_probs=torch.empty(B, K + 1, V, dtype=torch.float64, device="meta")), ValueError, r"target_probs is a meta tensor"),
}


@pytest.mark.parametrize("case", list(VERIFIER_CASES))
@pytest.mark.parametrize("verifier", [sd.verify_tokens, sd.verify_block])
def test_chain_verifiers_reject(case, verifier):
    inputs, error, message = VERIFIER_CASES[case]
    with pytest.raises(error, match=message):
        verifier(**inputs, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize(
    "pad_id, error, message",
    [(None, TypeError, "pad_id must be an integer, got NoneType"), (1.5, TypeError, "pad_id must be an integer, got float"),
     (math.nan, TypeError, "pad_id must be an integer, got float nan"), (2**70, ValueError, "pad_id must be an integer <="),
     (True, TypeError, "pad_id must be an integer, got the bool")],
)
def test_pad_id_is_an_int64(pad_id, error, message):
    for call in (
        lambda: sd.verify_tokens(**good(), generator=torch.Generator(), pad_id=pad_id),
        lambda: sd.verify_greedy(good()["draft_tokens"], good()["target_probs"], pad_id=pad_id),
    ):
        with pytest.raises(error, match=message):
            call()
    assert sd.verify_tokens(**good(), generator=torch.Generator(), pad_id=np.int64(-7)).tokens.dtype == torch.int64


def test_good_inputs_pass_and_validation_can_be_skipped():
    inputs = good()
    result = sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0))
    k = inputs["draft_tokens"].shape[1]
    assert result.tokens.shape == (inputs["draft_tokens"].shape[0], k + 1) and bool(((result.num_accepted >= 0) & (result.num_accepted <= k)).all())
    inputs = zero_at_draft()  # E1 goes unnoticed without validation: the multiply form accepts iff p(x) > 0
    with pytest.raises(ValueError, match="proposal"):
        sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0))
    unchecked = sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0), validate=False)
    x = int(inputs["draft_tokens"][1, 2])
    if int(unchecked.num_accepted[1]) >= 2 and float(inputs["target_probs"][1, 2, x]) > 0:
        assert int(unchecked.num_accepted[1]) == 3  # q(x) = 0 < p(x): u * 0 < p(x) always accepts


def test_sum_tolerance_is_a_number():
    inputs = shifted_mass("draft_probs", 1e-3)
    sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0), sum_tol=np.float32(2e-3))
    with pytest.raises(ValueError, match="sum_tol must be >= 0.0, got -1.0"):
        sd.verify_tokens(**good(), generator=torch.Generator(), sum_tol=-1)
    with pytest.raises(TypeError, match="sum_tol must be a real number, got the bool True"):
        sd.verify_tokens(**good(), generator=torch.Generator(), sum_tol=True)


def test_generator_and_uniforms_are_checked():
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        sd.verify_tokens(**good(), generator=0)
    with pytest.raises(ValueError, match=r"uniforms must lie in \[0, 1\)"):
        sd.verify_tokens_with_uniforms(**good(), uniforms=torch.ones(B, K + 1, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"uniforms must have shape \(2, 4\)"):
        sd.verify_tokens_with_uniforms(**good(), uniforms=torch.zeros(B, K, dtype=torch.float64))
    with pytest.raises(TypeError, match="uniforms must have dtype"):
        sd.verify_tokens_with_uniforms(**good(), uniforms=torch.zeros(B, K + 1))


def test_greedy_rejects_nan_dead_rows_and_an_empty_vocabulary():
    scores = torch.zeros(1, 2, 3)
    scores[0, 1, 1] = math.nan
    with pytest.raises(ValueError, match="target_scores contain NaN"):
        sd.verify_greedy(torch.zeros(1, 1, dtype=torch.long), scores)
    with pytest.raises(ValueError, match="-inf everywhere"):
        sd.verify_greedy(torch.zeros(1, 1, dtype=torch.long), torch.full((1, 2, 3), -math.inf))
    with pytest.raises(ValueError, match="draft_tokens has token id 3"):
        sd.verify_greedy(torch.full((1, 1), 3), torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="vocabulary of at least 1"):
        sd.verify_greedy(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 2, 0))


def test_sample_categorical_validates():
    with pytest.raises(ValueError, match="probs row"):
        sd.sample_categorical(torch.tensor([0.5, 0.6]), torch.Generator())
    with pytest.raises(TypeError, match="probs must have dtype"):
        sd.sample_categorical(torch.tensor([1, 0]), torch.Generator())


# ------------------------------------------------------------------ warpers: never NaN from valid input


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"temperature": -1.0}, ValueError, "temperature must be >= 0.0"),
        ({"temperature": math.nan}, ValueError, "temperature must be a number, got nan"),
        ({"temperature": math.inf}, ValueError, "temperature must be finite"),
        ({"top_k": -2}, ValueError, "top_k must be an integer >= 0"),
        ({"top_k": 1.5}, TypeError, "top_k must be an integer, got float"),
        ({"top_p": 0.0}, ValueError, "top_p must be > 0.0"),
        ({"top_p": 1.5}, ValueError, "top_p must be <= 1.0"),
        ({"top_p": True}, TypeError, "top_p must be a real number, got the bool"),
        ({"min_p": -0.1}, ValueError, "min_p must be >= 0.0"),
        ({"min_tokens_to_keep": 0}, ValueError, "min_tokens_to_keep must be an integer >= 1"),
        ({"temperature": 1 + 1j}, TypeError, "temperature must be a real number, got complex"),
    ],
)
def test_sampling_config_rejects(kwargs, error, message):
    with pytest.raises(error, match=message):
        sd.SamplingConfig(**kwargs)


def test_sampling_config_takes_numpy_scalars_as_numbers():
    config = sd.SamplingConfig(temperature=np.float32(0.5), top_k=np.int64(5), top_p=np.float64(0.9), min_tokens_to_keep=np.uint8(2))
    assert (config.top_k, config.min_tokens_to_keep) == (5, 2) and type(config.top_k) is int
    assert config == sd.SamplingConfig(temperature=0.5, top_k=5, top_p=0.9, min_tokens_to_keep=2)


def test_warpers_reject_bad_logits():
    with pytest.raises(ValueError, match="logits contain NaN"):
        sd.warped_probs(torch.tensor([0.0, math.nan]), sd.SamplingConfig())
    with pytest.raises(TypeError, match="logits must be a floating tensor"):
        sd.warped_probs(torch.tensor([1, 2]), sd.SamplingConfig())
    with pytest.raises(TypeError, match="config must be a SamplingConfig"):
        sd.warp_logits(torch.zeros(3), {"temperature": 1.0})
    with pytest.raises(ValueError, match=r"logits row \(1,\) is -inf everywhere"):
        sd.warped_probs(torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]]), sd.SamplingConfig())
    with pytest.raises(ValueError, match=r"logits contain \+inf at index \(0,\)"):
        sd.warped_probs(torch.tensor([math.inf, 1.0]), sd.SamplingConfig())


@pytest.mark.parametrize(
    "logits, config, dtype, expected",
    [
        (torch.tensor([1e39, 0.0], dtype=torch.float64), sd.SamplingConfig(), torch.float32, [1.0, 0.0]),  # beyond float32's range
        (torch.tensor([1.0, 0.0, -math.inf]), sd.SamplingConfig(temperature=1e300), torch.float32, [0.5, 0.5, 0.0]),
        (torch.tensor([1.0, 0.0, -math.inf]), sd.SamplingConfig(temperature=1e-300), torch.float32, [1.0, 0.0, 0.0]),
        (torch.tensor([6e4, 0.0], dtype=torch.float16), sd.SamplingConfig(temperature=0.5), torch.float32, [1.0, 0.0]),
        (torch.tensor([3e38, 3e38, 0.0]), sd.SamplingConfig(temperature=0.5), torch.float64, [0.5, 0.5, 0.0]),
    ],
)
def test_extreme_but_valid_inputs_give_the_limit_law_not_nan(logits, config, dtype, expected):
    probs = sd.warped_probs(logits, config, dtype=dtype)
    assert probs.dtype == dtype and torch.isfinite(probs).all()
    assert torch.allclose(probs.double(), torch.tensor(expected, dtype=torch.float64), atol=1e-6)


# ------------------------------------------------------------------ laws, metrics, statistics


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: sd.acceptance_rate([1, 2], 0), ValueError, "num_accepted exceeds num_draft_tokens"),
        (lambda: sd.acceptance_rate([0, 0], 0), ValueError, r"num_draft_tokens=\[0, 0\]: no draft token was verified"),
        (lambda: sd.acceptance_rate([-1], 3), ValueError, "num_accepted must be non-negative"),
        (lambda: sd.acceptance_rate([0.5], 3), ValueError, "num_accepted must hold whole counts"),
        (lambda: sd.mean_tokens_per_step(np.array([2**64 - 1], dtype=np.uint64)), ValueError, "num_emitted has a count .* beyond int64"),
        (lambda: sd.expected_tokens_iid(1.5, 3), ValueError, "alpha must be <= 1.0"),
        (lambda: sd.expected_tokens_iid(0.5, -1), ValueError, "num_draft_tokens must be an integer >= 0"),
        (lambda: sd.expected_tokens_iid(True, 3), TypeError, "alpha must be a real number, got the bool"),
        (lambda: sd.speedup(0.5, 3, -0.1), ValueError, "cost_ratio must be >= 0.0"),
        (lambda: sd.expected_tokens_positional([0.5, 2.0]), ValueError, "alphas must lie in"),
        (lambda: sd.required_sample_size(1, 0.1, alpha=1e-3), ValueError, "num_bins must be an integer >= 2"),
        (lambda: sd.required_sample_size(5, 0.0, alpha=1e-3), ValueError, "tv must be > 0.0"),
        (lambda: detectable_tv([0.1] * 10, math.nan, alpha=1e-3), TypeError, "n must be an integer, got float nan"),
        (lambda: goodness_of_fit([1, 2], [0.5, 0.6]), ValueError, "expected_probs row .* sums to 1.1"),
        (lambda: goodness_of_fit([1, 2], [0.5, math.nan]), ValueError, "expected_probs has a non-finite entry"),
        (lambda: goodness_of_fit([1.5, 2], [0.5, 0.5]), ValueError, "observed_counts must hold whole counts"),
        (lambda: goodness_of_fit([-1, 2], [0.5, 0.5]), ValueError, "observed_counts must be non-negative"),
        (lambda: monte_carlo_gof([1, 2], [0.5, 0.5], num_resamples=0, seed=0), ValueError, "num_resamples must be an integer >= 1"),
        (lambda: md.mss_acceptance(torch.ones(2, 3) / 3, torch.ones(2, 3) / 3, 2), ValueError, "target_probs must have 1 dimension"),
        (lambda: md.distinct_children_law([0.5, 0.3, 0.2], [-1]), ValueError, r"children\[0\] must be an integer >= 0, got -1"),
        (lambda: md.distinct_children_law([0.5, 0.3, 0.2], [1, 1]), ValueError, "distinct token ids"),
        (lambda: sd.tokens_per_step_moments([1.0, 2.0]), ValueError, "non-increasing"),
        (lambda: sd.tokens_per_step_moments([0.5]), ValueError, "A_0 = 1"),
        (lambda: sd.residual_distribution([0.5, math.nan], [0.5, 0.5]), ValueError, "target_probs has a non-finite entry"),
        (lambda: sd.residual_distribution([1.5, -0.5], [0.5, 0.5]), ValueError, "target_probs has a negative probability"),
        (lambda: sd.acceptance_probability(torch.tensor([0.5 + 0j, 0.5]), [0.5, 0.5]), TypeError, "target_probs must hold real probabilities, got dtype torch.complex"),
        (lambda: sd.token_output_law(np.array([0.5 + 1j, 0.5]), [0.5, 0.5]), TypeError, "target_probs must hold real probabilities"),
        (lambda: sd.optimal_plan([0.5, 0.5], np.array([0.5j, 0.5])), TypeError, "draft_probs must hold real probabilities"),
        (lambda: sd.multidraft_optimum([0.5, 0.5], [1.0], 2), ValueError, "shape"),
    ],
)
def test_laws_metrics_and_statistics_reject(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_numbers_are_accepted_as_numpy_gives_them():
    assert sd.expected_tokens_iid(np.float32(0.5), np.int64(3)) == pytest.approx(1.875)
    assert sd.acceptance_rate(np.array([2, 0], dtype=np.uint64), np.int32(2)) == pytest.approx(2 / 3)
    assert sd.mean_tokens_per_step(np.array([3, 1], dtype=np.uint64)) == 2.0
    assert sd.required_sample_size(np.int64(27), np.float64(0.02), alpha=np.float32(1e-3)) == 40_516



def _function_law_row(context):
    """A law of V = 5 that goes wrong at chosen contexts: a NaN after 2, a short row after 3, a tensor after 4."""
    last = context[-1]
    if last == 2:
        return [0.5, math.nan, 0.5, 0, 0]
    if last == 3:
        return [0.5, 0.5]
    if last == 4:
        return torch.tensor([0.25, 0.25, 0.5, 0, 0], dtype=torch.float32)
    return [0.2, 0.3, 0.5, 0, 0] if last % 2 else np.array([0.1, 0.1, 0.2, 0.2, 0.4])


@pytest.mark.parametrize("bad, message", [(2, r"fn\(\(0, 2\)\) has a non-finite entry"),
                                          (3, r"fn\(\(0, 3\)\) returned 2 probabilities, expected vocab_size=5")])
def test_a_function_law_names_the_context_whose_row_is_wrong(bad, message):
    """All rows are checked at once when they share a dtype and shape; a wrong one is still named by its context."""
    law = sd.laws.FunctionLaw(_function_law_row, vocab_size=5)
    with pytest.raises(ValueError, match=message):
        law.next_token_probs([(0, 1), (0, bad), (0, 0)])


def test_a_function_laws_rows_are_those_each_row_gives_alone():
    law = sd.laws.FunctionLaw(_function_law_row, vocab_size=5)
    contexts = [(0, 1), (0, 0), (1, 4), (0, 1, 0)]  # lists and arrays, a float32 tensor among them: row by row
    rows = law.next_token_probs(contexts)
    alone = np.stack([law.next_token_probs([c])[0] for c in contexts])
    assert rows.dtype == np.float64 and rows.shape == (4, 5) and np.array_equal(rows, alone)
    assert np.allclose(rows[2], [0.25, 0.25, 0.5, 0, 0]) and law.next_token_probs([]).shape == (0, 5)
    same = law.next_token_probs([(1,), (3, 1), (2, 1)])  # one dtype and shape: checked at once
    assert np.array_equal(same, np.tile([0.2, 0.3, 0.5, 0, 0], (3, 1)))
