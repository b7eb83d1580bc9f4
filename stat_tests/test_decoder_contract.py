"""Decoder checks as real engines behave (issue: EOS, full blocks, messages that show what happened,
rows that are copies), each through the Python call and, where a user would, the CLI."""

import json

import pytest

import specdec as sd
from fixtures import subjects
from specdec.cli import main

PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]
CLI = ["--kind", "decoder", "--target", "fixtures.subjects:tiny_target", "--prompts", "1,2,3;4,5,4,5,4", "--device", "cpu"]


def test_a_decoder_that_pads_after_eos_passes(specdec_budget):
    report = sd.check_decoder(subjects.eos_padding_decoder, subjects.tiny_target(), PROMPTS, length=3, eos_token_id=subjects.EOS,
                              tv=0.05, budget=specdec_budget, name="EOS-padded loop")
    assert report.verdict == "PASS", report.format()
    assert any("what follows a row's first EOS is ignored" in note for note in report.notes)


@pytest.mark.parametrize("subject", ["eos_decoder", "eos_padding_decoder"])
def test_eos_on_the_cli(subject, tmp_path, capsys, specdec_budget):
    entry = specdec_budget.allot(3, f"CLI {subject} --eos")  # two prompts and F28
    path = tmp_path / "r.json"
    argv = ["check", f"fixtures.subjects:{subject}", *CLI, "--length", "3", "--eos", str(subjects.EOS), "--tv", "0.05",
            "--family-alpha", repr(entry.alpha), "--json", str(path)]
    assert main(argv) == 0, capsys.readouterr().out
    assert json.loads(path.read_text())["subjects"][0]["verdict"] == "PASS"


def test_without_eos_a_decoder_that_stops_early_broke_its_protocol(capsys):
    """Rows shorter than asked with no EOS in them are not a law the check can judge but a broken Protocol:
    ERROR naming the call (issue 31; it was a FAIL on support)."""
    argv = ["check", "fixtures.subjects:eos_decoder", *CLI, "--length", "3", "--tv", "0.1", "--json", "/dev/null"]
    assert main(argv) == 3
    out = capsys.readouterr().out
    assert "ERROR: the subject broke its Protocol during a call of 32 rows (16 per prompt x 2), max_new_tokens=5" in out
    assert "tokens for max_new_tokens=5, with no EOS (no eos_token_id given to the check)" in out and "0 FAIL, 1 ERROR" in out


class _OutOfVocabulary:
    """The tiny loop, with every token of the second row moved out of the target's vocabulary (V = 8)."""

    def __call__(self, prompts, max_new_tokens, seed):
        rows = subjects.my_decoder(prompts, max_new_tokens, seed)
        return [row if i != 1 else [t + 8 for t in row] for i, row in enumerate(rows)]


def test_ids_outside_the_vocabulary_and_short_rows_are_errors_in_both_checks():
    target = subjects.tiny_target()
    report = sd.check_decoder(_OutOfVocabulary(), target, PROMPTS, length=2, n=200, max_new_tokens=2)
    assert report.verdict == "ERROR" and report.error["kind"] == "contract", report.format()
    assert "outside the vocabulary [0, 8)" in report.summary() and "max_new_tokens=2" in report.summary()
    ab = sd.check_ab(_OutOfVocabulary(), subjects.my_decoder, PROMPTS, length=2, n=200, max_new_tokens=2, vocab_size=8)
    assert ab.verdict == "ERROR" and "a call of the subject" in ab.summary() and "outside the vocabulary" in ab.summary()
    short = lambda prompts, max_new_tokens, seed: [row[:1] for row in subjects.my_decoder(prompts, max_new_tokens, seed)]  # noqa: E731
    cut = sd.check_ab(subjects.my_decoder, short, PROMPTS, length=2, n=200, max_new_tokens=2)
    assert cut.verdict == "ERROR" and "a call of the reference" in cut.summary() and "with no EOS" in cut.summary(), cut.summary()


def test_full_blocks_are_verified_at_the_tested_positions(specdec_budget):
    """A verifier that tests every draft of a block against one uniform is lossless when the block has
    one draft.  Our loop shrinks K near max_new_tokens: asked for exactly L = 2 tokens it drafts 1 and
    then 0, and the bug is invisible; asked for L + K (the default) it verifies full blocks and fails."""
    target = subjects.tiny_target()
    exact = sd.check_decoder(subjects.shared_uniform_decoder, target, PROMPTS, length=2, max_new_tokens=2, tv=0.03,
                             budget=specdec_budget, name="shared uniform, 2 of 2 tokens")
    assert exact.verdict == "PASS", exact.format()
    full = sd.check_decoder(subjects.shared_uniform_decoder, target, PROMPTS, length=2, tv=0.03,
                            budget=specdec_budget, name="shared uniform, 2 of 4 tokens")
    assert full.verdict == "FAIL", full.format()
    assert any("asked for 4 new tokens per row; the first 2 are tested" in note for note in full.notes)


def test_rows_that_are_copies_show_in_the_independence_diagnostic():
    report = sd.check_decoder(subjects.one_seed_decoder, subjects.tiny_target(), [[1, 2, 3]], length=2, n=600, max_new_tokens=2)
    independence = report.checks[0].details["independence"]
    assert independence["dependent"] and independence["z"] > 20, independence
    assert "copies of one random stream" in report.format()
    lossless = sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), [[1, 2, 3]], length=2, n=600, max_new_tokens=2)
    assert abs(lossless.checks[0].details["independence"]["z"]) < 6


def test_an_impossible_sequence_is_named_and_located():
    """Greedy target (one sequence per prompt): a decoder whose second token is off for one prompt
    leaves the support; the failure names the sequences it emitted and the prefix where they left."""
    from specdec.decoding import ModelDraft, SpeculativeDecoder
    from specdec.laws.target import ModelLaw

    model, draft = subjects._pair()
    greedy = sd.SamplingConfig(temperature=0)
    loop = SpeculativeDecoder(model, ModelDraft(draft), num_draft_tokens=2, sampling=greedy)

    def off_by_one(prompts, max_new_tokens, seed):
        rows = loop(prompts, max_new_tokens, seed)
        return [row[:1] + [(row[1] + 1) % 8] + row[2:] if list(prompt) == PROMPTS[1] else row for prompt, row in zip(prompts, rows)]

    report = sd.check_decoder(off_by_one, ModelLaw(model, greedy), PROMPTS, length=2, n=50, max_new_tokens=2)
    failed = [c for c in report.checks if not c.passed]
    assert report.verdict == "FAIL" and len(failed) == 1 and failed[0].name.startswith("prompt 1"), report.format()
    emitted = failed[0].details["outside_support"][0]
    assert emitted[1] == 50 and f"outside the support (e.g. {emitted[0]} x50)" in failed[0].describe()
    assert failed[0].location.startswith("position 1 ") and f"prefix [{emitted[0][0]}]" in failed[0].location, failed[0].location
