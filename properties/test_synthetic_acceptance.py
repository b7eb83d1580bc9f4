"""The synthetic acceptance (issue 33, timing only): F22's i.i.d. acceptance exactly, the contract of a TokenVerifier,
refused by every conformance check, and the sweep's rows on a tiny model."""

import math

import pytest
import torch

import specdec as sd
from fixtures.models import tiny_pair
from specdec.bench.synthetic import RepeatDraft, SyntheticAcceptance, sweep
from specdec.decoding import SpeculativeDecoder
from specdec.laws import as_target_law
from specdec.verify.result import read_verification


def test_the_accepted_count_follows_f22s_iid_model_and_the_contract_holds():
    batch, k, vocab, rate = 20_000, 4, 6, 0.7
    target = torch.softmax(torch.randn(batch, k + 1, vocab, generator=torch.Generator().manual_seed(1)), -1)
    drafts = torch.randint(0, vocab, (batch, k), generator=torch.Generator().manual_seed(2))
    result = SyntheticAcceptance(rate)(drafts, None, target, torch.Generator().manual_seed(3))
    tokens, accepted = read_verification(result, batch, k)
    law = [rate ** a * (1 - rate) for a in range(k)] + [rate ** k]  # P(accepted = a): a kept, then one rejected
    counts = torch.bincount(accepted, minlength=k + 1).double() / batch
    assert torch.allclose(counts, torch.tensor(law, dtype=torch.float64), atol=5 * math.sqrt(0.25 / batch))
    rows = torch.arange(batch)
    assert all(torch.equal(tokens[b, : accepted[b]], drafts[b, : accepted[b]]) for b in range(200))
    assert int((tokens[rows, accepted] < vocab).all()) and sd.metrics.acceptance_rate(accepted, k) == pytest.approx(rate, abs=0.01)
    assert torch.equal(SyntheticAcceptance(1.0)(drafts, None, target, torch.Generator()).num_accepted, torch.full((batch,), k))
    assert int(SyntheticAcceptance(0.0)(drafts, None, target, torch.Generator()).num_accepted.sum()) == 0
    with pytest.raises(ValueError, match="rate"):
        SyntheticAcceptance(1.5)


def test_no_conformance_check_takes_it():
    target, _ = tiny_pair(0, 8)
    synthetic = SyntheticAcceptance(0.5)
    with pytest.raises(ValueError, match="timing-only"):
        sd.check_verifier(synthetic, tv=0.2)
    decoder = SpeculativeDecoder(target, RepeatDraft(), num_draft_tokens=2, verifier=synthetic)
    assert decoder.timing_only and not SpeculativeDecoder(target, RepeatDraft(), num_draft_tokens=2).timing_only
    with pytest.raises(ValueError, match="decoder .* is timing-only"):
        sd.check_decoder(decoder, target, [[1, 2]], length=2, tv=0.2)
    with pytest.raises(ValueError, match="subject .* is timing-only"):
        sd.check_ab(decoder, decoder, [[1, 2]], length=2, tv=0.2)
    with pytest.raises(ValueError, match="timing-only"):
        sd.check_tokens(decoder, sd.TargetLawOracle(as_target_law(target, sd.SamplingConfig())), [[1, 2]], length=2, tv=0.2)


def test_the_sweep_gives_a_row_per_point_with_its_prediction():
    target, _ = tiny_pair(0, 8)
    lines = []
    rows = sweep(target, {1: [[1, 2, 3]], 2: [[1, 2, 3], [4, 5]]}, rates=[0.0, 1.0], ks=[2], new_tokens=6, rounds=1, progress=lines.append)
    assert [(r.batch, r.configuration) for r in rows] == [(1, "synthetic-a0-K2"), (1, "synthetic-a1-K2"), (2, "synthetic-a0-K2"),
                                                         (2, "synthetic-a1-K2")]
    assert rows[0].acceptance == 0.0 and rows[1].acceptance == 1.0 and rows[1].tokens_per_step == pytest.approx(3.0, abs=0.5)
    assert all(r.predicted > 0 and r.prefill_share is not None for r in rows) and len(lines) == 4
