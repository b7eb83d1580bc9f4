"""A matrix cell judged per token after its control (issue 38): :func:`specdec.conformance.token_cells.run_token_cell`.

On the tiny Llama pair through transformers' real decoders and :class:`~specdec.adapters.hf_oracle.HFSettingsOracle`:
a correct speculative subject PASSes once its control PASSes; an oracle that does not state the engine's law is a
CONTROL FAIL and the subject is not judged; a wrong subject FAILs per token with its control PASSing; refusals name
who refused; the table says every column the issue asks for.
"""

from __future__ import annotations

import pytest

from fixtures.models import tiny_pair
from specdec import check_tokens
from specdec.adapters.hf import HFGenerateDecoder, HFPromptLookupDecoder
from specdec.adapters.hf_oracle import HFSettingsOracle
from specdec.conformance.token_cells import StoredControl, run_token_cell, token_counts, token_table
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting

PROMPT = [5, 7, 7, 5, 7, 5, 5, 7, 5, 7, 7, 7, 5, 5, 7, 5, 7, 5]  # the matrix's cat/dog pattern: lookup drafts at every step
SETTINGS = SamplingSettings(temperature=0.7, top_p=0.8, repetition_penalty=1.3)
TV, LENGTH = 0.2, 6


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # fixtures.plugin


def _cell(specdec_budget, build, oracle_of, **extra):
    return run_token_cell("transformers", "prompt lookup K=4", "repetition penalty", SETTINGS, build, oracle_of,
                          prompts=[PROMPT, [1, 2, 3]], length=LENGTH, tv=TV, seed=5, budget=specdec_budget, rows_per_call=64,
                          **extra)


def _lookup(target):
    def build(settings):
        return (HFPromptLookupDecoder(target, settings=settings, num_draft_tokens=4, max_ngram_size=3),
                HFGenerateDecoder(target, settings=settings))

    return build


def test_a_correct_subject_passes_after_its_control(specdec_budget):
    target = tiny_pair(0, vocab_size=8)[0]
    kept = []
    cell = _cell(specdec_budget, _lookup(target), lambda s: HFSettingsOracle(target, s), ab_n=200,
                 keep=lambda kind, report: kept.append(kind))
    assert cell.verdict == "PASS", cell
    assert kept == ["control", "tokens", "ab"]
    extra = cell.extra
    assert extra["control_verdict"] == "PASS" and extra["token_verdict"] == "PASS" and extra["ab_verdict"] in ("PASS", "INCONCLUSIVE")
    assert extra["tokens"] >= cell.samples and extra["drafted_tokens"] is None  # transformers does not mark its drafts
    assert cell.reached_tv <= TV and extra["oracle_floor"] == pytest.approx(1e-5)
    assert cell.drafts is None  # transformers keeps no speculation counters (engines that do fill drafts in)
    table = token_table([cell])
    for column in ("control", "per-token verdict", "per-token reached TV", "tokens", "drafted tokens", "A/B", "oracle floor", "time"):
        assert column in table.splitlines()[0], column
    print(table)


def test_a_stored_control_is_not_run_again_and_its_cell_says_which_run_made_it(specdec_budget):
    target = tiny_pair(0, vocab_size=8)[0]
    stored = StoredControl("PASS", 0.19, 4321, "the run of 2026-11-20 (commit abcdef123456)")

    def build(settings):
        subject, _ = _lookup(target)(settings)

        def reference(*args):
            raise AssertionError("the engine without speculation was asked again")

        return subject, reference

    kept = []
    cell = _cell(specdec_budget, build, lambda s: HFSettingsOracle(target, s), control_report=stored,
                 keep=lambda kind, report: kept.append(kind))
    assert cell.verdict == "PASS" and kept == ["tokens"], cell
    assert cell.extra["control_tokens"] == 4321 and cell.extra["control_shared"] and cell.extra["control_source"] == stored.source
    assert "PASS (0.190, shared from the run of 2026-11-20 (commit abcdef123456))" in token_table([cell])


def test_an_oracle_that_misstates_the_engine_is_a_control_fail_and_the_subject_is_not_judged(specdec_budget):
    target = tiny_pair(0, vocab_size=8)[0]
    judged = []
    wrong = SamplingSettings(temperature=1.0, repetition_penalty=1.3)  # the oracle of another temperature
    cell = _cell(specdec_budget, _lookup(target), lambda s: HFSettingsOracle(target, wrong),
                 keep=lambda kind, report: judged.append(kind))
    assert cell.verdict == "CONTROL FAIL", cell
    assert judged == ["control"] and "does not match the engine without speculation" in cell.detail
    assert "token_verdict" not in cell.extra


def test_a_wrong_subject_fails_per_token_while_its_control_passes(specdec_budget):
    target = tiny_pair(0, vocab_size=8)[0]

    def build(settings):  # the "speculative" subject samples at another temperature: a law bug
        hotter = SamplingSettings(temperature=1.0, top_p=0.8, repetition_penalty=1.3)
        return HFGenerateDecoder(target, settings=hotter), HFGenerateDecoder(target, settings=settings)

    reports = {}
    cell = _cell(specdec_budget, build, lambda s: HFSettingsOracle(target, s), keep=reports.__setitem__)
    assert cell.verdict == "FAIL" and cell.extra["control_verdict"] == "PASS" and cell.extra["token_verdict"] == "FAIL", cell
    tokens, drafted = token_counts(reports["tokens"])
    assert tokens == cell.extra["tokens"] > 0 and drafted is None
    assert cell.detail  # where the FAIL lives


def test_a_shared_control_is_judged_as_if_run_and_not_run_again(specdec_budget):
    """Methods of one engine share the control of a setting (the engine without speculation does not depend on the
    method): the second cell reuses the first's control report, runs only its subject, and says the control is shared."""
    target = tiny_pair(0, vocab_size=8)[0]
    first = {}
    _cell(specdec_budget, _lookup(target), lambda s: HFSettingsOracle(target, s), keep=first.__setitem__)
    assert first["control"].verdict == "PASS"

    def build(settings):  # a wrong subject: its verdict must still be FAIL under the shared control
        hotter = SamplingSettings(temperature=1.0, top_p=0.8, repetition_penalty=1.3)
        return HFGenerateDecoder(target, settings=hotter), HFGenerateDecoder(target, settings=settings)

    second = {}
    cell = _cell(specdec_budget, build, lambda s: HFSettingsOracle(target, s), keep=second.__setitem__,
                 control_report=first["control"])
    assert list(second) == ["tokens"] and cell.verdict == "FAIL", (list(second), cell)
    assert cell.extra["control_shared"] is True and cell.extra["control_reached_tv"] == first["control"].reached_tv
    assert "PASS (" in token_table([cell]) and ", shared)" in token_table([cell])


class _CountingPlain(HFGenerateDecoder):
    """The engine without speculation, keeping speculation counters that stay at zero - as llama-server's plain
    server does (its ``timings`` report ``draft_n`` 0)."""

    def speculation_counts(self):
        return {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}


def test_a_control_that_counts_no_drafts_passes_and_its_subject_is_judged(specdec_budget):
    """The control is the engine *without* speculation: that it verified no draft is what it should do, not a reason
    to call it INCONCLUSIVE about speculation (llama-server's plain server, 2026-11-28: CONTROL INCONCLUSIVE at a
    reached TV of 0.030 with every check passing, before ``check_tokens(speculating=False)``)."""
    target = tiny_pair(0, vocab_size=8)[0]

    def build(settings):
        return (HFPromptLookupDecoder(target, settings=settings, num_draft_tokens=4, max_ngram_size=3),
                _CountingPlain(target, settings=settings))

    kept = {}
    cell = _cell(specdec_budget, build, lambda s: HFSettingsOracle(target, s), keep=kept.__setitem__)
    control = kept["control"]
    assert control.verdict == "PASS" and control.speculation is None, control.format()
    assert any("run without speculation (a control)" in note and "0 drafts" in note for note in control.notes), control.notes
    assert cell.extra["control_verdict"] == "PASS" and cell.verdict == "PASS", cell


def test_a_subject_that_counts_no_drafts_is_still_inconclusive_about_speculation(specdec_budget):
    """Only the control is excused: the same decoder judged as a subject says nothing about speculation."""
    target = tiny_pair(0, vocab_size=8)[0]
    report = check_tokens(_CountingPlain(target, settings=SETTINGS), HFSettingsOracle(target, SETTINGS), [PROMPT],
                          length=LENGTH, tv=TV, seed=5, budget=specdec_budget)
    assert report.verdict == "INCONCLUSIVE" and "verified no draft" in report.summary(), report.format()
    with pytest.raises(TypeError, match="speculating must be a bool, got 'no'"):
        check_tokens(_CountingPlain(target, settings=SETTINGS), HFSettingsOracle(target, SETTINGS), [PROMPT], speculating="no")


def test_refusals_name_who_refused():
    target = tiny_pair(0, vocab_size=8)[0]

    def refusing_oracle(settings):
        raise UnsupportedSetting("an oracle", "presence_penalty", 1.5, "not restated")

    cell = run_token_cell("e", "m", "s", SETTINGS, _lookup(target), refusing_oracle, prompts=[PROMPT], length=2, tv=0.1, seed=0)
    assert cell.verdict == "REFUSED" and cell.detail.startswith("by the oracle:") and "presence_penalty" in cell.detail

    def refusing_engine(settings):
        raise UnsupportedSetting("an engine", "min_p", 0.2, "no such sampler")

    cell = run_token_cell("e", "m", "s", SETTINGS, refusing_engine, refusing_oracle, prompts=[PROMPT], length=2, tv=0.1, seed=0)
    assert cell.verdict == "REFUSED" and cell.detail.startswith("by the adapter:") and "min_p" in cell.detail


def test_a_subject_that_refuses_or_fails_one_answer_ends_its_cell_before_the_control():
    from specdec.errors import EngineRefusal, ServerRequestError

    target = tiny_pair(0, vocab_size=8)[0]
    reference = HFGenerateDecoder(target, settings=SETTINGS)
    asked = []

    def reference_counted(prompts, max_new_tokens, seed):  # the control would call the engine without speculation
        asked.append(len(prompts))
        return reference(prompts, max_new_tokens, seed)

    def oracle_of(settings):
        return HFSettingsOracle(target, settings)

    def failing(error):
        def subject(prompts, max_new_tokens, seed):
            raise error
        return lambda settings: (subject, reference_counted)

    lengths = []

    def answering(settings):  # the ask is as long as the checks' answers (vLLM refuses min_tokens 2 at max_tokens 1)
        def subject(prompts, max_new_tokens, seed):
            lengths.append(max_new_tokens)
            raise RuntimeError("asked")
        return subject, reference_counted

    cell = run_token_cell("e", "m", "s", SETTINGS, answering, oracle_of, prompts=[PROMPT], length=2, tv=0.1, seed=0)
    assert lengths == [2] and cell.verdict == "ERROR" and cell.detail.endswith("RuntimeError: asked"), (lengths, cell)
    cases = [(ServerRequestError("request 1: HTTP 400 Bad Request: 'logit_bias not yet supported'"), "REFUSED",
              "by the engine: HTTP 400 Bad Request: 'logit_bias not yet supported'"),
             (EngineRefusal("an engine", "no min_p with speculation"), "REFUSED", "by the engine: (an engine): no min_p"),
             (UnsupportedSetting("an adapter", "bad_words", [[1]], "not mapped"), "REFUSED", "by the adapter:"),
             (RuntimeError("engine core died\ntraceback"), "ERROR",
              "one answer asked of the subject before its control: RuntimeError: engine core died")]
    for error, verdict, detail in cases:
        cell = run_token_cell("e", "m", "s", SETTINGS, failing(error), oracle_of, prompts=[PROMPT], length=2, tv=0.1, seed=0)
        assert (cell.verdict, cell.detail[:len(detail)]) == (verdict, detail), (error, cell)
    assert asked == [], f"the control ran {len(asked)} calls for a subject that could not answer one token"


class _StopsAt(HFPromptLookupDecoder):
    """The speculative subject, Ctrl-C'd at its ``stop_at``-th call (as a terminal's Ctrl-C reaches a running check)."""

    def __init__(self, *args, stop_at: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stop_at, self.calls = stop_at, 0

    def __call__(self, prompts, max_new_tokens, seed):
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return super().__call__(prompts, max_new_tokens, seed)


def test_a_cell_stopped_midway_continues_from_its_checkpoints_and_ends_as_the_uninterrupted_one(specdec_budget, tmp_path):
    """A long cell (hours at a per-token TV of 0.03) survives its process: each check's counts go to the cell's folder
    as they are drawn; the cell run again with the folder draws only what was left, the control not at all."""
    import json

    target = tiny_pair(0, vocab_size=8)[0]
    oracle_of = lambda s: HFSettingsOracle(target, s)  # noqa: E731
    whole = _cell(specdec_budget, _lookup(target), oracle_of, checkpoints=tmp_path / "whole")
    reports: dict = {}
    plain_calls = []  # the checks kept before each call of the engine without speculation

    def build(stop_at):
        def made(settings):
            plain = HFGenerateDecoder(target, settings=settings)

            class Counted(HFGenerateDecoder):
                def __call__(self, *args):
                    plain_calls.append(tuple(reports))
                    return plain(*args)

            return (_StopsAt(target, settings=settings, num_draft_tokens=4, max_ngram_size=3, stop_at=stop_at),
                    Counted(target, settings=settings))
        return made

    folder = tmp_path / "stopped"
    # call 1 is the ask before the control, call 2 the subject's first chunk: Ctrl-C at its second
    stopped = _cell(specdec_budget, build(3), oracle_of, ab_n=100, checkpoints=folder, keep=reports.__setitem__)
    assert stopped.verdict == "INTERRUPTED" and list(reports) == ["control", "tokens"], (stopped, list(reports))  # no A/B
    assert reports["tokens"].verdict == "INTERRUPTED" and plain_calls and set(plain_calls) == {()}  # the control ran
    saved = {kind: json.loads((folder / f"{kind}.json").read_text()) for kind in ("control", "tokens")}
    assert saved["control"]["complete"] and not saved["tokens"]["complete"] and not (folder / "ab.json").exists()
    reports.clear(), plain_calls.clear()
    resumed = _cell(specdec_budget, build(0), oracle_of, checkpoints=folder, keep=reports.__setitem__)
    assert (resumed.verdict, resumed.samples, resumed.reached_tv, resumed.extra["tokens"]) == \
        (whole.verdict, whole.samples, whole.reached_tv, whole.extra["tokens"]), (whole, resumed)
    assert resumed.extra["control_tokens"] == whole.extra["control_tokens"]
    assert plain_calls == [], plain_calls  # the control came back whole from its checkpoint: not run again
    assert any("resumed from a checkpoint" in note for note in reports["tokens"].notes), reports["tokens"].notes
    assert any("resumed from a checkpoint" in note for note in reports["control"].notes), reports["control"].notes
    assert resumed.seconds >= saved["tokens"]["seconds"] + saved["control"]["seconds"]


def test_a_cells_checkpoints_are_a_folder_and_name_each_checks_file():
    target = tiny_pair(0, vocab_size=8)[0]
    args = dict(prompts=[PROMPT], length=2, tv=0.1, seed=0)
    with pytest.raises(ValueError, match=r"checkpoints='.*' names each check's checkpoint; \['resume'\] may not be given"):
        run_token_cell("e", "m", "s", SETTINGS, _lookup(target), lambda s: HFSettingsOracle(target, s), checkpoints="x",
                       resume="y.json", **args)
    with pytest.raises(TypeError, match="checkpoints must be a folder's path or None, got int"):
        run_token_cell("e", "m", "s", SETTINGS, _lookup(target), lambda s: HFSettingsOracle(target, s), checkpoints=3, **args)
