"""ONNX Runtime GenAI (onnxruntime-genai 0.18.0, CPU) - the ``make peers-ortgenai`` slice (issue 39).

Runs in ``.venv-ortgenai`` on the local ONNX export of SmolLM2-135M-Instruct (``make .peers/ortgenai/.exported``;
:mod:`fixtures.ortgenai_subjects`).  What the runs show, each test one claim:

* the adapter refuses by name what the engine cannot take (settings without a search option, MTP on a model without MTP
  heads, a composite draft folder given as the control) and refuses versions it was not tested on;
* greedy: n-gram and draft-model speculation emit exactly the tokens of plain greedy decoding, row by row;
* n-gram at T = 1 keeps the plain path's draws: with one seed, the rows with and without speculation are the same in
  most rows (the sample-match rule with the request's own RNG, ``VerifyDeterministicProposal``; a row may differ where
  the verification pass's float32 logits differ from the one-token pass's);
* the oracle's floor: the logits of an answer in one pass differ from one-token passes by about 3e-5 (a mean TV per
  position of about 1e-5), far below the floor the oracle states;
* the engine's top-p is not the exact nucleus (both paths, no speculation needed): at T = 0.7, top-p 0.8 plain decoding
  emits tokens outside the smallest set of mass 0.8 - every one inside the nucleus of ``FindNucleus``' tail bound, which
  :mod:`specdec.adapters.ortgenai.engine_law` reproduces.

* per token under the matrix's mild repetition penalty (the per-token slice of issue 38): the engine without
  speculation against its own law, then, once that control PASSed, n-gram against it: PASS, with drafts kept.

The other statistical checks (per token against the engine's own logits, A/B speculation on vs off) are in
``peers/test_ortgenai_tokens.py`` (``make peers-slow``-style: ``-m "peers and slow"``).  About four and a half minutes
here (the slice about three of them).
"""

import json
import time
from pathlib import Path

import numpy as np
import pytest

from fixtures import ortgenai_subjects as subjects
from fixtures.vllm_subjects import PROMPT
from specdec import SamplingSettings
from specdec.adapters import _common
from specdec.adapters.ortgenai import FLOOR, OrtGenAIDecoder, OrtGenAIOracle, Speculation
from specdec.adapters.ortgenai.genai_decoder import load_model
from specdec.adapters.ortgenai.engine_law import engine_law, exact_top_p_size
from specdec.errors import PeerVersionError
from specdec.sampling_settings import UnsupportedSetting

pytestmark = pytest.mark.peers
REPORTS = Path(__file__).resolve().parent.parent / ".peers"
T1 = SamplingSettings(temperature=1.0)
TOP_P = SamplingSettings(temperature=0.7, top_p=0.8)


@pytest.fixture(scope="module")
def chat_prompt():
    from scripts.matrix.token_prompts import token_prompts

    return list(token_prompts()[0])  # the qa prompt, chat-templated


@pytest.mark.parametrize("field, value", [("min_p", 0.05), ("presence_penalty", 0.5), ("frequency_penalty", 0.5),
                                          ("logit_bias", {5: 1.0}), ("bad_words", ((5,),)), ("allowed_token_ids", (5, 6)),
                                          ("samples_per_request", 2), ("stop_token_ids", (5,))])
def test_settings_without_a_search_option_are_refused_by_name(field, value):
    with pytest.raises(UnsupportedSetting) as refused:
        OrtGenAIDecoder(subjects.model_dir(), settings=SamplingSettings(**{field: value}))
    assert refused.value.field == field and "onnxruntime-genai" in str(refused.value)
    OrtGenAIDecoder(subjects.model_dir(), settings=SamplingSettings(repetition_penalty=1.2, top_k=20, stop_token_ids=(subjects.EOS,)))


def test_mtp_misplaced_folders_and_untested_versions_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="MTP heads"):
        Speculation("mtp")
    with pytest.raises(ValueError, match="speculates whatever the options"):  # a composite speculates without options
        OrtGenAIDecoder(subjects.model_dir("spec_draft4"), settings=T1)
    with pytest.raises(ValueError, match="needs a composite folder"):
        OrtGenAIDecoder(subjects.model_dir(), settings=T1, speculation=Speculation("draft_model"))
    monkeypatch.setattr(_common, "installed_version", lambda names: (names[0], "0.17.0"))
    with pytest.raises(PeerVersionError, match="0.17.0"):
        load_model(subjects.model_dir(), 1)


def test_greedy_speculation_emits_the_plain_greedy_tokens_row_by_row(chat_prompt):
    greedy = SamplingSettings(temperature=0.0)
    prompts = [list(PROMPT), chat_prompt]
    reference = subjects.plain(greedy)(prompts, 16, 0)
    for method in ("ngram", "draft_model"):
        decoder = subjects.speculative(method, greedy)
        rows = decoder(prompts, 16, 0)
        counts = decoder.speculation_counts()
        print(f"\ngreedy, {method}: {counts}; rows equal: {[a == b for a, b in zip(rows, reference)]}")
        assert rows == reference, (method, rows, reference)
        assert counts["drafts"] > 0 and counts["draft_tokens"] > 0, counts


def test_ngram_at_t1_keeps_the_plain_paths_draws_seed_for_seed():
    rows, length = 16, 10
    plain = subjects.plain(T1)([list(PROMPT)] * rows, length, 7)
    ngram = subjects.speculative("ngram", T1)
    spec = ngram([list(PROMPT)] * rows, length, 7)
    same = sum(a == b for a, b in zip(plain, spec))
    counts = ngram.speculation_counts()
    print(f"\nn-gram at T=1, seed 7: {same} of {rows} rows equal to plain decoding's; {counts}")
    assert counts["drafts"] > 0 and 0 < counts["accepted_tokens"] < counts["draft_tokens"], counts
    assert same >= rows * 3 // 4, (same, plain, spec)  # measured 19 of 20 at seed 5


def test_the_oracles_one_pass_logits_are_within_its_floor_of_one_token_passes():
    oracle = OrtGenAIOracle(subjects.model_dir(), settings=T1)
    answers = subjects.plain(T1)([list(PROMPT)] * 4, 8, 3)
    measured = oracle.measure_floor(list(PROMPT), answers)
    print(f"\nonnxruntime-genai, one pass against one-token passes: {measured}")
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "ortgenai-oracle-floor.json").write_text(json.dumps({**measured, "oracle_floor": FLOOR}))
    assert measured["positions"] == sum(len(a) for a in answers) > 0
    assert measured["floor"] < FLOOR / 10 and measured["max_logit"] < 1e-3, measured


def test_kept_prompts_give_the_logits_a_fresh_generator_gives(chat_prompt):
    """The oracle keeps a generator per prompt (the checks ask their prompts in turn): each answer's logits, one pass or
    one token at a time, bitwise those of a fresh oracle."""
    prompts = [list(PROMPT), chat_prompt, list(PROMPT), chat_prompt]
    answers = [[2767, 2644, 2767], [2644] * 4, [2644, 2767], [2767, 2644, 2767, 2644, 2767]]
    for batch in (True, False):
        kept = OrtGenAIOracle(subjects.model_dir(), settings=T1, batch=batch)
        rows = [kept.logits(prompt, answer) for prompt, answer in zip(prompts, answers)]
        assert len(kept._generators) == 2
        for prompt, answer, got in zip(prompts, answers, rows):
            assert np.array_equal(got, OrtGenAIOracle(subjects.model_dir(), settings=T1, batch=batch).logits(prompt, answer)), (batch, answer)


def test_top_p_is_the_tail_bound_nucleus_not_the_exact_one(chat_prompt):
    started = time.perf_counter()
    oracle = OrtGenAIOracle(subjects.model_dir(), settings=TOP_P)
    prompts = [list(PROMPT), chat_prompt]
    answers = subjects.plain(TOP_P)(prompts * 6, 8, 11)
    outside_exact, tokens, outside_engine, mass = 0, 0, 0, []
    for prompt, answer in zip(prompts * 6, answers):
        rows = oracle.logits(prompt, answer)
        for t, token in enumerate(answer):
            history = prompt + answer[:t]
            law = engine_law(rows[t], history, TOP_P)
            full = engine_law(rows[t], history, SamplingSettings(temperature=0.7))
            order = np.argsort(-full, kind="stable")
            nucleus = order[:exact_top_p_size(full[order], 0.8)]
            tokens += 1
            outside_exact += int(token not in set(nucleus.tolist()))
            outside_engine += int(law[token] == 0)
            mass.append(1.0 - float(law[nucleus].sum()))
    print(f"\nT=0.7, top-p 0.8, plain decoding: {outside_exact} of {tokens} tokens outside the exact nucleus, "
          f"{outside_engine} outside the tail-bound nucleus; the engine's mass outside the exact nucleus: mean "
          f"{np.mean(mass):.3f}, largest {max(mass):.3f} ({time.perf_counter() - started:.0f} s)")
    assert outside_engine == 0  # every token inside the law the oracle states
    assert outside_exact > 0 and max(mass) > 0.05  # an exact top-p never emits them


@pytest.mark.slow  # the target as its own draft: two 30-layer models, about a minute here
def test_greedy_self_draft_keeps_its_drafts_and_emits_the_plain_greedy_tokens(chat_prompt):
    greedy = SamplingSettings(temperature=0.0)
    prompts = [list(PROMPT), chat_prompt]
    reference = subjects.plain(greedy)(prompts, 16, 0)
    decoder = subjects.speculative("self_draft", greedy)
    rows = decoder(prompts, 16, 0)
    counts = decoder.speculation_counts()
    print(f"\ngreedy, the target as its own draft: {counts}")
    assert rows == reference, (rows, reference)
    assert counts["accepted_tokens"] > counts["draft_tokens"] // 2, counts  # the draft is the target: most drafts kept


def test_a_row_that_stops_at_eos_ends_with_the_eos():
    """0.18.0 leaves the EOS out of ``get_sequence``; the adapter appends it (the Decoder Protocol: a short row ends at
    EOS).  The row seed is one that check_ab's draft-model A/B met: its plain row stops after two tokens."""
    from specdec.adapters.ortgenai import row_seeds

    seed = row_seeds(2463849633229951949, 16)[2]
    for decoder in (subjects.plain(T1), subjects.speculative("ngram", T1)):
        row = decoder._row(list(PROMPT), 6, seed)
        assert len(row) < 6 and row[-1] == subjects.EOS and subjects.EOS not in row[:-1], (decoder.name, row)


# The per-token slice of issue 38 (one penalty cell; the engine takes no processor): n-gram under the matrix's mild
# repetition penalty (1.1 at T = 0.7, top-p 0.8), the control first.  Not the penalty of 1.3: n-gram barely drafts
# under it (28 drafting steps, 1 drafted token kept, in the matrix's whole cell at TV 0.1).  On the " cat"/" dog"
# prompt, 64 answers of 8 tokens a check (2026-12-06, beside two vLLM cells): control PASS at a reached TV of 0.326 in
# 62 s, n-gram PASS at 0.334 in 108 s (116 drafting steps, 20 of 292 drafted tokens kept).
SLICE_SETTING, SLICE_N, SLICE_LENGTH = "mild repetition penalty", 64, 8


def test_ngram_under_a_repetition_penalty_follows_the_engines_own_law_once_its_control_passed(specdec_budget):
    """One per-token cell (``run_token_cell``): the control, then, only if it PASSes, n-gram against the same law."""
    from scripts.matrix.settings import SETTINGS
    from specdec.conformance.token_cells import run_token_cell

    cell = run_token_cell("onnxruntime-genai", "n-gram", SLICE_SETTING, SETTINGS[SLICE_SETTING], lambda s: subjects.build("ngram", s),
                          lambda s: OrtGenAIOracle(subjects.model_dir(), settings=s), prompts=[list(PROMPT)], length=SLICE_LENGTH,
                          tv=None, n=SLICE_N, seed=500, budget=specdec_budget, eos_token_id=subjects.EOS, rows_per_call=16)
    print(f"\n-> {cell.summary()}")
    assert cell.extra["control_verdict"] == "PASS", cell  # only then may the oracle judge the speculative engine
    assert cell.verdict == "PASS", cell
    assert cell.drafts > 0 and 0 < cell.accepted_tokens <= cell.draft_tokens, cell
