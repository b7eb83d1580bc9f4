"""OpenVINO GenAI's penalties as the law oracle restates them (:mod:`specdec.adapters.openvino.penalties`), against
values computed by hand from ``logit_transformers.hpp`` (openvino.genai da1db86): no openvino needed.  The engine
itself is compared with the oracle in peers/test_openvino.py (the control)."""

import numpy as np
import pytest

from specdec.adapters.openvino.ir_oracle import OpenVINOOracle
from specdec.adapters.openvino.penalties import has_penalties, openvino_penalised
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting

LOGITS = np.array([2.0, -1.0, 0.5, -0.5, 3.0, 0.0], dtype=np.float32)  # (V,) = 6
PROMPT = [0, 1]
GENERATED = [2, 2, 3, 1]  # id 1 is both in the prompt and generated; id 2 twice


def _penalised(**penalties):
    return openvino_penalised(LOGITS, PROMPT, GENERATED, SamplingSettings(temperature=1.0, **penalties))


def test_repetition_divides_positive_multiplies_negative_over_prompt_and_generated_each_id_once():
    out = _penalised(repetition_penalty=2.0)
    # ids 0, 1 (prompt), 2, 3 (generated): 2/2, -1*2 (once, though in both), 0.5/2, -0.5*2; 4 and 5 untouched
    assert out.tolist() == [1.0, -2.0, 0.25, -1.0, 3.0, 0.0]
    assert out.dtype == np.float32 and LOGITS[1] == -1.0  # a copy: the argument is unchanged


def test_presence_reads_generated_ids_only_and_moves_negative_logits_up():
    out = _penalised(presence_penalty=1.5)
    # id 0 is only in the prompt: untouched; 1: -1 + 1.5; 2: 0.5 - 1.5 (once, though generated twice); 3: -0.5 + 1.5
    assert out.tolist() == [2.0, 0.5, -1.0, 1.0, 3.0, 0.0]


def test_frequency_scales_with_the_count_and_follows_the_same_sign_rule():
    out = _penalised(frequency_penalty=0.5)
    # counts 1: 1, 2: 2, 3: 1 -> 1: -1 + 0.5; 2: 0.5 - 0.5 * 2; 3: -0.5 + 0.5 (then 0.0)
    assert out.tolist() == [2.0, -0.5, -0.5, 0.0, 3.0, 0.0]
    negative = _penalised(frequency_penalty=-1.0)  # a negative penalty pushes away from 0 instead
    assert negative.tolist() == [2.0, -2.0, 2.5, -1.5, 3.0, 0.0]


def test_the_three_apply_in_openvinos_order_each_reading_the_row_before():
    row = np.array([1.0, 0.25, 0.0], dtype=np.float32)
    settings = SamplingSettings(temperature=1.0, repetition_penalty=2.0, presence_penalty=0.75, frequency_penalty=0.25)
    out = openvino_penalised(row, [], [0, 1], settings)
    # id 0: repetition 1 -> 0.5, presence -> -0.25, frequency (negative now) -> 0.0
    #   (presence before repetition would give -0.125; frequency before presence -0.5)
    # id 1: 0.25 -> 0.125 -> -0.625 -> -0.375
    assert out.tolist() == [0.0, -0.375, 0.0]


def test_the_penalty_is_the_float32_field_and_each_step_is_stored_as_float32():
    out = openvino_penalised(np.array([10.0, 1.0], dtype=np.float32), [0], [], SamplingSettings(repetition_penalty=1.3))
    # GenerationConfig.repetition_penalty is a float: 1.3f = 1.2999999523162842; 10 / that, stored as float32
    assert out[0] == np.float32(7.692308) and out[0] != np.float32(10 / 1.3)
    assert out[1] == 1.0


def test_no_penalty_leaves_the_row_and_bad_ids_are_refused_by_name():
    assert not has_penalties(SamplingSettings(temperature=0.7, top_p=0.8))
    assert has_penalties(SamplingSettings(frequency_penalty=-1.0))
    assert (openvino_penalised(LOGITS, PROMPT, GENERATED, SamplingSettings()) == LOGITS).all()
    with pytest.raises(ValueError, match="generated_ids must be token ids in \\[0, 6\\).*got 6"):
        openvino_penalised(LOGITS, PROMPT, [6], SamplingSettings(presence_penalty=1.0))
    with pytest.raises(ValueError, match="logits must be one row"):
        openvino_penalised(LOGITS[None], PROMPT, [], SamplingSettings(presence_penalty=1.0))
    with pytest.raises(TypeError, match="settings must be a specdec.SamplingSettings"):
        openvino_penalised(LOGITS, PROMPT, [], {"presence_penalty": 1.0})


def _oracle(tmp_path, settings, logits):
    (tmp_path / "openvino_model.xml").write_text("")  # the forward is replaced below: no openvino needed
    oracle = OpenVINOOracle(tmp_path, settings)
    oracle.logits = lambda ids: np.broadcast_to(logits, (*np.shape(ids), logits.size)).astype(np.float32)  # (B, n, V)
    return oracle


def test_the_oracle_penalises_each_position_with_the_prompt_and_the_answer_before_it(tmp_path):
    oracle = _oracle(tmp_path, SamplingSettings(temperature=1.0, repetition_penalty=2.0, frequency_penalty=0.5),
                     np.log(np.array([1.0, 2.0, 4.0, 8.0], dtype=np.float32)))
    laws = oracle.token_laws([[0]], [[3, 3, 1]])[0]
    log2 = float(np.log(np.float32(2.0)))

    def law(logits):
        p = np.exp(np.asarray(logits) - max(logits))
        return p / p.sum()

    expected = [
        [0.0, log2, 2 * log2, 3 * log2],  # t = 0: the prompt's 0 -> log 1 = 0 / 2 = 0
        [0.0, log2, 2 * log2, 3 * log2 / 2 - 0.5],  # t = 1: 3 generated once
        [0.0, log2, 2 * log2, 3 * log2 / 2 - 1.0],  # t = 2: 3 twice (one repetition, two counts)
    ]
    for t, row in enumerate(expected):
        assert laws[t].ids is None and np.allclose(laws[t].probs, law(row), atol=1e-6), t  # a small vocabulary: full rows


def test_the_oracle_takes_the_penalties_and_still_refuses_what_it_does_not_restate(tmp_path):
    (tmp_path / "openvino_model.xml").write_text("")
    for penalty in ({"repetition_penalty": 1.3}, {"presence_penalty": 1.5}, {"frequency_penalty": -1.0}):
        assert OpenVINOOracle(tmp_path, SamplingSettings(temperature=0.7, top_p=0.8, **penalty)).sampling_settings.changed()
    for field, value in (("logit_bias", {5: 1.0}), ("bad_words", [[5]]), ("min_new_tokens", 2)):
        extra = {"stop_token_ids": [2]} if field == "min_new_tokens" else {}
        with pytest.raises(UnsupportedSetting, match=f"OpenVINO GenAI oracle does not take {field}="):
            OpenVINOOracle(tmp_path, SamplingSettings(temperature=1.0, **{field: value}, **extra))


def test_min_p_is_not_renormalised_before_top_p():
    # MinPFilter keeps p >= 0.2 * 0.5 (ids 0-2, mass 0.95) without renormalising; TopPFilter then sums the softmax's
    # own masses: 0, 0.5, 0.78 before ids 0, 1, 2, all <= 0.8, so id 2 stays.  Renormalised (0.526, 0.295, 0.179),
    # the sum before id 2 would be 0.821 > 0.8 and drop it: the rule the oracle had, which failed OpenVINO's control.
    from specdec.adapters.openvino.ir_oracle import openvino_law

    probs = np.array([[0.5, 0.28, 0.17, 0.05]])
    law = openvino_law(np.log(probs), SamplingSettings(temperature=1.0, min_p=0.2, top_p=0.8))
    np.testing.assert_allclose(law, [[0.5 / 0.95, 0.28 / 0.95, 0.17 / 0.95, 0.0]], rtol=1e-12)
    # each filter alone: min-p keeps ids 0-2, top-p 0.7 keeps ids 0-1 (0.5 <= 0.7 < 0.78): the shorter prefix wins
    both = openvino_law(np.log(probs), SamplingSettings(temperature=1.0, min_p=0.2, top_p=0.7))
    np.testing.assert_allclose(both, [[0.5 / 0.78, 0.28 / 0.78, 0.0, 0.0]], rtol=1e-12)
