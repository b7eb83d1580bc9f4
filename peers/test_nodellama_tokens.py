"""node-llama-cpp 3.21.1 per token: every token of its speculative answers against llama.cpp's law of that token, after
the control (issue 39; slow: ``-m "peers and slow"``, in ``.venv-llama``).

The oracle is :class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle`: the same GGUF through llama-cpp-python 0.3.36's
llama.cpp (another build than node-llama-cpp's prebuilt addon), one token at a time, then llama.cpp's sampler chain in
node-llama-cpp's order (penalties over the answer's last 64 tokens, top-k, top-p, min-p on the untempered law, then the
temperature: :mod:`specdec.adapters.nodellama.worker_sampling`).  Each cell first checks node-llama-cpp *without*
speculation against the oracle (the control: it measures whether two llama.cpp builds give one law, at the TV the
cell reaches); only when that PASSes is the speculative engine judged by the same oracle.  Cells (one prompt, the
" cat"/" dog" prompt: every bigram repeats, so both predictors draft at every step; 4 tokens per answer, every one tested;
n answers fixed, the reached TV in each report):

* input lookup (K = 4) at T = 1 and at T = 0.7 with top-p 0.8, and the draft model (the target's own GGUF, K = 4, the
  target waiting for the K drafts) at T = 1: expected PASS (the adapter's docstring: a coupling), at n = 160 (TV about
  0.2-0.3 per token), and input lookup at T = 1 again at n = 1,200 (TV about 0.075; about 11 minutes);
* input lookup at T = 0.7, top-p 0.8 with a repetition penalty of 1.5: expected FAIL (a drafted position is sampled
  under the penalties of its step's first position), the control PASSing.

Each cell writes its reports' summary to ``.peers/nodellama-token-cells.jsonl``.  The per-token matrix
(``scripts.matrix.nodellama_tokens``) judges node-llama-cpp with its own law instead
(:class:`specdec.adapters.nodellama.NodeLlamaOracle`, since 2026-12-08): on the matrix's " cat"/" dog" *token* prompt the
two builds' laws differ (``test_nodellama_oracle.py``), where on this text prompt the controls PASSed.
"""

import time

import pytest

import specdec
from fixtures.token_cell_log import keep_token_cell
from fixtures.vllm_subjects import PROMPT
from specdec import SamplingSettings
from specdec.adapters.llama_cpp.oracle import LlamaCppOracle
from specdec.adapters.nodellama import NodeLlamaDecoder
from specdec.decoding.models import GGUF_FILE, _gguf_dir

pytestmark = [pytest.mark.peers, pytest.mark.slow]
LENGTH = 4  # tokens per answer, every one tested
K = 4
T1 = SamplingSettings(temperature=1.0)
TOP_P = SamplingSettings(temperature=0.7, top_p=0.8)
PENALTY = SamplingSettings(temperature=0.7, top_p=0.8, repetition_penalty=1.5)
# cell: (speculation, settings, seed, answers per check, expected verdict of the speculative engine)
CELLS = {
    "lookup T=1": ("lookup", T1, 100, 160, "PASS"),
    "lookup T=0.7 top-p 0.8": ("lookup", TOP_P, 200, 160, "PASS"),
    "draft T=1": ("draft", T1, 300, 160, "PASS"),
    "lookup T=0.7 top-p 0.8 repetition 1.5": ("lookup", PENALTY, 400, 160, "FAIL"),
    # the lower TV: measured 2026-11-27 with these seeds at family-wise alpha 1e-6 (50 rows a call): control and subject
    # PASS at TV 0.075, 241 s and 403 s; 2,994 steps with drafts, 11,976 drafted tokens, 884 kept
    "lookup T=1 n=1200": ("lookup", T1, 1000, 1200, "PASS"),
}


def gguf() -> str:
    return str(_gguf_dir() / GGUF_FILE)


def _keep(cell: str, kind: str, report) -> None:
    keep_token_cell("nodellama", cell, kind, report)


@pytest.mark.parametrize("cell", list(CELLS))
def test_every_token_follows_llama_cpps_law(cell, specdec_budget):
    speculation, settings, seed, n, expected = CELLS[cell]
    extra = dict(draft_min_tokens=K, min_confidence=0.0) if speculation == "draft" else {}
    oracle = LlamaCppOracle(gguf(), settings=settings, llama_args={"n_threads": 1})
    # an expected FAIL is judged at the production level (family-wise alpha 1e-6), outside the run's budget
    judged = dict(budget=specdec_budget) if expected == "PASS" else dict(family_alpha=1e-6)
    common = dict(length=LENGTH, n=n, tv=None, rows_per_call=16)
    started = time.perf_counter()
    with NodeLlamaDecoder(gguf(), settings=settings) as control:
        report = specdec.check_tokens(control, oracle, [list(PROMPT)], seed=seed, budget=specdec_budget,
                                      name=f"node-llama-cpp, {cell}: control (no speculation) per token", **common)
    _keep(cell, "control", report)
    assert report.verdict == "PASS", report.format()  # only then may the oracle judge the speculative engine
    with NodeLlamaDecoder(gguf(), settings=settings, speculation=speculation, num_draft_tokens=K, **extra) as subject:
        report = specdec.check_tokens(subject, oracle, [list(PROMPT)], seed=seed + 1,
                                      name=f"node-llama-cpp, {cell}: per token", **common, **judged)
    _keep(cell, "tokens", report)
    print(f"\n{cell}: {time.perf_counter() - started:.0f} s")
    spec = report.speculation
    assert report.verdict == expected, report.format()
    assert spec["drafts"] > 0 and 0 < spec["accepted_tokens"] < spec["draft_tokens"], spec
