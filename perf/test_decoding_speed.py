"""Decoding speed on SmolLM2-135M-Instruct, CPU, greedy, same prompt, one run (issue 3).

Every ratio is measured side by side: the calls are interleaved round by round
and the median per call is compared, so machine load hits all of them alike.

1. Our loop with K = 0 (the autoregressive baseline) vs a bare loop of model
   forwards with a ``DynamicCache`` and argmax: the loop's overhead (goal: within 10%).
2. Prompt-lookup decoding on a copy-heavy task (repeat a passage with one edit):
   our n-gram draft's speedup over our K = 0 loop, next to transformers'
   ``prompt_lookup_num_tokens`` speedup over its own ``generate`` (goal: ours at
   least as high).

Marked slow (about a minute): ``make bench`` runs it; numbers go to extra_info.
"""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from fixtures.models import COPY_INSTRUCTION, COPY_PASSAGE, smollm2, smollm2_chat_prompt
from specdec.decoding import NgramDraft
from specdec.decoding import generate
from specdec.warpers import SamplingConfig

NEW_TOKENS = 64
LOOKUP_K = 10  # transformers' default prompt_lookup_num_tokens
NGRAM = 3
GREEDY = SamplingConfig(temperature=0)


def interleaved(calls: dict, rounds: int = 3) -> dict[str, float]:
    """Median wall time of each call, the calls interleaved round by round (one warm-up round first)."""
    times = {name: [] for name in calls}
    for round_ in range(rounds + 1):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            if round_:
                times[name].append(time.perf_counter() - started)
    return {name: statistics.median(ts) for name, ts in times.items()}


@torch.no_grad()
def bare_greedy(model, prompt: list[int], new_tokens: int) -> list[int]:
    """The floor: model forwards with a DynamicCache and argmax, nothing else."""
    from transformers import DynamicCache

    out = model(input_ids=torch.tensor([prompt]), past_key_values=DynamicCache(config=model.config), use_cache=True)
    tokens = []
    for _ in range(new_tokens):
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(int(token))
        if len(tokens) == new_tokens:
            break
        out = model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
    return tokens


@pytest.fixture(scope="module")
def setup():
    torch.set_num_threads(2)
    model, tokenizer = smollm2()
    prompt = smollm2_chat_prompt(COPY_INSTRUCTION + COPY_PASSAGE)
    return model, tokenizer, prompt


def ours(model, prompt, draft, k):
    return generate(model, draft, [prompt], max_new_tokens=NEW_TOKENS, num_draft_tokens=k, sampling=GREEDY, seed=0)


def theirs(model, prompt, **extra):
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False, **extra)
    return out[0, len(prompt):].tolist()


@pytest.mark.slow
def test_autoregressive_loop_overhead(benchmark, setup):
    model, _, prompt = setup
    expected = bare_greedy(model, prompt, NEW_TOKENS)
    assert ours(model, prompt, None, 0).tokens[0] == expected  # same work: same tokens
    medians = interleaved({"bare": lambda: bare_greedy(model, prompt, NEW_TOKENS), "ours_k0": lambda: ours(model, prompt, None, 0)})
    overhead = medians["ours_k0"] / medians["bare"] - 1
    benchmark.extra_info.update({f"median_s[{k}]": v for k, v in medians.items()})
    benchmark.extra_info["overhead_vs_bare_loop"] = overhead
    print(f"\nK=0 loop {medians['ours_k0']:.3f} s vs bare forwards {medians['bare']:.3f} s: overhead {overhead:+.1%}")
    benchmark.pedantic(lambda: ours(model, prompt, None, 0), rounds=1, iterations=1)


@pytest.mark.slow
def test_prompt_lookup_speedup_vs_transformers(benchmark, setup):
    model, tokenizer, prompt = setup
    spec = ours(model, prompt, NgramDraft(NGRAM), LOOKUP_K)
    assert spec.tokens[0] == ours(model, prompt, None, 0).tokens[0]  # greedy: identical text
    medians = interleaved(
        {
            "ours_k0": lambda: ours(model, prompt, None, 0),
            "ours_lookup": lambda: ours(model, prompt, NgramDraft(NGRAM), LOOKUP_K),
            "hf_generate": lambda: theirs(model, prompt),
            "hf_lookup": lambda: theirs(model, prompt, prompt_lookup_num_tokens=LOOKUP_K, max_matching_ngram_size=NGRAM),
        }
    )
    ours_speedup = medians["ours_k0"] / medians["ours_lookup"]
    hf_speedup = medians["hf_generate"] / medians["hf_lookup"]
    benchmark.extra_info.update({f"median_s[{k}]": v for k, v in medians.items()})
    benchmark.extra_info.update(
        ours_speedup=ours_speedup, hf_speedup=hf_speedup, tokens_per_step=spec.mean_tokens_per_step(), acceptance=spec.acceptance_rate()
    )
    print(
        f"\nprompt lookup K={LOOKUP_K}, n-gram {NGRAM}: ours {ours_speedup:.2f}x over our K=0 "
        f"({spec.mean_tokens_per_step():.2f} tokens/step, acceptance {spec.acceptance_rate():.2f}); "
        f"transformers {hf_speedup:.2f}x over its generate; "
        f"times: " + ", ".join(f"{k} {v:.3f} s" for k, v in medians.items())
    )
    print("text:", tokenizer.decode(spec.tokens[0])[:120].replace("\n", " "))
    benchmark.pedantic(lambda: ours(model, prompt, NgramDraft(NGRAM), LOOKUP_K), rounds=1, iterations=1)
