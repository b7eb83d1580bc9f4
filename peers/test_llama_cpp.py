"""llama.cpp (llama-cpp-python 0.3.36, CPU build) on SmolLM2-135M's GGUF, speculation on vs off (``specdec.check_ab``).

Runs in ``.venv-llama`` (``make peers``).  The subjects are ``fixtures.llama_subjects`` (the " cat"/" dog"
prompt, T = 0.7, top-p 0.8; L = 2, six cells, ``max_new_tokens=2``: the four tokens drafted after the first
token are verified at the second).  llama.cpp's law is not transformers' (a quantized forward, top-p before
the temperature), so the reference is the same engine without a draft.  What the runs show:

* the adapter refuses a llama-cpp-python it was not tested on (PeerVersionError, before importing it), and
  bad arguments with their name (among them an ``n_batch`` below K + 1, which aborts llama.cpp);
* prompt lookup (K = 4) as shipped emits the law of the engine without a draft, with drafts verified, kept
  and replaced during the check (A/B PASS, from this run's error budget);
* llama.cpp's verification is a coupling: with one seed, the same tokens come out with and without the draft
  (it samples the target at every drafted position with the request's one RNG stream and keeps a draft only
  when the draw equals it: docs/reference.md's sample-match rule for point-mass drafts, E5; measured equal on
  2,000 of 2,000 rows as well);
* a planted lossy acceptance (a draft kept whenever it is in the target's top two) is caught at position 1,
  with its prefix (A/B FAIL; a check meant to fail runs at the production level, family-wise alpha 1e-6,
  outside the run's budget, as the mutants do).

n per side is fixed from the measured rates (one thread each on a busy 2-core machine: ``plain`` about 29
samples/s, ``lookup`` about 14): the A/B PASS at n = 600 per side takes about 75 s and reaches TV
about 0.27 at the budget's per-check alpha (2e-8 / 1000 under ``make peers``; 1,000 a side took 129 s for about 0.21,
2,000 248 s for 0.153); the file about 3 minutes.
``-m "peers and slow"`` runs n = 8,000 per side instead (about 14 minutes, TV about 0.08).
"""

import time
from importlib import metadata

import pytest

import specdec
from fixtures import llama_subjects
from specdec.adapters._common import PeerVersionError
from specdec.adapters.llama_cpp import DISTRIBUTIONS, SUPPORTED_LLAMA_CPP, LlamaCppDecoder

N = 600  # samples per side of the A/B PASS: TV about 0.27 (1,000 reached about 0.21 in 129 s, 2,000 0.153 in 248 s, 2026-11-29; every token: make peers' per-token cells)
N_SLOW = 8_000
N_PLANTED = 300  # the planted bug is far (TV about 0.65): p about 1e-68 at this n
COUPLED_ROWS = 200


def ab(subject, reference, n, seed, **kwargs):
    started = time.perf_counter()
    report = specdec.check_ab(subject, reference, [llama_subjects.PROMPT], length=2, max_new_tokens=2, n=n, tv=None,
                              seed=seed, **kwargs)
    print(f"\n{report.format()}\n-> {report.verdict}, n = {n:,} per side, reached TV {report.reached_tv:.4f}, "
          f"speculation {report.speculation}, {time.perf_counter() - started:.0f} s")
    return report


def test_the_installed_version_is_the_tested_one():
    assert SUPPORTED_LLAMA_CPP == ("0.3.36",)
    assert metadata.version("llama_cpp_python") in SUPPORTED_LLAMA_CPP


def test_the_adapter_refuses_a_version_it_was_not_tested_on(monkeypatch):
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.3.35" if name in DISTRIBUTIONS else real(name))
    decoder = LlamaCppDecoder(llama_subjects.gguf_path(), num_pred_tokens=4)
    with pytest.raises(PeerVersionError, match=r"supports llama_cpp_python 0\.3\.36; installed: llama_cpp_python 0\.3\.35"):
        decoder([llama_subjects.PROMPT], 2, 0)
    assert decoder._llm is None  # refused before anything was built


def test_prompt_lookup_emits_the_law_without_draft(specdec_budget):
    report = ab(llama_subjects.lookup, llama_subjects.plain, N, seed=3, budget=specdec_budget,
                name="llama.cpp prompt lookup K=4 vs no draft")
    assert report.verdict == "PASS", report.format()
    spec = report.speculation
    assert spec["drafts"] == N and 0 < spec["accepted_tokens"] < spec["drafts"], spec  # drafts kept and replaced
    assert llama_subjects.plain.speculation_counts() is None  # the control does not speculate
    assert report.reached_tv < 0.3


def test_with_one_seed_the_draft_changes_no_token():
    prompts = [llama_subjects.PROMPT] * COUPLED_ROWS
    with_draft, without = llama_subjects.lookup(prompts, 2, 11), llama_subjects.plain(prompts, 2, 11)
    same = sum(a == b for a, b in zip(with_draft, without))
    print(f"\n{same} of {COUPLED_ROWS} rows equal with one seed, with and without the draft")
    assert same >= COUPLED_ROWS - 2  # a float difference between batched and single evaluation may flip a rare draw
    assert len({tuple(r) for r in without}) >= 4  # the rows are draws, not copies


def test_the_decoder_marks_the_tokens_drawn_where_a_draft_was_verified():
    decoder = LlamaCppDecoder(llama_subjects.gguf_path(), num_pred_tokens=4, sampling=llama_subjects.SAMPLING, n_ctx=256,
                              llama_args={"n_threads": 1})
    control = LlamaCppDecoder(llama_subjects.gguf_path(), sampling=llama_subjects.SAMPLING, n_ctx=256, llama_args={"n_threads": 1})
    try:
        rows = decoder([llama_subjects.PROMPT] * 8, 12, 5)
        marks, counts = decoder.last_drafted(), decoder.speculation_counts()
        assert [len(m) for m in marks] == [len(r) for r in rows] == [12] * 8
        assert not any(m[0] for m in marks)  # the first token comes from the prompt's row: no draft yet
        drafted = sum(map(sum, marks))
        # every kept draft is a drafted position, and every step with drafts draws at least one there
        assert counts["accepted_tokens"] <= drafted and counts["drafts"] <= drafted + 8, (drafted, counts)
        assert 0 < drafted < 8 * 12, marks
        control([llama_subjects.PROMPT] * 2, 5, 5)
        assert control.last_drafted() == [[False] * 5] * 2  # no draft, no drafted position
    finally:
        decoder.close()
        control.close()


def test_a_lossy_acceptance_is_caught_and_located():
    report = ab(llama_subjects.lookup_planted, llama_subjects.plain, N_PLANTED, seed=4, family_alpha=1e-6,
                name="llama.cpp prompt lookup K=4, top-2 acceptance (planted) vs no draft")
    assert report.verdict == "FAIL", report.format()
    failing = [c for c in report.checks if not c.passed]
    assert failing and failing[0].location.startswith("position 1 ") and "prefix [" in failing[0].location, failing[0].location
    assert report.speculation["accepted_tokens"] == report.speculation["drafts"] == N_PLANTED  # every first draft kept


@pytest.mark.slow
def test_prompt_lookup_emits_the_law_without_draft_at_a_lower_tv(specdec_budget):
    report = ab(llama_subjects.lookup, llama_subjects.plain, N_SLOW, seed=5, budget=specdec_budget,
                name="llama.cpp prompt lookup K=4 vs no draft (slow)")
    assert report.verdict == "PASS", report.format()
    assert report.speculation["drafts"] == N_SLOW and report.reached_tv < 0.1


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(num_pred_tokens=0), ValueError, r"num_pred_tokens must be an integer >= 1, got 0"),
    (dict(num_pred_tokens=2.5), TypeError, r"num_pred_tokens must be an integer, got float 2.5"),
    (dict(sampling=0.7), TypeError, r"sampling must be a specdec.SamplingConfig, got float"),
    (dict(num_pred_tokens=4, llama_args={"n_batch": 4}), ValueError, r"n_batch=4 is below num_pred_tokens \+ 1 = 5"),
    (dict(llama_args={"logits_all": False}), ValueError, r"llama_args may not set \['logits_all'\]"),
    (dict(setup=[1]), TypeError, r"setup must be a callable or a list/tuple of callables"),
    (dict(ignore_eos=1), TypeError, r"ignore_eos must be a bool, got int 1"),
    (dict(settings=specdec.SamplingSettings(seeded=False)), ValueError, r"llama-cpp-python 0.3.36 \(in process\) does not take seeded=False"),
    (dict(settings=specdec.SamplingSettings(), sampling=specdec.SamplingConfig()), ValueError, r"not both"),
])
def test_bad_arguments_are_refused_with_their_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        LlamaCppDecoder(llama_subjects.gguf_path(), **kwargs)


def test_bad_calls_are_refused_before_any_token():
    decoder = llama_subjects.plain
    with pytest.raises(ValueError, match=r"prompts\[1\]\[0\] must be an integer <= 49151, got 49152"):
        decoder([[1, 2], [49152]], 2, 0)
    with pytest.raises(ValueError, match=r"prompts\[0\] is empty"):
        decoder([[]], 2, 0)
    with pytest.raises(ValueError, match=r"does not fit n_ctx=256"):
        decoder([[1] * 250], 10, 0)
    assert decoder([[1, 2]], 0, 0) == [[]]
