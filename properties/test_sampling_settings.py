"""SamplingSettings (issue 30): one record of a request's sampling, validated, and mapped per engine with
refusals by name."""

import json
import re

import numpy as np
import pytest

import specdec as sd
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.fields import completion_fields
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported


def test_every_field_defaults_to_off_and_only_the_temperature_is_stated():
    assert SamplingSettings().changed() == {"temperature": 1.0}
    assert SamplingSettings().label == "T=1"
    assert SamplingSettings(top_k=0, top_p=1.0, min_p=0.0).changed() == {"temperature": 1.0}


def test_the_record_normalises_and_labels_what_is_asked():
    s = SamplingSettings(temperature=0.7, top_p=0.8, repetition_penalty=1.3, logit_bias={5: -100, 2: 1.5},
                         bad_words=[[3, 4]], stop_token_ids=[9], min_new_tokens=2)
    assert s.logit_bias == ((2, 1.5), (5, -100.0)) and s.bad_words == ((3, 4),) and s.stop_token_ids == (9,)
    assert s.label == ("T=0.7 top_p=0.8 repetition_penalty=1.3 logit_bias={2: +1.5, 5: -100} min_new_tokens=2 bad_words=3 4 "
                       "stop_token_ids=9")
    assert s.sampling == sd.SamplingConfig(temperature=0.7, top_p=0.8)
    assert SamplingSettings.from_sampling(sd.SamplingConfig(temperature=0.5, top_k=3), seeded=False).changed() == \
        {"temperature": 0.5, "top_k": 3, "seeded": False}
    hash(s)  # frozen and hashable: a cache key for servers and cells


@pytest.mark.parametrize("kwargs, error, words", [
    ({"temperature": -1}, ValueError, "temperature"),
    ({"temperature": float("nan")}, ValueError, "temperature"),
    ({"top_p": 0}, ValueError, "top_p"),
    ({"repetition_penalty": 0}, ValueError, "repetition_penalty"),
    ({"presence_penalty": 3}, ValueError, "presence_penalty"),
    ({"frequency_penalty": True}, TypeError, "frequency_penalty"),
    ({"logit_bias": {1: 200}}, ValueError, "logit_bias[1]"),
    ({"logit_bias": {-1: 1}}, ValueError, "logit_bias token id"),
    ({"logit_bias": "1:2"}, TypeError, "logit_bias"),
    ({"bad_words": [[]]}, ValueError, "bad_words"),
    ({"bad_words": "dog"}, TypeError, "bad_words"),
    ({"allowed_token_ids": []}, ValueError, "allowed_token_ids"),
    ({"allowed_token_ids": [1.5]}, TypeError, "allowed_token_ids[0]"),
    ({"min_new_tokens": 2}, ValueError, "stop_token_ids"),
    ({"samples_per_request": 0}, ValueError, "samples_per_request"),
    ({"seeded": 1}, TypeError, "seeded"),
    ({"logits_processor": 3}, TypeError, "logits_processor"),
])
def test_bad_settings_are_refused_by_name(kwargs, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        SamplingSettings(**kwargs)


def test_an_adapter_refuses_what_its_engine_cannot_take_by_name():
    def ban(history, logits):
        return logits

    with pytest.raises(UnsupportedSetting, match=r"an OpenAI-compatible server .* does not take logits_processor=.*qualified name"):
        completion_fields(SamplingSettings(logits_processor=ban))
    with pytest.raises(UnsupportedSetting, match="bad_words.*decode="):
        completion_fields(SamplingSettings(bad_words=[[3]]))
    refuse_unsupported(SamplingSettings(temperature=0.5), "engine", {"min_p": "no"})  # off fields are never refused
    with pytest.raises(UnsupportedSetting) as caught:
        refuse_unsupported(SamplingSettings(min_p=0.1), "engine X", {"min_p": "it has none"})
    assert (caught.value.engine, caught.value.field, caught.value.value) == ("engine X", "min_p", 0.1)
    assert isinstance(caught.value, ValueError)


def test_the_completion_fields_carry_every_setting():
    s = SamplingSettings(temperature=0.7, top_k=20, top_p=0.8, min_p=0.05, repetition_penalty=1.3, presence_penalty=0.5,
                         frequency_penalty=-0.5, logit_bias={7: 2.0}, min_new_tokens=1, bad_words=[[3, 4]],
                         allowed_token_ids=[1, 2, 3], stop_token_ids=[2])
    body = completion_fields(s, decode=lambda ids: "<" + ",".join(map(str, ids)) + ">")
    assert body == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.3, "presence_penalty": 0.5,
                    "frequency_penalty": -0.5, "logit_bias": {"7": 2.0}, "min_tokens": 1, "stop_token_ids": [2],
                    "allowed_token_ids": [1, 2, 3], "bad_words": ["<3,4>"]}
    json.dumps(body)


def test_vllms_in_process_params_carry_the_same_fields_with_int_bias_keys_and_refuse_what_v1_cannot_take():
    from specdec.adapters.vllm.offline import VLLMDecoder
    from specdec.adapters.vllm.sampling_params import sampling_params_kwargs

    s = SamplingSettings(temperature=0.7, top_p=0.8, logit_bias={7: 2.0}, bad_words=[[3, 4]], stop_token_ids=[2], min_new_tokens=1)
    kwargs = sampling_params_kwargs(s, decode=lambda ids: "<" + ",".join(map(str, ids)) + ">")
    assert kwargs["logit_bias"] == {7: 2.0} and kwargs["bad_words"] == ["<3,4>"] and kwargs["min_tokens"] == 1
    with pytest.raises(UnsupportedSetting, match=r"vLLM 0.32 \(in process\) does not take logits_processor=.*V1 engine"):
        sampling_params_kwargs(SamplingSettings(logits_processor=lambda history, logits: logits))
    with pytest.raises(UnsupportedSetting, match="samples_per_request=2.*one request"):
        sampling_params_kwargs(SamplingSettings(samples_per_request=2))
    sampling_params_kwargs(SamplingSettings(samples_per_request=1))  # what it does anyway
    with pytest.raises(UnsupportedSetting, match="logits_processor"):  # refused when the decoder is made, before vLLM is imported
        VLLMDecoder("model", settings=SamplingSettings(logits_processor=lambda history, logits: logits))
    decoder = VLLMDecoder("model", settings=SamplingSettings(temperature=0.5, presence_penalty=1.5))
    assert "presence_penalty=1.5" in decoder.settings and decoder.sampling == sd.SamplingConfig(temperature=0.5)


def test_the_client_takes_the_record_its_n_and_its_seeds():
    client = OpenAICompletionsDecoder("http://127.0.0.1:1", "m", settings=SamplingSettings(presence_penalty=1.0, samples_per_request=2,
                                                                                          seeded=False))
    plan = client.plan([[1], [1], [1]], 0)
    assert [len(r.rows) for r in plan] == [2, 1]
    body = client.payload(plan[0], 3)
    assert "seed" not in body and body["presence_penalty"] == 1.0 and body["n"] == 2
    assert "presence_penalty=1" in client.settings
    with pytest.raises(ValueError, match="not both"):
        OpenAICompletionsDecoder("http://127.0.0.1:1", "m", sampling=sd.SamplingConfig(), settings=SamplingSettings())
    with pytest.raises(TypeError, match="settings must be a specdec.SamplingSettings"):
        OpenAICompletionsDecoder("http://127.0.0.1:1", "m", settings=sd.SamplingConfig())


def test_transformers_takes_the_record_and_stops_at_its_stop_tokens_and_its_eos():
    from fixtures.models import tiny_pair
    from specdec.adapters.hf import HFGenerateDecoder
    from specdec.adapters.hf_settings import generate_kwargs

    target, _ = tiny_pair(0, vocab_size=8)
    decoder = HFGenerateDecoder(target, eos_token_id=7, settings=SamplingSettings(temperature=0.7, stop_token_ids=[5], min_new_tokens=1))
    rows = decoder([[5, 7, 7, 5]] * 8, 4, 0)
    for row in rows:
        stop = next((i for i, t in enumerate(row) if t in (5, 7)), None)
        assert stop is None or (stop >= 1 and len(row) == stop + 1), rows  # never a stop token first, nothing after one
    kwargs = generate_kwargs(SamplingSettings(temperature=0.5, logit_bias={3: 2.0}, bad_words=[[1, 2]], allowed_token_ids=[1, 2],
                                              repetition_penalty=1.2))
    assert kwargs["sequence_bias"] == {(3,): 2.0} and kwargs["bad_words_ids"] == [[1, 2]] and kwargs["repetition_penalty"] == 1.2
    assert kwargs["prefix_allowed_tokens_fn"](0, None) == [1, 2] and kwargs["temperature"] == 0.5
    with pytest.raises(ValueError, match="not both"):
        HFGenerateDecoder(target, sd.SamplingConfig(temperature=0.5), settings=SamplingSettings())
    with pytest.raises(UnsupportedSetting, match="transformers generate does not take presence_penalty"):
        generate_kwargs(SamplingSettings(presence_penalty=1.0))


@pytest.mark.parametrize("kwargs, words", [
    ({"allowed_token_ids": [5], "bad_words": [[5]]}, r"allowed_token_ids=\[5\] are all one-token bad_words"),
    ({"allowed_token_ids": [5, 6], "bad_words": [[5], [6], [5, 6]]}, "no token is left to draw"),
    ({"allowed_token_ids": [5, 6], "bad_words": [[5]], "stop_token_ids": [6], "min_new_tokens": 1},
     "all stop_token_ids or one-token bad_words: no token is left to draw before min_new_tokens=1"),
])
def test_settings_that_forbid_every_token_are_refused(kwargs, words):
    """The transformers adapter emitted the forbidden token 5 for allowed_token_ids=[5], bad_words=[[5]]."""
    with pytest.raises(ValueError, match=words):
        SamplingSettings(**kwargs)


def test_settings_that_leave_a_token_are_kept():
    SamplingSettings(allowed_token_ids=[5, 6], bad_words=[[5], [6, 5]])  # 6 is left (5 only after 6)
    SamplingSettings(allowed_token_ids=[5, 6], stop_token_ids=[6], min_new_tokens=1)  # 5 before, then 6 may stop
    SamplingSettings(allowed_token_ids=[5], stop_token_ids=[5])  # a stop token as the first token: allowed


@pytest.mark.parametrize("kwargs, words", [
    ({"allowed_token_ids": [1, 10**30]}, "allowed_token_ids[1] must be an integer <= 2147483647, got 10000"),
    ({"stop_token_ids": [2**31]}, "stop_token_ids[0] must be an integer <= 2147483647"),
    ({"bad_words": [[1, 2**63]]}, "bad_words[0][1] must be an integer <= 2147483647"),
    ({"logit_bias": {10**30: 1.0}}, "logit_bias token id must be an integer <= 2147483647"),
    ({"top_k": 10**30}, "top_k must be an integer <= 2147483647"),
    ({"logit_bias": [(5, 1.0), (5, 2.0)]}, "logit_bias names token id 5 twice (biases 1.0 and 2.0)"),
])
def test_token_ids_beyond_int32_and_twice_biased_ids_are_refused_by_name(kwargs, words):
    """10**30 reached llama.cpp's mapping as an OverflowError; a second bias of one id silently replaced the first."""
    with pytest.raises(ValueError, match=re.escape(words)):
        SamplingSettings(**kwargs)
    assert SamplingSettings(allowed_token_ids=[2**31 - 1]).allowed_token_ids == (2**31 - 1,)


def test_adapters_given_a_vocabulary_refuse_ids_outside_it_by_field():
    """An allowed id outside the vocabulary was a bare IndexError (transformers, llama.cpp's stages)."""
    from specdec.adapters.hf_settings import generate_kwargs
    from specdec.adapters.llama_cpp.sampling_map import processors

    for settings, name in [(SamplingSettings(allowed_token_ids=[1, 8]), "allowed_token_ids[1]=8"),
                           (SamplingSettings(logit_bias={9: 1.0}), "logit_bias token id=9"),
                           (SamplingSettings(bad_words=[[1, 8]]), "bad_words[0][1]=8"),
                           (SamplingSettings(stop_token_ids=[8]), "stop_token_ids[0]=8")]:
        with pytest.raises(ValueError, match=re.escape(name) + r" is not a token id of transformers generate: .* 8 ids \(0\.\.7\)"):
            generate_kwargs(settings, vocab_size=8)
        with pytest.raises(ValueError, match=re.escape(name) + r" is not a token id of llama-cpp-python"):
            processors(settings, 1, vocab_size=8)
        generate_kwargs(settings, vocab_size=10)
        stages = processors(settings, 1)  # no vocabulary yet: the first stage refuses by field on the first row
        if stages is not None:  # stop tokens alone need no stage (the decoder stops the row)
            with pytest.raises(ValueError, match=re.escape(name)):
                for stage in stages:
                    stage(np.array([1]), np.zeros(8, dtype=np.float32))


def scalar_processor(history, logits):
    return 0.0


def test_a_user_processor_that_returns_no_row_is_an_error_naming_it():
    """A processor returning a scalar made the law uniform without a word (broadcast into the row)."""
    import torch

    from specdec.adapters.hf_settings import generate_kwargs
    from specdec.adapters.llama_cpp.sampling_map import processors
    from specdec.errors import ContractError

    settings = SamplingSettings(logits_processor=scalar_processor)
    user = generate_kwargs(settings)["logits_processor"][0]
    with pytest.raises(ContractError, match=r"logits_processor scalar_processor broke its Protocol .* a history of 3 tokens and "
                                            r"logits of shape \(8,\), it returned float 0\.0"):
        user(torch.tensor([[1, 2, 3]]), torch.zeros(1, 8))
    short = SamplingSettings(logits_processor=lambda history, logits: logits[:-1])
    with pytest.raises(ContractError, match=r"returned Tensor of shape \(7,\)"):
        generate_kwargs(short)["logits_processor"][0](torch.tensor([[1]]), torch.zeros(1, 8))
    stages = processors(settings, 1)
    with pytest.raises(ContractError, match=r"scalar_processor .* it returned float 0\.0"):
        for stage in stages:
            stage(np.array([1, 2]), np.zeros(8, dtype=np.float32))
    kept = SamplingSettings(logits_processor=lambda history, logits: logits + 1)
    assert generate_kwargs(kept)["logits_processor"][0](torch.tensor([[1]]), torch.zeros(1, 3)).tolist() == [[1.0, 1.0, 1.0]]


def test_transformers_raises_a_processors_broken_protocol_from_generate():
    from fixtures.models import tiny_pair
    from specdec.adapters.hf import HFGenerateDecoder
    from specdec.errors import ContractError

    target, _ = tiny_pair(0, vocab_size=8)
    decoder = HFGenerateDecoder(target, settings=SamplingSettings(temperature=0.7, logits_processor=scalar_processor))
    with pytest.raises(ContractError, match="scalar_processor"):
        decoder([[1, 2]], 2, 0)


def test_the_transformers_decoder_refuses_an_id_beyond_its_models_vocabulary_by_field():
    """An allowed id beyond the tiny model's 8 logits was transformers' bare IndexError inside generate."""
    from fixtures.models import tiny_pair
    from specdec.adapters.hf import HFGenerateDecoder

    target, _ = tiny_pair(0, vocab_size=8)
    decoder = HFGenerateDecoder(target, settings=SamplingSettings(allowed_token_ids=[1, 9]))
    with pytest.raises(ValueError, match=r"allowed_token_ids\[1\]=9"):
        decoder([[1, 2]], 2, 0)


def test_llama_cpps_stages_keep_an_exception_its_ctypes_callback_would_drop():
    """llama-cpp-python calls processors from a ctypes callback, which prints an exception and samples on from the
    unchanged logits: the Guarded processor keeps it, passes the logits through, and the decoder raises it."""
    import numpy as np

    from specdec.adapters.llama_cpp.sampling_map import Guarded, processors, raise_processor_failure
    from specdec.errors import ContractError

    guarded = Guarded(processors(SamplingSettings(logits_processor=scalar_processor), 1))
    logits = np.zeros(8, dtype=np.float32)
    assert guarded(np.array([1, 2]), logits) is logits and isinstance(guarded.error, ContractError)
    with pytest.raises(ContractError, match="scalar_processor"):
        raise_processor_failure({"logits_processor": [guarded]})
    fine = Guarded(processors(SamplingSettings(logit_bias={3: 1.0}), 1))
    assert fine(np.array([1]), np.zeros(8, dtype=np.float32))[3] == 1.0 and fine.error is None
    raise_processor_failure({"logits_processor": [fine]})
    raise_processor_failure({"logits_processor": None})
