"""The peer on the same prompts in the same run: transformers' speculative generate vs its own plain generate.

``prompt_lookup_num_tokens=K, max_matching_ngram_size=n`` for prompt lookup and ``assistant_model=``
(the same bfloat16 SmolLM2 our model draft uses, K tokens a step: constant schedule, no confidence
cut-off) for a model draft; the adaptive row uses transformers' own "heuristic" schedule.  Each
round runs plain ``generate`` (untimed by pytest-benchmark) then the speculative call (timed); both
produce exactly ``new_tokens`` tokens (``min_new_tokens`` = ``max_new_tokens``).  The ratio joins our
row of the same configuration and task kind as its "peer" column, and both sides' tokens per second as
its ``peer_tokens_per_second``: a ratio over a faster baseline is a smaller ratio.
"""

from __future__ import annotations

import pytest
import torch

from perf.harness import Config
from specdec.bench.clock import spread, timed


def hf_generate(workbench, prompt, config: Config, new_tokens: int, speculative: bool):
    ids = torch.tensor([list(prompt)], device=workbench.device)
    kwargs = {"do_sample": config.temperature > 0, "top_k": None, "top_p": None}
    if config.temperature > 0:
        kwargs["temperature"] = config.temperature
    if speculative and config.draft.startswith("lookup"):
        kwargs.update(prompt_lookup_num_tokens=config.k, max_matching_ngram_size=int(config.draft[-1]))
    elif speculative:
        assistant = workbench.draft_model
        assistant.generation_config.assistant_confidence_threshold = 0.0
        if config.k == "adaptive":
            assistant.generation_config.num_assistant_tokens_schedule = "heuristic"
            assistant.generation_config.num_assistant_tokens = 4
        else:
            assistant.generation_config.num_assistant_tokens_schedule = "constant"
            assistant.generation_config.num_assistant_tokens = config.k
        kwargs["assistant_model"] = assistant
    torch.manual_seed(0)  # transformers samples from the global generator
    out = workbench.target.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                    min_new_tokens=new_tokens, **kwargs)
    return out[0, ids.shape[1]:].tolist()


def test_peer_speculative_vs_generate(benchmark, workbench, plan, config, kind, record_peer):
    prompts = workbench.prompts(kind, plan.prompts)
    ratios, pending, per_second = [], {}, {"speculative": [], "autoregressive": []}
    generated = len(prompts) * plan.new_tokens

    def plain():
        pending["seconds"], pending["tokens"] = timed(
            lambda: [hf_generate(workbench, p, config, plan.new_tokens, False) for p in prompts], plan.device)

    def speculative():
        seconds, tokens = timed(lambda: [hf_generate(workbench, p, config, plan.new_tokens, True) for p in prompts], plan.device)
        ratios.append(pending["seconds"] / seconds)
        per_second["speculative"].append(generated / seconds)
        per_second["autoregressive"].append(generated / pending["seconds"])
        pending["speculative_tokens"] = tokens

    with torch.random.fork_rng(devices=[]):
        benchmark.pedantic(speculative, setup=plain, rounds=plan.rounds, iterations=1, warmup_rounds=0)
    assert all(len(t) == plan.new_tokens for t in pending["speculative_tokens"] + pending["tokens"])
    if config.temperature == 0 and config.draft.startswith("lookup"):
        assert pending["speculative_tokens"] == pending["tokens"], "transformers' greedy prompt lookup changed the text"
    speedup = spread(ratios)
    tokens_per_second = {side: spread(values) for side, values in per_second.items()}
    benchmark.extra_info.update(peer="transformers", configuration=config.name, kind=kind, speedup=speedup, ratios_list=ratios,
                                tokens_per_second=tokens_per_second)
    benchmark.extra_info["ratios"] = {"speedup": {"values": ratios, "higher_is_better": True}}
    if not benchmark.disabled:
        record_peer(config.name, kind, speedup, tokens_per_second)
