"""llama.cpp (llama-cpp-python 0.3.36) per token under a whole sampling record (issue 38, the ``make peers`` slice): one
penalty cell and one processor cell, each judged only after its control passes.

:class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle` with ``settings=`` states the law llama.cpp samples from
under the record: the adapter's own Python stages called on the true prefix (the prompt and the answer's earlier
tokens), then llama.cpp's chain (penalties over the tokens generated, top-p before the temperature).

* **control** - the engine without a draft against the oracle: PASS, the oracle may judge this cell;
* **presence penalty** - prompt lookup K = 4 with a presence penalty of 1.5: PASS with drafts verified
  (llama.cpp's penalties keep their own history of drawn tokens);
* **a history-reading processor** (B18) - prompt lookup with a processor that forbids repeating the previous
  token FAILs at its first look: the processor is handed the unverified drafts as history, and the tokens it then
  lets through lie outside the law.  Measured on seeds 41-43 at L = 3 and 4 answers a call: 4 answers per token,
  where ``check_ab`` stops at 64 (32 a side) - the note of issue 38.

Runs in ``.venv-llama``; about a minute and a half on 2 cores.
"""

import pytest

import specdec as sd
from fixtures import llama_subjects, vllm_subjects
from scripts.matrix import llama_cpp as matrix
from scripts.matrix.settings import SETTINGS, logits_processor_setting
from specdec.adapters.llama_cpp.oracle import LlamaCppOracle

pytestmark = pytest.mark.peers

LENGTH = 8  # tokens per answer, every one tested
CELLS = {"presence penalty": SETTINGS["presence penalty"], "no-repeat processor": logits_processor_setting()}


@pytest.fixture(scope="module", params=list(CELLS))
def cell(request):
    settings = CELLS[request.param]
    subject, reference = matrix.build(settings)
    oracle = LlamaCppOracle(llama_subjects.gguf_path(), settings=settings, n_ctx=256)
    yield request.param, subject, reference, oracle
    for made in (subject, reference, oracle):
        made.close()


def _per_token(decoder, oracle, name, **kwargs):
    report = sd.check_tokens(decoder, oracle, [vllm_subjects.PROMPT], length=LENGTH, n=96, tv=None, rows_per_call=32, name=name,
                             **kwargs)
    print(f"\n{report.format()}")
    return report


def test_the_oracle_states_the_engines_law_without_a_draft_then_judges_prompt_lookup(cell, specdec_budget):
    name, subject, reference, oracle = cell
    assert "Python stages" in oracle.settings or "presence=1.5" in oracle.settings, oracle.settings
    control = _per_token(reference, oracle, f"llama.cpp without a draft, {name}, per token (control)", seed=51,
                         budget=specdec_budget)
    assert control.verdict == "PASS", control.format()  # only then may the oracle judge the speculative engine
    if name == "presence penalty":
        report = _per_token(subject, oracle, f"llama.cpp prompt lookup K=4, {name}, per token", seed=52, budget=specdec_budget)
        assert report.verdict == "PASS" and report.speculation["drafts"] > 50, report.format()
    else:  # B18: a mutant's power, outside the run's budget at the user's default alpha
        report = _per_token(subject, oracle, f"llama.cpp prompt lookup K=4, {name}, per token (B18)", seed=41, family_alpha=1e-6)
        assert report.verdict == "FAIL" and report.stopped_early is not None and report.samples <= 32, report.format()
