"""mistral.rs 0.6.0's checks (issue 39): speculation on vs off (``check_ab``) and per token (control first), at T = 1 and
T = 0.7 with top-p 0.8, and a finer control of the engine without a draft at T = 1.

Runs in ``.venv-mistralrs``.  The rule (specdec/adapters/mistralrs/mistralrs_decoder.py, from 0.6.0's source) verifies
drafts by the *argmax* of target and draft, so with a draft model every answer at T = 1 is the greedy one: both checks
are expected to FAIL, the control (the engine without a draft against transformers' float32 copy of the same weights,
:class:`specdec.adapters.hf_oracle.HFSettingsOracle`: 0.6.0 reports the log-probability of the token it emits, not the
law it drew from) to PASS at the cell's TV.

Each Runner runs in a child process of its own (:class:`MistralRsProcessDecoder`): in one process the speculative Runner
panics when the other answers between its requests, and its requests grow slower with each it served, so the
speculative child is replaced every ``PER_PROCESS`` requests.  A fresh child replays the engine's one RNG stream, which
would make the rows of a *sampling* engine repeat with that period; so each test also asserts that every row of every
child that answered several (a child answers ``PER_PROCESS`` rows at a time: :class:`Recorder`) is the greedy answer (one child's rows
are distinct draws of one stream: for a sampler, 8 greedy answers in a row on the story prompt have probability about
0.1 ** 8).

The prompt: "Once upon a time, there was a" (a flat next-token law: its top token about 0.1), where an argmax rule
shows in few answers.  All ``slow`` (``-m "peers and slow"``): a speculative request takes 3-30 s here.
"""

import os
import time

import pytest

import specdec
from fixtures.token_cell_log import keep_token_cell
from specdec.adapters.mistralrs.mistralrs_process import MistralRsProcessDecoder
from specdec.conformance.token_cells import run_token_cell
from specdec.decoding.models import GGUF_FILE, _gguf_dir

pytestmark = pytest.mark.peers
GAMMA = 2
PER_PROCESS = 8  # requests per speculative child
STORY = [6403, 1980, 253, 655, 28, 665, 436, 253]
T1 = specdec.SamplingSettings(temperature=1.0)
T07 = specdec.SamplingSettings(temperature=0.7, top_p=0.8)
LENGTH = 2  # tokens per answer in the per-token cell, every one tested (at 4, a control answer drew ' \ufffd', a string
# many ids decode to, after 120 answers, and ERRORed; the adapter now resolves such a string from the n-best list)
N_TOKENS = 160  # answers per check of the per-token cell (control and subject; the reached TV in the report)
AB_N = 24  # answers per side of the A/B check: 24 greedy first pairs vs about 1 of them at T = 1
ROWS_PER_CALL = 8
CONTROL_N = 2048  # answers of the finer control (no draft, T = 1): per-token TV 0.087, 12-17 minutes here
# SPECDEC_MISTRALRS_CONTROL_TV=0.03: the finer control planned for that per-token TV instead (about 17,000 answers,
# 2-2.5 hours here)
CONTROL_TV = os.environ.get("SPECDEC_MISTRALRS_CONTROL_TV")


def gguf() -> str:
    return str(_gguf_dir() / GGUF_FILE)


class Recorder:
    """A decoder that records each row with the number of the child that answered it (the replay guard).

    ``batch_length``: for rows of this many tokens, the child is asked for ``PER_PROCESS`` rows of the prompt at once
    and they are handed out in order (check_tokens asks 2 rows a call, which would give a child - and a replay of the
    stream - per 2 rows): the rows are the engine's successive answers, as a child living across calls would give."""

    def __init__(self, decoder: MistralRsProcessDecoder, batch_length: int | None = None) -> None:
        self.decoder, self.rows, self.batch_length, self._held = decoder, [], batch_length, {}
        self.name, self.settings, self.seeds_honoured = decoder.name, decoder.settings, False

    @property
    def eos_token_ids(self):
        return self.decoder.eos_token_ids

    def _ask(self, prompts, max_new_tokens, seed):
        before = self.decoder.processes_started
        out = self.decoder(prompts, max_new_tokens, seed)  # a child per PER_PROCESS rows of the call, in order
        self.rows += [(before + 1 + i // PER_PROCESS, row) for i, row in enumerate(out)]
        return out

    def __call__(self, prompts, max_new_tokens, seed):
        if max_new_tokens != self.batch_length:
            return self._ask(prompts, max_new_tokens, seed)
        out = []
        for prompt in prompts:
            held = self._held.setdefault(tuple(prompt), [])
            if not held:
                held += self._ask([list(prompt)] * PER_PROCESS, max_new_tokens, seed)
            out.append(held.pop(0))
        return out


@pytest.fixture(scope="module")
def plain():
    with MistralRsProcessDecoder(gguf(), settings=T1, name="mistral.rs 0.6.0, no draft, T=1") as decoder:
        yield decoder


@pytest.fixture(scope="module")
def greedy(plain):
    return plain.with_settings(specdec.SamplingSettings(temperature=0.0))([STORY], LENGTH, 0)[0]


def spec_decoder(batch_length: int | None = None, settings: specdec.SamplingSettings = T1) -> Recorder:
    return Recorder(MistralRsProcessDecoder(gguf(), settings=settings, gamma=GAMMA, requests_per_process=PER_PROCESS,
                                            name=f"mistral.rs 0.6.0, draft model (= target) gamma={GAMMA}, {settings.label}"),
                    batch_length)


def assert_children_greedy(subject: Recorder, greedy: list[int]) -> None:
    """Every row of every child that answered several (each such child's rows: distinct draws of one stream) is the
    greedy answer, and one child answered ``PER_PROCESS`` rows."""
    children = {}
    for child, row in subject.rows:
        children.setdefault(child, []).append(row)
    several = {child: rows for child, rows in children.items() if len(rows) > 1}
    print(f"\ngreedy {greedy}; rows of the speculative children that answered several: {several}")
    assert max(map(len, several.values())) == PER_PROCESS, children
    assert all(row == greedy[:len(row)] for rows in several.values() for row in rows), several


def test_requests_per_process_is_checked():
    with pytest.raises(ValueError, match=r"requests_per_process must be an integer >= 1, got 0"):
        MistralRsProcessDecoder(gguf(), gamma=GAMMA, requests_per_process=0)


@pytest.mark.slow
@pytest.mark.parametrize("label, settings, seed", [("T=1", T1, 3900), ("T=0.7 top-p 0.8", T07, 3903)], ids=["t1", "t07"])
def test_per_token_the_control_passes_and_the_draft_model_fails(plain, greedy, specdec_budget, label, settings, seed):
    """At T = 1 and at T = 0.7 top-p 0.8: the control (no draft, the same settings) PASSes against transformers' copy, the
    draft model FAILs (argmax verification: every speculative row is the greedy answer)."""
    from fixtures.models import smollm2
    from specdec.adapters.hf_oracle import HFSettingsOracle

    subject = spec_decoder(batch_length=LENGTH, settings=settings)
    reference = plain.with_settings(settings, name=f"mistral.rs 0.6.0, no draft, {settings.label}")
    started = time.perf_counter()
    try:
        cell = run_token_cell("mistral.rs 0.6.0", f"draft model gamma={GAMMA}", label, settings,
                              lambda settings: (subject, reference), lambda settings: HFSettingsOracle(smollm2()[0], settings),
                              prompts=[STORY], length=LENGTH, tv=None, n=N_TOKENS, seed=seed, budget=specdec_budget,
                              eos_token_id=plain.eos_token_ids[0], rows_per_call=ROWS_PER_CALL,
                              keep=lambda kind, report: keep_token_cell("mistralrs", f"draft {label}", kind, report))
    finally:
        subject.decoder.close()
    print(f"\ncell: {cell.verdict}, control {cell.extra.get('control_verdict')} at TV {cell.extra.get('control_reached_tv')}, "
          f"{cell.extra.get('control_tokens')} control tokens; per token {cell.extra.get('token_verdict')} after "
          f"{cell.extra.get('tokens')} tokens; {cell.detail}; {subject.decoder.processes_started} speculative children, "
          f"{time.perf_counter() - started:.0f} s")
    assert cell.extra["control_verdict"] == "PASS", cell  # only then may the oracle judge the speculative engine
    assert_children_greedy(subject, greedy)
    assert cell.verdict == "FAIL" and cell.extra["token_verdict"] == "FAIL", cell


@pytest.mark.slow
def test_ab_at_t1_the_draft_model_fails(plain, greedy):
    subject = spec_decoder()
    started = time.perf_counter()
    try:
        report = specdec.check_ab(subject, plain, [STORY], length=2, max_new_tokens=2, n=AB_N, tv=None, seed=3901,
                                  eos_token_id=plain.eos_token_ids[0], rows_per_call=ROWS_PER_CALL, family_alpha=1e-6,
                                  name=f"mistral.rs 0.6.0 draft model (= target) gamma={GAMMA} vs no draft, T=1 "
                                       "(expected FAIL: argmax verification)")
    finally:
        subject.decoder.close()
    print(f"\n{report.format()}\n-> {report.verdict}, n = {AB_N} per side, reached TV {report.reached_tv}, "
          f"{subject.decoder.processes_started} speculative children, {time.perf_counter() - started:.0f} s")
    keep_token_cell("mistralrs", "draft T=1", "ab", report)
    assert_children_greedy(subject, greedy)
    assert report.verdict == "FAIL", report.format()


@pytest.mark.slow
def test_finer_control_at_t1_passes(plain, specdec_budget):
    """The engine without a draft at T = 1 against transformers' float32 copy, on CONTROL_N answers (13 times the cell's
    control; or planned for SPECDEC_MISTRALRS_CONTROL_TV): the oracle's agreement with the engine at a finer TV than the
    cell's (its control reached 0.43)."""
    from fixtures.models import smollm2
    from specdec.adapters.hf_oracle import HFSettingsOracle
    from specdec.conformance.token_check import check_tokens

    plan = dict(n=None, tv=float(CONTROL_TV)) if CONTROL_TV else dict(n=CONTROL_N, tv=None)
    asked = f"planned for TV {CONTROL_TV}" if CONTROL_TV else f"{CONTROL_N} answers"
    started = time.perf_counter()
    report = check_tokens(plain, HFSettingsOracle(smollm2()[0], T1), [STORY], length=LENGTH, **plan, seed=3902,
                          budget=specdec_budget, eos_token_id=plain.eos_token_ids[0], rows_per_call=ROWS_PER_CALL,
                          speculating=False, name=f"mistral.rs 0.6.0, no draft, T=1: control per token, {asked}")
    keep_token_cell("mistralrs", "control T=1 finer", "control", report)
    print(f"-> {report.verdict}, {asked}: {report.samples} answers, reached TV {report.reached_tv}, "
          f"{time.perf_counter() - started:.0f} s")
    assert report.verdict == "PASS", report.format()
