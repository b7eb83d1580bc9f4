"""ONNX Runtime GenAI (onnxruntime-genai 0.18.0) per token and A/B at T > 0: every method's tokens against the engine's own
law, after the control (issue 39; slow: ``-m "peers and slow"``).

Each cell is :func:`specdec.conformance.token_cells.run_token_cell`: the engine without speculation against
:class:`specdec.adapters.ortgenai.OrtGenAIOracle` (the engine's own logits, through its own sampler: exact up to
ONNX Runtime's float32 and the batch shapes, floor 1e-3), and only when that control PASSes the speculative engine
against the same oracle, with ``check_ab`` against the engine without speculation beside it.  The source says both
methods are lossless (:mod:`specdec.adapters.ortgenai.decoder`: F1 for the draft model, sample-match for n-gram), so
every cell should PASS:

* n-gram (n = 3, K = 4) at T = 1 and at T = 0.7 with top-p 0.8 (the engine's own tail-bound nucleus);
* the 4-layer draft (K = 4) at T = 1: about 6% of its drafts are kept, so most tokens come from the residual
  ``max(p - q, 0)`` draw - the branch a wrong rule would bend;
* the target as its own draft (K = 4) at T = 1: nearly every draft kept, the accept and bonus branches.

One prompt (the " cat"/" dog" prompt, every bigram repeats) and 4 tokens per answer, every one tested; TV 0.1 per token.
On this 2-core machine with other jobs: plain and n-gram decoding 50-150 ms a token, the 4-layer draft 300-450 ms,
the self draft more: minutes to tens of minutes per cell.
"""

import json
import time
from pathlib import Path

import pytest

from fixtures import ortgenai_subjects as subjects
from fixtures.vllm_subjects import PROMPT
from specdec import SamplingSettings
from specdec.adapters.ortgenai import OrtGenAIOracle
from specdec.conformance.token_cells import run_token_cell, token_table

pytestmark = [pytest.mark.peers, pytest.mark.slow]
REPORTS = Path(__file__).resolve().parent.parent / ".peers"
LENGTH = 4
TV = 0.1
AB_N = 400
T1 = SamplingSettings(temperature=1.0)
TOP_P = SamplingSettings(temperature=0.7, top_p=0.8)
CELLS = {
    "ngram T=1": ("ngram", T1, 100),
    "ngram T=0.7 top-p 0.8": ("ngram", TOP_P, 200),
    "draft_model T=1": ("draft_model", T1, 300),
    "self_draft T=1": ("self_draft", T1, 400),
}


@pytest.mark.parametrize("cell", list(CELLS))
def test_every_token_of_speculation_follows_the_engines_own_law(cell, specdec_budget):
    method, settings, seed = CELLS[cell]
    built = []

    def build(s):
        built.extend(subjects.build(method, s))
        return built[0], built[1]

    def oracle_of(s):
        return OrtGenAIOracle(subjects.model_dir(), settings=s)

    started = time.perf_counter()
    result = run_token_cell("onnxruntime-genai 0.18.0", method, cell, settings, build, oracle_of, prompts=[list(PROMPT)],
                            length=LENGTH, tv=TV, seed=seed, budget=specdec_budget, eos_token_id=subjects.EOS, rows_per_call=16,
                            ab_n=AB_N, keep=lambda kind, report: print(f"\n{report.format()}"))
    table = token_table([result])
    print(f"\n{table}\n({time.perf_counter() - started:.0f} s)")
    REPORTS.mkdir(exist_ok=True)
    with open(REPORTS / "ortgenai-token-cells.jsonl", "a") as out:
        out.write(json.dumps({"cell": cell, "verdict": result.verdict, "reached_tv": result.reached_tv, "samples": result.samples,
                              "drafts": result.drafts, "draft_tokens": result.draft_tokens, "accepted_tokens": result.accepted_tokens,
                              "seconds": round(result.seconds), "extra": result.extra, "detail": result.detail}) + "\n")
    assert result.verdict == "PASS", table
    assert result.drafts and 0 < result.accepted_tokens <= result.draft_tokens, table
