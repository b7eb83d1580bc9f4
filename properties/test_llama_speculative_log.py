"""The ids of a ``llama-speculative -lv 5`` run, read from its log (:mod:`specdec.adapters.llama_cpp.speculative_log`),
on a log recorded from the real binary (llama.cpp 0c1e570, SmolLM2-135M Q4_1 as target and draft, T = 1, K = 4; its
lines trimmed to those the parser reads and some around them) and on the greedy path's lines, a rejection and a
piece holding a newline, written as the example's ``LOG_DBG`` calls print them."""

import pytest

from specdec.adapters.llama_cpp.speculative_log import parse_transcript
from specdec.errors import ContractError

RECORDED = """\
0.01.562.406 D vocab_type tgt: 1
0.02.137.236 D all drafted tokens were rejected, sampling from residual distribution
0.02.137.826 D the sampled target token (2767, ' dog') did not match, or we ran out of drafted tokens
0.02.137.826 D keeping sequence 0, n_past_tgt = 18, n_past_dft = 18
0.02.437.051 D draft 0: [ ' dog':2767, ' dog':2767, ' dog':2767, ' dog':2767 ]
0.02.452.762 D verifying sequence #0 at pos #0 from 1 active sequence(s)
0.02.452.790 D r = 0.663836, p_dft = 0.475672, p_tgt = 0.475672
0.02.452.799 D draft token 0 of sequence 0 (2767, ' dog') accepted
0.02.460.494 D draft token 1 of sequence 0 (2767, ' dog') accepted
0.02.468.219 D draft token 2 of sequence 0 (2767, ' dog') accepted
0.02.476.670 D draft token 3 of sequence 0 (2767, ' dog') accepted
0.02.484.420 D all drafted tokens were rejected, sampling from residual distribution
0.02.485.166 D the sampled target token (2767, ' dog') did not match, or we ran out of drafted tokens
0.02.784.068 D draft token 0 of sequence 0 (2767, ' dog') accepted
0.02.793.303 D draft token 1 of sequence 0 (2767, ' dog') accepted
0.02.802.188 D draft token 2 of sequence 0 (2767, ' dog') accepted
0.02.809.943 D draft token 3 of sequence 0 (2767, ' dog') accepted
0.02.817.657 D all drafted tokens were rejected, sampling from residual distribution
0.02.817.935 D the sampled target token (2767, ' dog') did not match, or we ran out of drafted tokens
0.02.837.249 I encoded   18 tokens in    0.562 seconds, speed:   32.015 t/s
0.02.837.295 I n_draft   = 4
0.02.837.307 I n_predict = 11
0.02.837.320 I n_drafted = 8
0.02.837.332 I n_accept  = 8
0.02.837.345 I accept    = 100.000%
"""

WRITTEN = """\
0.00.000.001 D the sampled target token (198, '
') did not match, or we ran out of drafted tokens
0.00.000.002 D draft token 0 of sequence 1 (2644, ' cat') rejected
0.00.000.003 D draft token 0 of sequence 0 (198, '
') accepted
0.00.000.004 D the sampled target token (2767, ' dog') did not match, or we ran out of drafted tokens
0.00.000.005 D the sampled target token matches the 0th drafted token of sequence 0 (2644, ' cat') - accepted
0.00.000.006 D the sampled target token matches the 1th drafted token of sequence 0 (2767, ' dog') - accepted
0.00.000.007 D the sampled target token (9786, 'cat') did not match, or we ran out of drafted tokens
0.00.000.008 I n_predict = 6
0.00.000.009 I n_drafted = 6
0.00.000.010 I n_accept  = 3
"""


def test_a_recorded_log_gives_every_emitted_id_in_order_and_the_counters():
    t = parse_transcript(RECORDED)
    assert t.tokens == (2767,) * 11
    assert t.rounds == (1, 5, 5) and t.rejected == 0
    assert (t.n_drafted, t.n_accept, t.n_predict) == (8, 8, 11) and t.accepted == 8


def test_newlines_in_pieces_rejections_and_the_greedy_lines():
    t = parse_transcript(WRITTEN)
    assert t.tokens == (198, 198, 2767, 2644, 2767, 9786)
    assert t.rounds == (1, 2, 3) and t.rejected == 1 and t.accepted == 3


@pytest.mark.parametrize("log, match", [
    ("", "not a llama-speculative"),
    (RECORDED.split("0.02.837.249")[0], "summary lines missing"),
    (RECORDED.replace("n_accept  = 8", "n_accept  = 7"), "n_accept = 7"),
    (RECORDED.replace("n_predict = 11", "n_predict = 12"), "n_predict = 12"),
    (RECORDED.replace("0.02.817.935 D the sampled target token (2767, ' dog') did not match, or we ran out of drafted tokens\n", ""),
     "accepted tokens after its last round"),
])
def test_a_log_of_another_shape_is_refused_never_guessed(log, match):
    with pytest.raises(ContractError, match=match):
        parse_transcript(log)


def test_the_log_must_be_text():
    with pytest.raises(TypeError, match="log must be"):
        parse_transcript(b"bytes")
