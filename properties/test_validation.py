"""Every validation error fires on its bad input, as ValueError/TypeError naming the argument."""

import math

import pytest
import torch

import specdec as sd

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


CASES = {
    "nan in target": (with_entry("target_probs", (0, 1, 2), math.nan), ValueError, r"target_probs has a non-finite entry nan at index \(0, 1, 2\)"),
    "inf in draft": (with_entry("draft_probs", (1, 0, 0), math.inf), ValueError, r"draft_probs has a non-finite entry inf"),
    "negative mass": (shifted_mass("target_probs", -2.0), ValueError, r"target_probs has a negative probability"),
    "unnormalised row": (shifted_mass("draft_probs", 1e-3), ValueError, r"draft_probs row \(0, 1\) sums to 1.001"),
    "token too large": (with_entry("draft_tokens", (0, 0), V), ValueError, r"draft_tokens has token id 5 at index \(0, 0\), outside \[0, 5\)"),
    "negative token": (with_entry("draft_tokens", (1, 1), -1), ValueError, r"draft_tokens has token id -1"),
    "proposal mismatch": (zero_at_draft(), ValueError, r"proposal mismatch \(SPEC E1\).*\(1, 2\)"),
    "float tokens": (replaced(draft_tokens=torch.zeros(B, K)), TypeError, r"draft_tokens must have dtype"),
    "list target": (replaced(target_probs=[[0.5, 0.5]]), TypeError, r"target_probs must be a torch.Tensor, got list"),
    "bf16 target": (replaced(target_probs=good()["target_probs"].bfloat16()), TypeError, r"target_probs must have dtype"),
    "dtype mismatch": (replaced(draft_probs=good()["draft_probs"].float()), TypeError, r"draft_probs dtype torch.float32 differs"),
    "2-d target": (replaced(target_probs=torch.ones(B, V) / V), ValueError, r"target_probs must have 3 dimensions"),
    "target rows != K+1": (replaced(target_probs=good()["target_probs"][:, :K]), ValueError, r"target_probs must have shape \(2, 4, 5\) \(B, K\+1, V\)"),
    "draft vocab mismatch": (replaced(draft_probs=torch.ones(B, K, V + 1, dtype=torch.float64) / (V + 1)), ValueError, r"draft_probs must have shape \(2, 3, 5\)"),
    "empty vocabulary": (replaced(draft_probs=None, target_probs=torch.ones(B, K + 1, 0, dtype=torch.float64)), ValueError, r"vocabulary of at least 1"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_verify_tokens_rejects(case):
    inputs, error, message = CASES[case]
    with pytest.raises(error, match=message):
        sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0))


def test_good_inputs_pass_and_validation_can_be_skipped():
    sd.verify_tokens(**good(), generator=torch.Generator().manual_seed(0))
    inputs = zero_at_draft()  # E1 goes unnoticed without validation: the multiply form accepts iff p(x) > 0
    sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0), validate=False)


def test_sum_tolerance_is_an_argument():
    inputs = shifted_mass("draft_probs", 1e-3)
    sd.verify_tokens(**inputs, generator=torch.Generator().manual_seed(0), sum_tol=2e-3)
    with pytest.raises(ValueError, match="sum_tol"):
        sd.verify_tokens(**good(), generator=torch.Generator().manual_seed(0), sum_tol=-1)


def test_generator_and_uniforms_are_checked():
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        sd.verify_tokens(**good(), generator=0)
    with pytest.raises(ValueError, match=r"uniforms must lie in \[0, 1\)"):
        sd.verify_tokens_with_uniforms(**good(), uniforms=torch.ones(B, K + 1, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"uniforms must have shape \(2, 4\)"):
        sd.verify_tokens_with_uniforms(**good(), uniforms=torch.zeros(B, K, dtype=torch.float64))
    with pytest.raises(TypeError, match="uniforms must have dtype"):
        sd.verify_tokens_with_uniforms(**good(), uniforms=torch.zeros(B, K + 1))


def test_greedy_rejects_nan_and_dead_rows():
    scores = torch.zeros(1, 2, 3)
    scores[0, 1, 1] = math.nan
    with pytest.raises(ValueError, match="target_scores contain NaN"):
        sd.verify_greedy(torch.zeros(1, 1, dtype=torch.long), scores)
    with pytest.raises(ValueError, match="-inf everywhere"):
        sd.verify_greedy(torch.zeros(1, 1, dtype=torch.long), torch.full((1, 2, 3), -math.inf))
    with pytest.raises(ValueError, match="draft_tokens has token id 3"):
        sd.verify_greedy(torch.full((1, 1), 3), torch.zeros(1, 2, 3))


def test_sample_categorical_validates():
    with pytest.raises(ValueError, match="probs row"):
        sd.sample_categorical(torch.tensor([0.5, 0.6]), torch.Generator())
    with pytest.raises(TypeError, match="probs must have dtype"):
        sd.sample_categorical(torch.tensor([1, 0]), torch.Generator())


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": math.nan}, "temperature"),
        ({"top_k": -2}, "top_k"),
        ({"top_k": 1.5}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"min_p": -0.1}, "min_p"),
        ({"min_tokens_to_keep": 0}, "min_tokens_to_keep"),
    ],
)
def test_sampling_config_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sd.SamplingConfig(**kwargs)


def test_warpers_reject_bad_logits():
    with pytest.raises(ValueError, match="logits contain NaN"):
        sd.warped_probs(torch.tensor([0.0, math.nan]), sd.SamplingConfig())
    with pytest.raises(TypeError, match="logits must be a floating tensor"):
        sd.warped_probs(torch.tensor([1, 2]), sd.SamplingConfig())
    with pytest.raises(TypeError, match="config must be a SamplingConfig"):
        sd.warp_logits(torch.zeros(3), {"temperature": 1.0})


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: sd.acceptance_rate([1, 2], 0), "num_accepted exceeds num_draft"),
        (lambda: sd.acceptance_rate([0, 0], 0), "no draft token was verified"),
        (lambda: sd.acceptance_rate([-1], 3), "num_accepted must be non-negative integers"),
        (lambda: sd.expected_tokens_iid(1.5, 3), "alpha must be in"),
        (lambda: sd.expected_tokens_iid(0.5, -1), "gamma must be an integer"),
        (lambda: sd.speedup(0.5, 3, -0.1), "cost_ratio"),
        (lambda: sd.expected_tokens_positional([0.5, 2.0]), "alphas must lie"),
        (lambda: sd.plan_sample_size(1, 0.1, alpha=1e-3), "num_bins"),
        (lambda: sd.plan_sample_size(5, 0.0, alpha=1e-3), "tv must be"),
        (lambda: sd.goodness_of_fit([1, 2], [0.5, 0.6]), "expected_probs must be non-negative and sum to 1"),
    ],
)
def test_metric_and_stat_inputs(call, message):
    with pytest.raises(ValueError, match=message):
        call()
