"""OpenVINO GenAI (openvino-genai 2026.4.1.0, CPU) on SmolLM2-135M's GGUF: the ``make peers-openvino`` slice (issue 39).

Runs in ``.venv-openvino``.  The subjects are :mod:`fixtures.openvino_subjects`: the pipeline on the Q4_1 GGUF without
speculation (the control), with a draft model (the IR copy of the same GGUF: draft = target, K = 4) and with prompt
lookup (K = 4, ``max_ngram_size=2``).  What OpenVINO's source says it does (:mod:`specdec.adapters.openvino.pipeline`):
prompt lookup and greedy keep a draft iff the target's own draw (argmax) equals it - lossless; a draft model at T > 0
keeps x iff r <= q(x) / p(y), y a fresh draw of the target, r on a grid of 0.01, and replaces a rejected x by a draw
from the *next* position's law - not lossless, even with draft = target.  What the runs show:

* the adapter refuses an openvino-genai it was not tested on (PeerVersionError, before building anything), the
  settings OpenVINO cannot take, by name, and bad arguments;
* the draft model at T = 0.7, top-p 0.8 FAILs the A/B check against the engine without speculation on the
  " cat"/" dog" prompt, located at the third token (a check meant to fail runs at the production level, family-wise
  alpha 1e-6, outside the run's budget, as the mutants do).  Measured: p = 2.8e-7 at n = 400 a side, L = 3 (the
  subject emits "." and "," after " cat dog" more often than the engine without speculation; p = 3.5e-11 at n = 500).

* OpenVINO's own penalties (repetition 1.3, presence 1.5, frequency 1.5 on the matrix's base T = 0.7, top-p 0.8):
  the engine without speculation, per token, against OpenVINO's own law with the penalties restated
  (:mod:`specdec.adapters.openvino.penalties`), both under ``EXACT_PROPERTIES`` (f32, an f32 KV cache, no dynamic
  quantisation: under the defaults the nucleus' edge moves, :mod:`specdec.adapters.openvino.ir_oracle`) - the
  controls that let the oracle judge the penalty cells: PASS (16 answers of 8 tokens each, 192 under the presence
  penalty; more in the slow file); then, only where that control PASSed in the run, prompt lookup under the presence
  penalty against the same oracle on the same n (the per-token slice of issue 38): PASS, with drafts kept.

* prompt lookup's draft counts, which OpenVINO does not keep, replayed from the answers
  (:mod:`specdec.adapters.openvino.lookup_replay`): step for step the tokens the engine's own
  ``perf_metrics.raw_metrics.m_batch_sizes`` says each step emitted, greedy and at T = 1 on the four per-token
  prompts (about 45 s).

The PASSes (the control against itself, prompt lookup against the control, per token against OpenVINO's own law)
need thousands of answers at 6-17 answers/s on 2 busy cores, and greedy decoding needs a paragraph of its own: both in
``-m "peers and slow"`` (peers/test_openvino_slow.py).
"""

import time
from importlib import metadata

import pytest

import specdec
from fixtures import openvino_subjects as ovs
from specdec.adapters._common import PeerVersionError
from specdec.adapters.openvino import DISTRIBUTIONS, SUPPORTED_OPENVINO_GENAI, OpenVINODecoder
from specdec.adapters.openvino.ir_oracle import EXACT_PROPERTIES
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting

pytestmark = pytest.mark.peers

GREEDY_TOKENS = 16
N_FAIL = 500  # answers a side (p = 2.8e-7 measured at 400, seed 5; the engine is deterministic under its seeds)
PENALTIES = ("repetition penalty", "presence penalty", "frequency penalty")  # scripts/matrix/settings.py's names
PENALTY_N, PENALTY_LENGTH = 8, 8  # answers per prompt (two prompts), tokens per answer: a control of about 15 s
# The penalty cell of the per-token slice (issue 38): its control and prompt lookup on 96 answers a prompt (1,536 tokens;
# 2026-12-06 beside a vLLM cell: both PASS at a reached TV of 0.172 in 90 s and 103 s, 436 drafts, 174 of 1,353 drafted
# tokens kept; as one run_token_cell beside make test: control 0.173, prompt lookup 0.171, 280 s).  Not the repetition
# penalty: prompt lookup drafted nothing under it in 256 tokens (INCONCLUSIVE).
SLICE_PENALTY, SLICE_N = "presence penalty", 96


def test_the_installed_version_is_the_tested_one():
    assert SUPPORTED_OPENVINO_GENAI == ("2026.4.1.0",)
    assert metadata.version("openvino-genai") in SUPPORTED_OPENVINO_GENAI
    assert metadata.version("openvino").startswith("2026.4.1")  # the wheels of one release


def test_the_adapter_refuses_a_version_it_was_not_tested_on(monkeypatch):
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "2026.3.0.0" if name in DISTRIBUTIONS else real(name))
    decoder = ovs.engine(None)
    with pytest.raises(PeerVersionError, match=r"supports openvino-genai 2026\.4\.1\.0; installed: openvino-genai 2026\.3\.0\.0"):
        decoder([ovs.PROMPT], 2, 0)
    assert decoder._pipe is None  # refused before anything was built


@pytest.mark.parametrize("field, value", [("logit_bias", {5: 1.0}), ("bad_words", [[5]]), ("allowed_token_ids", [5, 6]),
                                          ("seeded", False), ("stop_token_ids", [2]), ("samples_per_request", 2),
                                          ("logits_processor", lambda history, logits: logits)])
def test_settings_openvino_cannot_take_are_refused_by_name(field, value):
    with pytest.raises(UnsupportedSetting, match=f"OpenVINO GenAI does not take {field}="):
        OpenVINODecoder(ovs.gguf_path(), settings=SamplingSettings(temperature=1.0, **{field: value}))


@pytest.mark.parametrize("kwargs, message", [
    (dict(method="eagle"), "method must be one of"),
    (dict(method="draft_model"), "needs draft_dir"),
    (dict(num_assistant_tokens=4), "need a method"),
    (dict(method="prompt_lookup", assistant_confidence_threshold=0.5), "a draft model's setting"),
    (dict(method="draft_model", draft_dir="x", num_assistant_tokens=4, assistant_confidence_threshold=0.5), "not both"),
    (dict(threads=0), "threads"),
    (dict(logprobs=-1), "logprobs"),
])
def test_bad_arguments_are_refused_with_their_name(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        OpenVINODecoder(ovs.gguf_path(), **kwargs)


def test_the_draft_model_at_T07_top_p_changes_the_law():
    plain, subject = ovs.engine(None, ovs.T07_TOP_P), ovs.engine("draft_model", ovs.T07_TOP_P)
    started = time.perf_counter()
    report = specdec.check_ab(subject, plain, [ovs.PROMPT], length=3, max_new_tokens=3, n=N_FAIL, tv=None, seed=5,
                              rows_per_call=64, family_alpha=1e-6, name="OpenVINO draft model (draft = target) K=4 vs none")
    print(f"\n{report.format()}\n-> {report.verdict}, {time.perf_counter() - started:.0f} s")
    assert report.verdict == "FAIL", report.format()
    assert report.speculation["draft_tokens"] > report.speculation["accepted_tokens"] > 0, report.speculation


def _oracle(settings):
    from specdec.adapters.openvino.ir_oracle import OpenVINOOracle

    return OpenVINOOracle(ovs.draft_dir(), settings, properties=EXACT_PROPERTIES)


def _prompts() -> list:
    """A chat prompt and the " cat"/" dog" prompt (whose every token the repetition penalty reads)."""
    from scripts.matrix.token_prompts import token_prompts

    return [list(token_prompts()[0]), list(ovs.PROMPT)]


@pytest.mark.parametrize("setting", [name for name in PENALTIES if name != SLICE_PENALTY])
def test_control_the_engine_without_speculation_follows_the_oracle_under_each_penalty(setting, specdec_budget):
    """The oracle restates OpenVINO's penalties (order, history, sign rule): the engine without speculation must follow
    it token by token (the presence penalty's control runs in its cell, below)."""
    from scripts.matrix.settings import SETTINGS

    settings = SETTINGS[setting]
    started = time.perf_counter()
    report = specdec.check_tokens(ovs.engine(None, settings, properties=EXACT_PROPERTIES), _oracle(settings), _prompts(),
                                  length=PENALTY_LENGTH, n=PENALTY_N, tv=None, seed=41, rows_per_call=16, budget=specdec_budget,
                                  name=f"OpenVINO without speculation, {setting}, per token (control)")
    print(f"\n{report.format()}\n-> {report.verdict}, reached TV {report.reached_tv:.4f}, {time.perf_counter() - started:.0f} s")
    assert report.verdict == "PASS", report.format()


def test_prompt_lookup_follows_the_oracle_under_a_presence_penalty_once_its_control_passed(specdec_budget):
    """The per-token slice of issue 38 for OpenVINO, one cell (``run_token_cell``): the engine without speculation
    against the oracle under the presence penalty (the control), then, only if it PASSes, prompt lookup (lossless by its
    rule) against it on the same prompts and n; drafts must have been kept."""
    from scripts.matrix.settings import SETTINGS
    from specdec.conformance.token_cells import run_token_cell

    cell = run_token_cell("OpenVINO GenAI", f"prompt lookup K={ovs.K}", SLICE_PENALTY, SETTINGS[SLICE_PENALTY],
                          lambda s: (ovs.engine("prompt_lookup", s, properties=EXACT_PROPERTIES),
                                     ovs.engine(None, s, properties=EXACT_PROPERTIES)),
                          _oracle, prompts=_prompts(), length=PENALTY_LENGTH, tv=None, n=SLICE_N, seed=41, budget=specdec_budget)
    print(f"\n-> {cell.summary()}")
    assert cell.extra["control_verdict"] == "PASS", cell  # only then may the oracle judge prompt lookup
    assert cell.verdict == "PASS", cell
    assert cell.draft_tokens > 100 and cell.accepted_tokens > 0, cell


def test_prompt_lookups_replayed_steps_are_the_engines_own():
    """OpenVINO keeps no draft counts for prompt lookup; the adapter replays them from the answers
    (:mod:`specdec.adapters.openvino.lookup_replay`).  For one request per ``generate`` call, the tokens each step
    emitted are the engine's own ``perf_metrics.raw_metrics.m_batch_sizes``: the replay must give them step for step,
    greedy and at T = 1, on the four per-token prompts (drafts kept in some, so the comparison is not vacuous)."""
    import numpy as np
    import openvino

    from scripts.matrix.token_prompts import token_prompts
    from specdec.adapters.openvino.lookup_replay import lookup_steps, replay_lookup

    kept = 0
    for settings, seeds in ((ovs.GREEDY, (0,)), (ovs.T1, (0, 1))):
        decoder = ovs.engine("prompt_lookup", settings)
        for prompt in token_prompts():
            for seed in seeds:
                result = decoder.pipeline.generate([openvino.Tensor(np.asarray([prompt], dtype=np.int64))],
                                                   [decoder.config(24, seed)])[0]
                answer = [int(t) for t in result.m_generation_ids[0]]
                steps = lookup_steps(prompt, answer, decoder.num_assistant_tokens, decoder.max_ngram_size)
                engine = list(result.perf_metrics.raw_metrics.m_batch_sizes)
                assert engine == [k + 1 for _, k in steps], (settings.label, prompt, seed, answer, engine, steps)
                kept += sum(k for _, k in steps)
        retrieval = list(token_prompts()[2])  # the adapter's counts: the replay of what it answered
        answer = decoder([retrieval], 24, 0)[0]
        replayed = replay_lookup(retrieval, answer, decoder.num_assistant_tokens, decoder.max_ngram_size)
        assert decoder.speculation_counts() == {name: replayed[name] for name in ("drafts", "draft_tokens", "accepted_tokens")}
    assert kept > 0
