"""One verification step and the warpers vs V and B, beside the memory floor (issue 12).

The floor is one copy of the step's largest input (``target_probs.clone()``, or the logits
for the warpers): every implementation must read it at least once.  Each round times the
floor (pytest-benchmark's untimed setup, timed by us) and then the implementation the test
names (timed by pytest-benchmark), so extra_info holds paired per-round ratios to the floor.
K = 8; V from 1k to 256k; B in {1, 16}; float32; 3 to 15 rounds (about a second a test).  The fused Triton kernel runs on CUDA only
(on CPU Triton's interpreter would time Python): its rows are marked gpu.
"""

from __future__ import annotations

import pytest
import torch

import specdec as sd
from specdec.bench.clock import spread, timed
from specdec.warpers import SamplingConfig

K = 8
SHAPES = [(b, v) for v in (1024, 32768, 262144) for b in (1, 16)]
WARP = SamplingConfig(temperature=0.7, top_k=50, top_p=0.9)


def _fused(tokens, draft, target, g):
    from specdec.verify.fused import verify_tokens_fused

    return verify_tokens_fused(tokens, draft, target, g, validate=False)


IMPLEMENTATIONS = {
    "verify_tokens": lambda i: sd.verify_tokens(i["tokens"], i["draft"], i["target"], i["g"], validate=False),
    "verify_block": lambda i: sd.verify_block(i["tokens"], i["draft"], i["target"], i["g"], validate=False),
    "warped_probs": lambda i: sd.warped_probs(i["logits"], WARP),
    "fused": lambda i: _fused(i["tokens"], i["draft"], i["target"], i["g"]),
}
PARAMS = [
    pytest.param(name, device, b, v, id=f"{name}-{device}-B{b}-V{v}",
                 marks=[pytest.mark.gpu] if device == "cuda" else [])
    for name in IMPLEMENTATIONS
    for device in ("cpu", "cuda")
    if not (name == "fused" and device == "cpu")
    for b, v in SHAPES
]


def _inputs(device: str, batch: int, vocab: int) -> dict:
    g = torch.Generator(device=device).manual_seed(0)
    logits = 3 * torch.randn(batch, K + 1, vocab, generator=g, device=device)
    target = logits.softmax(-1)
    draft = (3 * torch.randn(batch, K, vocab, generator=g, device=device)).softmax(-1)
    tokens = sd.sample_categorical(draft, g)
    return {"tokens": tokens, "draft": draft, "target": target, "logits": logits, "g": g}


@pytest.mark.parametrize("name, device, batch, vocab", PARAMS)
def test_step_vs_memory_floor(benchmark, name, device, batch, vocab):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    inputs = _inputs(device, batch, vocab)
    call = IMPLEMENTATIONS[name]
    floor_input = inputs["logits"] if name == "warped_probs" else inputs["target"]
    dev = torch.device(device)
    warm_up, _ = timed(lambda: call(inputs), dev)  # and the Triton compile on CUDA
    floors, ratios = [], []

    def floor():
        floors.append(timed(floor_input.clone, dev)[0])

    def implementation():
        seconds, result = timed(lambda: call(inputs), dev)
        ratios.append(seconds / floors[-1])
        return result

    rounds = 1 if benchmark.disabled else max(3, min(15, int(1.0 / max(warm_up, 1e-6))))  # about a second a test
    result = benchmark.pedantic(implementation, setup=floor, rounds=rounds, iterations=1)
    if name == "warped_probs":
        assert torch.allclose(result.sum(-1), torch.ones((), dtype=result.dtype, device=dev), atol=1e-4)
    else:
        assert int(result.num_accepted.min()) >= 0 and int(result.num_accepted.max()) <= K
    benchmark.extra_info.update(batch=batch, vocab=vocab, num_draft_tokens=K, floor_seconds=spread(floors),
                                ratio_to_floor=spread(ratios))
    benchmark.extra_info["ratios"] = {"ratio_to_floor": {"values": ratios, "higher_is_better": False}}
