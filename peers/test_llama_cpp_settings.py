"""llama.cpp (llama-cpp-python 0.3.36) where speculation meets the rest of sampling (issue 30): the matrix's slice in
``make peers``.  Runs in ``.venv-llama``; the whole matrix is ``make peers-matrix`` (docs/matrix.md).

* B18: with prompt lookup, a Python logits processor is given the unverified drafts as its history
  (``scripts/findings/llama_cpp_processor_history.py``, deterministic: the history lengths it saw);
* the same bug as a law: a processor that forbids repeating the last token makes the engine with prompt
  lookup repeat it (A/B FAIL, located at the prefix, outside the run's budget at the production level);
* penalties are not affected (llama.cpp's penalties sampler keeps its own history of drawn tokens): with a
  presence penalty prompt lookup emits the law of the engine without a draft (A/B PASS, from the run's budget;
  ``slow``: ``make peers`` judges the same cell per token, test_llama_cpp_settings_tokens.py).

About a minute on 2 cores (``make peers``).
"""

import pytest

import specdec as sd
from fixtures import vllm_subjects
from scripts.findings import llama_cpp_processor_history as b18
from scripts.matrix import llama_cpp as matrix
from scripts.matrix.settings import LENGTH, SETTINGS, logits_processor_setting

pytestmark = pytest.mark.peers


def test_b18_a_logits_processor_sees_the_drafts_as_history():
    expected = [len(b18.PROMPT) + i for i in range(b18.NEW_TOKENS)]
    plain, _ = b18.seen_lengths(None)
    drafted, _ = b18.seen_lengths(4)
    assert plain[:b18.NEW_TOKENS] == expected
    assert drafted[:b18.NEW_TOKENS] != expected and max(drafted) > max(plain), (drafted, expected)  # B18 present


def _ab(settings, n, **kwargs):
    subject, reference = matrix.build(settings)
    try:
        return sd.check_ab(subject, reference, [vllm_subjects.PROMPT], length=LENGTH, max_new_tokens=LENGTH, n=n, rows_per_call=100,
                           **kwargs)
    finally:
        subject.close()
        reference.close()


def test_b18_a_history_reading_processor_changes_the_law_under_prompt_lookup():
    report = _ab(logits_processor_setting(), 150, tv=None, seed=41, family_alpha=1e-6,
                 name="llama.cpp prompt lookup with a no-repeat logits processor vs no draft")
    print(report.format())
    assert report.verdict == "FAIL" and report.speculation["drafts"] > 50, report.format()


@pytest.mark.slow  # make peers judges this cell per token (test_llama_cpp_settings_tokens.py): 66 s saved (2026-11-29)
def test_a_presence_penalty_keeps_the_law_under_prompt_lookup(specdec_budget):
    report = _ab(SETTINGS["presence penalty"], 400, tv=None, seed=42, budget=specdec_budget,
                 name="llama.cpp prompt lookup with a presence penalty vs no draft")
    print(report.format())
    assert report.verdict == "PASS" and report.speculation["drafts"] > 50, report.format()


def _scalar_processor(history, logits):
    return 0.0


@pytest.mark.parametrize("settings, error, says", [
    (sd.SamplingSettings(logits_processor=_scalar_processor), "ContractError", "_scalar_processor"),
    (sd.SamplingSettings(allowed_token_ids=[1, 10**6]), "ValueError", "allowed_token_ids[1]=1000000"),
])
def test_a_stage_that_fails_inside_llama_cpps_callback_ends_the_row(settings, error, says):
    """Issue 40, item 13: llama-cpp-python's ctypes callback prints and drops a processor's exception; the decoder
    raises it instead of emitting tokens drawn from the unprocessed logits."""
    subject, reference = matrix.build(settings)
    try:
        with pytest.raises(Exception) as raised:
            subject([vllm_subjects.PROMPT], 2, 0)
        assert type(raised.value).__name__ == error and says in str(raised.value), raised.value
    finally:
        subject.close()
        reference.close()
