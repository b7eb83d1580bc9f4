"""Throughput of the conformance engine on our own verifier: verified blocks per second at V = 16,
K = 4, and one default ``check_verifier`` campaign at TV 0.01 (what pytest-benchmark times here is
exactly that work; the samples per second go to extra_info)."""

import statistics

import pytest
import torch

import specdec as sd
from specdec.bench.clock import timed
from specdec.conformance import check_verifier

ROWS, K, V = 200_000, 4, 16


@pytest.fixture(scope="module")
def blocks():
    g = torch.Generator().manual_seed(0)
    target = (2 * torch.randn(ROWS, K + 1, V, generator=g)).softmax(-1)
    draft = (2 * torch.randn(ROWS, K, V, generator=g)).softmax(-1)
    tokens = sd.sample_categorical(draft, g)
    return tokens, draft, target, g


@pytest.mark.parametrize("validate", [True, False], ids=["validated", "unvalidated"])
def test_verified_blocks_per_second(benchmark, blocks, validate):
    tokens, draft, target, g = blocks
    sd.verify_tokens(tokens, draft, target, g, validate=validate)  # warm-up
    seconds = []

    def step():
        elapsed, result = timed(lambda: sd.verify_tokens(tokens, draft, target, g, validate=validate), target.device)
        seconds.append(elapsed)
        return result

    result = benchmark.pedantic(step, rounds=1 if benchmark.disabled else 5, iterations=1)
    assert result.tokens.shape == (ROWS, K + 1)
    rate = ROWS / statistics.median(seconds)
    benchmark.extra_info["blocks_per_second"] = rate
    print(f"\nverify_tokens V={V}, K={K}, float32, {ROWS:,} rows, validate={validate}: {rate / 1e6:.2f} M blocks/s")


def test_default_campaign(benchmark):
    report = benchmark.pedantic(check_verifier, args=(sd.verify_tokens,), kwargs={"tv": 0.01, "device": "cpu"}, rounds=1, iterations=1)
    assert report.verdict == "PASS", report
    benchmark.extra_info.update(samples=report.samples, samples_per_second=report.samples / report.seconds, verdict=report.verdict)
    print(f"\ndefault campaign at TV 0.01: {report.seconds:.2f} s for {report.samples:,} samples "
          f"({report.samples / report.seconds / 1e6:.2f} M samples/s): {report.verdict}")
