"""mlx-lm 0.32.2 on mlx 0.32.4's Linux CPU build (``mlx-cpu``), on SmolLM2-135M-Instruct's float32 weights, with and
without its draft model (issue 39).

Runs with ``.venv-mlx``'s Python (``make peers-mlx``; the engine itself in a worker process, :mod:`specdec.adapters.mlx`:
mlx's random state is global to a process).  The draft model is the target's own weights (draft = target: any rule that
keeps the target's law keeps it here, and a difference can only come from the rule), K = 4.  What the runs show (the
adapter's docstring cites the source):

* the adapter refuses an mlx or mlx-lm it was not tested on and the settings it cannot map, by name, before a worker
  starts; the worker runs on mlx's CPU device with the rope base SmolLM2 was trained with (mlx-lm reads a top-level
  ``rope_theta`` only: :mod:`specdec.adapters.mlx.mlx_model`);
* the prompt's KV cache reused across rows (the adapter's ``reuse_prefill``) gives the same rows as a fresh prefill;
* greedy (T = 0): the same rows with and without the draft model;
* with a repetition penalty, the draft model changes the law: ``speculative_generate_step`` starts its processors'
  history at the prompt's *last* token (its ``_prefill`` does not add the prompt; ``generate_step``'s does), so the
  first tokens of an answer are not penalised for the rest of the prompt.  The expected FAIL (A/B, the draft model
  against none, first token): on the last 8 tokens of the " cat"/" dog" prompt at T = 0.7, top-p 0.8, repetition 1.5,
  " dog" has probability 0.79 at the first token with the draft model and below 0.01 without (mlx-lm's own law given
  the prefix, :class:`specdec.adapters.mlx.mlx_oracle.MlxLawOracle`; per token, after the control, in the slow file).

mlx's CPU wheel bundles the reference BLAS: about 0.12 s per token position of SmolLM2-135M on this busy 2-core machine
(an 18-token prompt's prefill is 2 s), so the A/B checks of the law (draft model against none, T = 1 and T = 0.7 top-p
0.8; the engine against itself) and the per-token cells are ``-m "peers and slow"`` (:mod:`peers.test_mlx_slow`).  The
default slice takes about 2.5 minutes (23 tests; 152 s on 2026-11-27 with the machine shared).
"""

import time

import pytest

import specdec
from fixtures.vllm_subjects import PROMPT
from specdec.adapters.mlx import SUPPORTED_MLX, SUPPORTED_MLX_LM, MlxDecoder, mlx_config, mlx_model_dir, request_settings
from specdec.adapters.mlx import mlx_decoder as decoder_module
from specdec.errors import PeerVersionError
from specdec.sampling_settings import UnsupportedSetting

K = 4
T1 = specdec.SamplingSettings(temperature=1.0)
GREEDY = specdec.SamplingSettings(temperature=0.0)
NUCLEUS = specdec.SamplingSettings(temperature=0.7, top_p=0.8)
PENALTY = specdec.SamplingSettings(temperature=0.7, top_p=0.8, repetition_penalty=1.5)
SHORT = PROMPT[-8:]  # " cat dog ..." : 8 tokens, within the penalties' window of 20
N_PENALTY = 20  # answers per side of the expected FAIL (A/B, first token)
GREEDY_TOKENS = 12


@pytest.fixture(scope="module")
def plain():
    with MlxDecoder(settings=NUCLEUS, name="mlx-lm plain") as d:
        yield d


@pytest.fixture(scope="module")
def drafted():
    with MlxDecoder(settings=NUCLEUS, speculation="draft_model", num_draft_tokens=K, name="mlx-lm draft model") as d:
        yield d


def test_the_installed_versions_are_the_tested_ones():
    assert SUPPORTED_MLX_LM == ("0.32.2",) and SUPPORTED_MLX == ("0.32.4",)
    assert decoder_module._installed() == {"mlx-lm": "0.32.2", "mlx": "0.32.4"}


def test_the_adapter_refuses_a_version_it_was_not_tested_on(monkeypatch):
    monkeypatch.setattr(decoder_module, "_installed", lambda: {"mlx-lm": "0.31.0", "mlx": "0.32.4"})
    d = MlxDecoder(settings=T1)
    with pytest.raises(PeerVersionError, match=r"supports mlx-lm 0\.32\.2; installed: 0\.31\.0"):
        d([PROMPT], 2, 0)
    assert d._worker is None  # refused before the worker started


@pytest.mark.parametrize("changes, field", [
    (dict(min_new_tokens=2, stop_token_ids=(2,)), "min_new_tokens"),
    (dict(bad_words=((5,),)), "bad_words"),
    (dict(allowed_token_ids=(5, 6)), "allowed_token_ids"),
    (dict(logits_processor=lambda history, logits: logits), "logits_processor"),
    (dict(samples_per_request=2), "samples_per_request"),
    (dict(seeded=False), "seeded"),
])
def test_settings_it_cannot_map_are_refused_by_name(changes, field):
    with pytest.raises(UnsupportedSetting, match=rf"mlx-lm 0\.32\.2 does not take {field}=") as refused:
        MlxDecoder(settings=specdec.SamplingSettings(**changes))
    assert refused.value.field == field


def test_the_map_sends_mlx_lms_keywords():
    assert request_settings(T1) == {"sampler": {"temp": 1.0, "top_p": 1.0, "min_p": 0.0, "top_k": 0}, "processors": {}}
    mapped = request_settings(specdec.SamplingSettings(temperature=0.7, top_k=5, min_p=0.1, repetition_penalty=1.3,
                                                       frequency_penalty=0.5, logit_bias={7: -2.0}))
    assert mapped["sampler"] == {"temp": 0.7, "top_p": 1.0, "min_p": 0.1, "top_k": 5}
    assert mapped["processors"] == {"logit_bias": [[7, -2.0]], "repetition_penalty": 1.3, "repetition_context_size": 20,
                                    "frequency_penalty": 0.5, "frequency_context_size": 20}


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(speculation="ngram"), ValueError, r"speculation must be one of \(None, 'draft_model'\), got 'ngram'"),
    (dict(num_draft_tokens=0), ValueError, r"num_draft_tokens must be an integer >= 1, got 0"),
    (dict(context_size=0), ValueError, r"context_size must be an integer >= 1, got 0"),
    (dict(ignore_eos=1), TypeError, r"ignore_eos must be a bool, got int 1"),
    (dict(reuse_prefill="yes"), TypeError, r"reuse_prefill must be a bool, got str 'yes'"),
    (dict(settings=0.7), TypeError, r"settings must be a specdec.SamplingSettings, got float"),
    (dict(model_dir="/nonexistent"), FileNotFoundError, r"model_dir '/nonexistent' has no config.json"),
])
def test_bad_arguments_are_refused_with_their_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        MlxDecoder(**kwargs)


def test_the_model_folder_states_the_rope_base_mlx_lm_reads():
    config = {"rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"}, "model_type": "llama"}
    assert mlx_config(config)["rope_theta"] == 100000.0
    with pytest.raises(ValueError, match=r"rope_type='yarn'"):
        mlx_config({"rope_parameters": {"rope_theta": 1e4, "rope_type": "yarn"}})
    with pytest.raises(ValueError, match=r"rope_theta=10000.0 and rope_parameters.rope_theta=100000.0"):
        mlx_config({"rope_theta": 10000.0, "rope_parameters": {"rope_theta": 100000.0}})
    import json

    assert json.loads((mlx_model_dir() / "config.json").read_text())["rope_theta"] == 100000.0


def test_the_worker_runs_on_mlxs_cpu_and_refuses_bad_calls(plain):
    plain([PROMPT], 1, 0)
    ready = plain.start().ready
    assert ready["device"] == "Device(cpu, 0)" and ready["versions"]["mlx-cpu"] == "0.32.4", ready
    assert ready["rope_theta"] == 100000.0 and plain.vocab == 49152 and plain.eos_token_ids == (2,), ready
    with pytest.raises(ValueError, match=r"prompts\[1\]\[0\] must be an integer <= 49151, got 49152"):
        plain([[1, 2], [49152]], 2, 0)
    with pytest.raises(ValueError, match=r"prompts\[0\] is empty"):
        plain([[]], 2, 0)
    assert plain([PROMPT], 0, 0) == [[]]
    rows = plain([PROMPT] * 3, 3, 1)
    assert [len(r) for r in rows] == [3, 3, 3] and rows == plain([PROMPT] * 3, 3, 1)  # seeded: a call repeats
    assert plain.speculation_counts() is None and plain.last_drafted() == [[False] * 3] * 3


@pytest.mark.parametrize("which", ["plain", "drafted"])
def test_a_reused_prefill_gives_the_rows_of_a_fresh_one(which, plain, drafted):
    decoder = {"plain": plain, "drafted": drafted}[which]
    fresh = decoder.with_settings(NUCLEUS)
    fresh.reuse_prefill = False
    started = time.perf_counter()
    prompts = [list(SHORT)] * 2
    assert decoder(prompts, 3, 11) == fresh(prompts, 3, 11)
    penalised, penalised_fresh = decoder.with_settings(PENALTY), fresh.with_settings(PENALTY)
    assert penalised(prompts[:1], 3, 12) == penalised_fresh(prompts[:1], 3, 12)  # the draft model's copy: processors too
    print(f"\n{which}: {time.perf_counter() - started:.1f} s")


def test_drafts_are_verified_and_counted(drafted):
    before = drafted.speculation_counts()
    rows = drafted([PROMPT] * 3, 4, 2)
    after = drafted.speculation_counts()
    steps, draft_tokens, kept = (after[k] - before[k] for k in ("drafts", "draft_tokens", "accepted_tokens"))
    marks, kept_marks = drafted.last_drafted(), drafted.last_kept()
    assert [len(r) for r in rows] == [4, 4, 4] and [len(m) for m in marks] == [4, 4, 4]
    assert steps >= 3 and draft_tokens >= 4 * 3 and 0 < kept < draft_tokens, after
    assert sum(map(sum, kept_marks)) == kept  # from_draft, per token
    assert all(m or not k for row_m, row_k in zip(marks, kept_marks) for m, k in zip(row_m, row_k))  # kept => drafted


def test_greedy_rows_are_the_same_with_and_without_the_draft_model(plain, drafted):
    off, on = plain.with_settings(GREEDY), drafted.with_settings(GREEDY)
    prompts = [list(PROMPT), list(SHORT)]
    without, with_ = off(prompts, GREEDY_TOKENS, 0), on(prompts, GREEDY_TOKENS, 0)
    counts = on.speculation_counts()
    print(f"\ngreedy: {counts}\n{without}\n{with_}")
    assert counts["accepted_tokens"] > 0, counts
    assert with_ == without


def test_a_repetition_penalty_is_not_the_law_of_the_engine_without_the_draft_model(plain, drafted):
    # the first token after the 8-token prompt: " dog" (2767) has probability 0.79 with the draft model (only the
    # prompt's last token, " cat", is penalised) and below 0.01 without it (MlxLawOracle; the module docstring)
    started = time.perf_counter()
    subject, reference = drafted.with_settings(PENALTY), plain.with_settings(PENALTY)
    report = specdec.check_ab(subject, reference, [list(SHORT)], length=1, max_new_tokens=1, n=N_PENALTY, tv=None, seed=4,
                              rows_per_call=N_PENALTY, family_alpha=1e-6,
                              name=f"mlx-lm draft model K={K} vs none, T=0.7 top-p 0.8, repetition 1.5 (expected FAIL)")
    print(f"\n{report.format()}\n-> {report.verdict}, {time.perf_counter() - started:.0f} s")
    assert report.verdict == "FAIL", report.format()
    assert report.speculation["draft_tokens"] >= N_PENALTY
