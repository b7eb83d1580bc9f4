"""transformers' own law under the whole sampling record (issue 38): :class:`specdec.adapters.hf_oracle.HFSettingsOracle`.

* exact: transformers' processors as the oracle builds them turn ``generate``'s logits into its processed scores
  (``output_scores=True``) bit for bit, and at every position of answers ``generate`` sampled the oracle's law is the
  law ``generate`` drew from within float32 rounding (2e-6 per entry, a mean TV under 1e-6), for every setting family;
* the control: ``generate`` without speculation PASSes the per-token check against the oracle under every record,
  and so does transformers' prompt lookup;
* a planted bug per setting family - a penalty that reads one token more (a draft), a bias applied at the first
  position only, bad words and a user processor that read a stale history, allowed ids forgotten at the first
  position, the minimum of new tokens counted from the wrong start - FAILs through a real engine's subject;
* refusals and bad arguments are named.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

import specdec as sd
from fixtures.models import tiny_pair
from specdec.adapters._common import request_seeds
from specdec.adapters.hf import HFGenerateDecoder, HFPromptLookupDecoder
from specdec.adapters.hf_oracle import HFSettingsOracle
from specdec.errors import PeerVersionError
from specdec.protocols import LawOracle
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting

PROMPTS = [[1, 2, 3, 4, 5], [3, 3, 6]]
LOOKUP_PROMPT = [5, 7, 7, 5, 7, 5, 5, 7, 5, 7, 7, 7, 5, 5, 7, 5, 7, 5]  # the matrix's cat/dog pattern: lookup drafts
BASE = {"temperature": 0.7, "top_p": 0.8}
LENGTH, N = 6, 120  # tokens per answer, answers per prompt of a check


def no_immediate_repeat(history, logits):
    """A history-reading processor (the matrix's): the token just emitted may not come again."""
    out = logits.clone()
    out[int(history[-1])] = float("-inf")
    return out


RECORDS = {
    "base": SamplingSettings(**BASE),
    "repetition penalty": SamplingSettings(**BASE, repetition_penalty=1.3),
    "logit bias": SamplingSettings(temperature=1.0, logit_bias={6: 3.0}),
    "bad words": SamplingSettings(**BASE, bad_words=[[3, 3]]),
    "allowed token ids": SamplingSettings(temperature=1.0, allowed_token_ids=[3, 4, 5, 6]),
    "minimum new tokens": SamplingSettings(**BASE, stop_token_ids=[3], min_new_tokens=2),
    "user logits processor": SamplingSettings(temperature=1.0, logits_processor=no_immediate_repeat),
    "greedy": SamplingSettings(temperature=0.0),
    "greedy, repetition penalty": SamplingSettings(temperature=0.0, repetition_penalty=1.3),
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # fixtures.plugin


def _target():
    return tiny_pair(0, vocab_size=8)[0]


def _generate_with_scores(target, settings, prompt, seed):
    """(answer, raw logits, processed scores) of one answer ``generate`` sampled: the scores are what it drew from."""
    kwargs, _ = HFGenerateDecoder(target, settings=settings)._generate_kwargs()
    ids = torch.tensor([prompt])
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        out = target.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=LENGTH, pad_token_id=0,
                              output_scores=True, output_logits=True, return_dict_in_generate=True, **kwargs)
    return out.sequences[0, len(prompt):].tolist(), out.logits, out.scores


@pytest.mark.parametrize("name", list(RECORDS))
def test_the_oracle_states_the_law_generate_draws_from(name):
    """transformers' processors as the oracle builds them turn generate's own logits into generate's scores exactly;
    the oracle's laws (one full forward pass) are generate's within float32 rounding: at most 2e-6 per entry, a mean TV
    under 1e-6 (the default floor, 1e-5, also covers SmolLM2's rounding)."""
    settings, target = RECORDS[name], _target()
    oracle = HFSettingsOracle(target, settings)
    gaps = []
    for seed in range(4):
        for prompt in PROMPTS + [LOOKUP_PROMPT]:
            answer, logits, scores = _generate_with_scores(target, settings, prompt, seed)
            laws = oracle.token_laws([prompt], [answer])[0]
            processors = oracle.processors(torch.tensor([prompt]))
            assert len(laws) == len(answer) == len(scores)
            for t, (law, raw, row) in enumerate(zip(laws, logits, scores)):
                assert torch.equal(processors(torch.tensor([prompt + answer[:t]]), raw.clone()), row), (name, prompt, answer, t)
                row = row[0].double()
                drawn = torch.nn.functional.one_hot(row.argmax(), row.numel()).double() if settings.greedy else row.softmax(-1)
                gaps.append(np.abs(law.probs - drawn.numpy()))
                assert gaps[-1].max() <= 2e-6, f"{name}: {prompt} + {answer[:t]}: the laws differ by {gaps[-1].max():.3g}"
    mean_tv = float(np.mean([g.sum() / 2 for g in gaps]))
    assert mean_tv < 1e-6 < oracle.floor, mean_tv
    print(f"{name}: largest difference {max(g.max() for g in gaps):.3g}, mean TV {mean_tv:.3g} over {len(gaps)} tokens")


def _check(subject, settings, oracle, prompts=PROMPTS, **terms):
    stops = list(settings.stop_token_ids) or None
    return sd.check_tokens(subject, oracle, prompts, length=LENGTH, n=N, tv=None, eos_token_id=stops, vocab_size=8, **terms)


@pytest.mark.parametrize("name", list(RECORDS))
def test_generate_without_speculation_passes_against_the_oracle(specdec_budget, name):
    settings, target = RECORDS[name], _target()
    report = _check(HFGenerateDecoder(target, settings=settings), settings, HFSettingsOracle(target, settings), seed=11,
                    budget=specdec_budget, name=f"transformers generate, {name}, per token")
    assert report.verdict == "PASS", report.format()


@pytest.mark.parametrize("name", ["repetition penalty", "bad words", "user logits processor"])
def test_transformers_prompt_lookup_passes_against_the_oracle(specdec_budget, name):
    settings, target = RECORDS[name], _target()
    subject = HFPromptLookupDecoder(target, settings=settings, num_draft_tokens=4, max_ngram_size=3)
    report = _check(subject, settings, HFSettingsOracle(target, settings), prompts=[LOOKUP_PROMPT, PROMPTS[0]], seed=12,
                    budget=specdec_budget, name=f"transformers prompt lookup, {name}, per token")
    assert report.verdict == "PASS", report.format()


class _Processor:
    """A function (input_ids, scores) -> scores as a transformers logits processor."""

    def __init__(self, function) -> None:
        self.function = function

    def __call__(self, input_ids, scores):
        return self.function(input_ids, scores)


def _adding(kwargs, function) -> dict:
    from transformers import LogitsProcessorList

    kwargs["logits_processor"] = LogitsProcessorList([*kwargs.get("logits_processor", []), _Processor(function)])
    return kwargs


def _penalty_reads_a_draft(kwargs, start):
    from transformers import RepetitionPenaltyLogitsProcessor

    penalty = RepetitionPenaltyLogitsProcessor(kwargs.pop("repetition_penalty"))
    return _adding(kwargs, lambda ids, scores: penalty(torch.cat([ids, scores.argmax(-1, keepdim=True)], -1), scores))


def _bias_at_the_first_position_only(kwargs, start):
    bias = torch.zeros(8)
    for (token,), value in kwargs.pop("sequence_bias").items():
        bias[token] = value
    return _adding(kwargs, lambda ids, scores: scores + bias if ids.shape[-1] == start else scores)


def _bad_words_read_a_stale_history(kwargs, start):
    from transformers import NoBadWordsLogitsProcessor

    ban = NoBadWordsLogitsProcessor(kwargs.pop("bad_words_ids"), kwargs.get("eos_token_id"))
    return _adding(kwargs, lambda ids, scores: ban(ids[:, :-1], scores))


def _allowed_ids_forgotten_at_the_first_position(kwargs, start):
    mask = torch.full((8,), float("-inf"))
    mask[kwargs.pop("prefix_allowed_tokens_fn")(0, None)] = 0.0
    return _adding(kwargs, lambda ids, scores: scores if ids.shape[-1] == start else scores + mask)


def _minimum_counted_from_the_wrong_start(kwargs, start):
    from transformers import MinNewTokensLengthLogitsProcessor

    count, kwargs["min_new_tokens"] = kwargs["min_new_tokens"], 0
    return _adding(kwargs, MinNewTokensLengthLogitsProcessor(start - 1, count, torch.tensor(kwargs["eos_token_id"])))


def _processor_reads_a_stale_history(kwargs, start):
    user = kwargs.pop("logits_processor")[0]
    return _adding(kwargs, lambda ids, scores: user(ids[:, :-1], scores))


class _PlantedBug:
    """A decoder whose ``generate`` keywords ``bug(kwargs, prompt length)`` rewrites, one prompt per call."""

    def __call__(self, prompts, max_new_tokens, seed):
        out = []
        for prompt, row_seed in zip(prompts, request_seeds(seed, len(prompts))):
            self._start = len(prompt)
            out += super().__call__([prompt], max_new_tokens, row_seed)
        return out

    def _generate_kwargs(self):
        kwargs, stops = super()._generate_kwargs()
        return self.bug(dict(kwargs), self._start), stops


@dataclass
class PlantedGenerate(_PlantedBug, HFGenerateDecoder):
    bug: object = None


@dataclass
class PlantedLookup(_PlantedBug, HFPromptLookupDecoder):
    bug: object = None


BUGS = {
    "repetition penalty": _penalty_reads_a_draft,
    "logit bias": _bias_at_the_first_position_only,
    "bad words": _bad_words_read_a_stale_history,
    "allowed token ids": _allowed_ids_forgotten_at_the_first_position,
    "minimum new tokens": _minimum_counted_from_the_wrong_start,
    "user logits processor": _processor_reads_a_stale_history,
    "greedy, repetition penalty": _penalty_reads_a_draft,
}


@pytest.mark.parametrize("name", list(BUGS))
def test_a_planted_bug_of_each_setting_family_fails(name):
    settings, target = RECORDS[name], _target()
    subject = PlantedGenerate(target, settings=settings, bug=BUGS[name])
    report = _check(subject, settings, HFSettingsOracle(target, settings), seed=13, family_alpha=1e-6, name=f"planted: {name}")
    assert report.verdict == "FAIL", report.format()


def test_the_wrapper_that_plants_the_bugs_passes_without_one(specdec_budget):
    settings, target = RECORDS["minimum new tokens"], _target()
    subject = PlantedGenerate(target, settings=settings, bug=lambda kwargs, start: kwargs)
    report = _check(subject, settings, HFSettingsOracle(target, settings), seed=13, budget=specdec_budget,
                    name="planted: nothing")
    assert report.verdict == "PASS", report.format()


def test_a_planted_bug_fails_through_transformers_prompt_lookup():
    settings, target = RECORDS["repetition penalty"], _target()
    subject = PlantedLookup(target, settings=settings, bug=_penalty_reads_a_draft, num_draft_tokens=4, max_ngram_size=3)
    report = _check(subject, settings, HFSettingsOracle(target, settings), prompts=[LOOKUP_PROMPT, PROMPTS[0]], seed=14,
                    family_alpha=1e-6, name="planted through prompt lookup: the penalty reads a draft")
    assert report.verdict == "FAIL", report.format()


@pytest.mark.parametrize("field, value", [("presence_penalty", 1.5), ("frequency_penalty", -1.0), ("samples_per_request", 1),
                                          ("seeded", False)])
def test_what_the_adapter_refuses_the_oracle_refuses_by_name(field, value):
    with pytest.raises(UnsupportedSetting, match=field):
        HFSettingsOracle(_target(), SamplingSettings(**BASE, **{field: value}))


@pytest.mark.parametrize("field, value, says", [("num_beams", 2, "generation mode"), ("guidance_scale", 1.5, "guidance_scale"),
                                                ("forced_eos_token_id", 7, "forced_eos_token_id")])
def test_the_models_own_generation_config_is_refused_by_name_where_the_oracle_cannot_restate_it(field, value, says):
    target = tiny_pair(3, vocab_size=8)[0]
    saved = getattr(target.generation_config, field)
    setattr(target.generation_config, field, value)
    try:
        with pytest.raises(UnsupportedSetting, match=says):
            HFSettingsOracle(target, RECORDS["base"])
    finally:
        setattr(target.generation_config, field, saved)


def test_another_transformers_version_is_refused(monkeypatch):
    from specdec.adapters import _common

    monkeypatch.setattr(_common, "installed_version", lambda distributions: ("transformers", "4.0.0"))
    with pytest.raises(PeerVersionError, match="4.0.0"):
        HFSettingsOracle(_target(), RECORDS["base"])


def test_bad_arguments_are_named():
    target = _target()
    with pytest.raises(TypeError, match="transformers causal LM"):
        HFSettingsOracle("model", RECORDS["base"])
    with pytest.raises(ValueError, match="not both"):
        HFSettingsOracle(target, RECORDS["base"], sampling=sd.SamplingConfig(temperature=0.5))
    with pytest.raises(ValueError, match="floor"):
        HFSettingsOracle(target, RECORDS["base"], floor=-1)
    with pytest.raises(ValueError, match="eos_token_id"):
        HFSettingsOracle(target, RECORDS["base"], eos_token_id=8)
    with pytest.raises(ValueError, match="allowed_token_ids"):
        HFSettingsOracle(target, SamplingSettings(allowed_token_ids=[9]))
    oracle = HFSettingsOracle(target, RECORDS["base"])
    with pytest.raises(ValueError, match="2 prompts and 1 continuations"):
        oracle.token_laws(PROMPTS, [[1]])
    with pytest.raises(ValueError, match=r"prompts\[0\] is empty"):
        oracle.token_laws([[]], [[1]])
    with pytest.raises(ValueError, match=r"continuations\[0\] token"):
        oracle.token_laws([[1]], [[8]])
    assert oracle.token_laws([[1], [2, 3]], [[], [4]])[0] == []
    assert oracle.vocab_size == 8 and oracle.floor == 1e-5 and "T=0.7 top_p=0.8" in oracle.settings
    assert isinstance(oracle, LawOracle)
