"""Throughput of the reference verifier inside the conformance engine (issue 4): verified
blocks per second at V = 16, K = 4 (goal: at least 10^6 on this CPU), and the wall time of
one default ``check_verifier`` report at TV 0.01, next to the time of drafting the same rows."""

import time

import pytest
import torch

import specdec as sd
from specdec.conformance import check_verifier

ROWS, K, V = 200_000, 4, 16


@pytest.fixture(scope="module")
def blocks():
    g = torch.Generator().manual_seed(0)
    target = (2 * torch.randn(ROWS, K + 1, V, generator=g)).softmax(-1)
    draft = (2 * torch.randn(ROWS, K, V, generator=g)).softmax(-1)
    tokens = sd.sample_categorical(draft, g)
    return tokens, draft, target, g


def test_verified_blocks_per_second(benchmark, blocks):
    tokens, draft, target, g = blocks
    sd.verify_tokens(tokens, draft, target, g)  # warm-up
    rates = {}
    for validate in (True, False):
        started = time.perf_counter()
        for _ in range(3):
            sd.verify_tokens(tokens, draft, target, g, validate=validate)
        rates[validate] = 3 * ROWS / (time.perf_counter() - started)
    started = time.perf_counter()
    sd.sample_categorical(draft, g)
    drafting = ROWS / (time.perf_counter() - started)
    benchmark.extra_info.update(blocks_per_s_validated=rates[True], blocks_per_s_unvalidated=rates[False], draft_rows_per_s=drafting)
    print(
        f"\nV={V}, K={K}, float32, {ROWS:,} rows: {rates[True] / 1e6:.2f} M blocks/s validated, "
        f"{rates[False] / 1e6:.2f} M blocks/s without validation; drafting the same rows {drafting / 1e6:.2f} M rows/s"
    )
    benchmark.pedantic(sd.verify_tokens, args=(tokens, draft, target, g), rounds=3, iterations=1)


def test_default_report_time(benchmark):
    started = time.perf_counter()
    report = check_verifier(sd.verify_tokens, tv=0.01)
    elapsed = time.perf_counter() - started
    samples = sum(c.n for c in report.checks if c.detectable_tv is not None)
    benchmark.extra_info.update(report_seconds=elapsed, samples=samples)
    print(f"\ndefault verifier report at TV 0.01: {elapsed:.2f} s for {samples:,} samples ({report.verdict})")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
