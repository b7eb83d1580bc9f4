"""llama-cpp-python 0.3.36's reported log-probabilities (``create_completion(logprobs=1)``) against
:class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle`, prompt lookup off (the control) and on (issue 38, item 4).

What it reports (``llama_cpp/llama.py``, ``Llama._create_completion``, the non-streaming branch):
``all_logprobs = Llama.logits_to_logprobs(self._scores)[token_offset:]`` - the log-softmax of the *raw* logits of
the model (no temperature, top-p or penalties: ``claims="raw"``), at the rows ``Llama.eval`` stored (``logits_all``
is forced on with a draft model, ``Llama.__init__``).  With ``draft_model=LlamaPromptLookupDecoding`` the verified
block's rows are the rows of accepted drafts at their true prefix (``Llama.generate`` truncates ``n_tokens`` at the
first rejected draft and re-evaluates).  So the raw oracle (T = 1, no truncation) is the law compared; the sampled
law (T = 0.7, top-p 0.8) is not what it reports, and the test says so (a FAIL against it).

The emitted ids are read from ``llm._input_ids`` (the response gives token strings); each answer's last token is
left out: it is not written there (a first run read the draft's token in its slot: a harness error of 4.3 nats).
Each answer starts from a reset context, its prompt evaluated in one batch as the oracle evaluates it: with the
prompt kept from the previous answer, llama-cpp-python evaluates only its last token again, alone, and on the AVX2
build (the Makefile's ``LLAMA_CMAKE_ARGS``) that row differs from the batch's by up to 0.045 nats (2026-11-29: the
harness's own mistake, which an AVX-512 build's batch-invariant short contexts had hidden).  Measured on the AVX2
build (2026-11-29, 2 seeds x 11 tokens = 22, all listed): control max 3.4e-7 nats (tolerance 2 x + 1e-6 = 1.7e-6);
lookup: positions 0-1 max 0.0, positions 2-10 up to 0.151 nats (mean 0.020), the batch-shape rounding of this
build (ggml's llamafile sgemm: lookup verifies blocks of K + 1), not a reported law other than the sampled one: the
reported rows are the rows llama.cpp samples from (on 2026-11-27's AVX-512 build positions 0-5 were exact and the
largest 0.114).  A one-token control cannot set the tolerance for rows computed in blocks: the test bounds them by
``BATCH_BOUND`` and holds the first position (the prompt's own row, evaluated alike on both sides) to the control's
tolerance.  Deterministic comparison; 2 seeds x 11 tokens per side on the fixtures' " cat"/" dog" prompt: 6 s on a
quiet machine, up to 65 s measured on 2 cores shared with other runs."""

import numpy as np
import pytest

from fixtures import llama_subjects
from specdec.adapters.llama_cpp.oracle import LlamaCppOracle
from specdec.conformance.reported_logprobs import compare_logprobs, control_tolerance
from specdec.warpers import SamplingConfig

LENGTH = 12
SEEDS = (1, 2)
BATCH_BOUND = 0.25  # nats: lookup's blocks vs one-token rows, measured max 0.151 at position 3 (AVX2 build, 2026-11-29)
CONTROL_BOUND = 1e-4  # the control's own bound: the same evaluations on both sides, measured 3.4e-7 (float32 log-softmax)


def _answers(num_pred_tokens):
    import llama_cpp

    draft = None if num_pred_tokens is None else llama_cpp.llama_speculative.LlamaPromptLookupDecoding(
        num_pred_tokens=num_pred_tokens)
    llm = llama_cpp.Llama(llama_subjects.gguf_path(), n_ctx=256, n_threads=1, logits_all=True, draft_model=draft,
                          verbose=False)
    prompt = list(llama_subjects.PROMPT)
    answers, reported = [], []
    for seed in SEEDS:
        llm.reset()  # every answer from the prompt evaluated in one batch, as the oracle does (no prefix kept from the last)
        out = llm.create_completion(prompt, max_tokens=LENGTH, temperature=0.7, top_p=0.8, top_k=0, min_p=0.0,
                                    repeat_penalty=1.0, logprobs=1, seed=seed)
        logprobs = out["choices"][0]["logprobs"]["token_logprobs"]
        # the emitted tokens but the last: at max_tokens the loop stops before the last token is written over the
        # draft in llm._input_ids (Llama.generate), so that slot holds the evaluated draft or nothing
        ids = [int(t) for t in llm._input_ids[len(prompt): len(prompt) + len(logprobs) - 1]]
        answers.append(ids)
        reported.append([float(x) for x in logprobs[: len(ids)]])
    return [prompt] * len(SEEDS), answers, reported


def test_llama_cpp_reports_the_raw_law_with_and_without_prompt_lookup():
    raw = LlamaCppOracle(llama_subjects.gguf_path(), sampling=SamplingConfig(), n_ctx=256)
    prompts, answers, reported = _answers(None)
    control = compare_logprobs(raw, prompts, answers, reported, claims="raw")
    assert control.tokens + control.unlisted == sum(map(len, answers)) and control.tokens >= 20 and control.max_deviation <= CONTROL_BOUND, control
    tolerance = control_tolerance(control)
    prompts, answers, reported = _answers(llama_subjects.NUM_PRED_TOKENS)
    report = compare_logprobs(raw, prompts, answers, reported, claims="raw", tolerance=tolerance)
    print(f"control max {control.max_deviation:.3g} mean {control.mean_deviation:.3g} n={control.tokens}; "
          f"tolerance {tolerance:.3g}; lookup max {report.max_deviation:.3g} mean {report.mean_deviation:.3g} "
          f"n={report.tokens}; by position {np.round(report.by_position, 4).tolist()}")
    # position 0 (the prompt's row, one batch on both sides): equal to the one-token control within its tolerance; later
    # ones differ by this build's batch-shape rounding (lookup verifies blocks of K + 1; the rows it reports are the rows
    # it samples from, Llama.generate), the same effect LlamaCppOracle's floor measures (test_llama_cpp_tokens)
    assert report.tokens >= 20 and report.by_position[0] <= tolerance, (report, tolerance)
    assert report.max_deviation <= BATCH_BOUND, report
    sampled = compare_logprobs(LlamaCppOracle(llama_subjects.gguf_path(), sampling=llama_subjects.SAMPLING, n_ctx=256),
                               prompts[:1], answers[:1], reported[:1], claims="sampled", tolerance=tolerance)
    assert sampled.verdict == "FAIL"  # it does not report the law it samples from (T = 0.7, top-p 0.8): documented
