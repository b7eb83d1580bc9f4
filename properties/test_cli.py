"""The command line: `specdec compare` numbers and plot, `specdec check` on one level, and every bad
argument refused in one line (exit 2) before any work runs."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdec.cli import main


def test_compare_reports_spec_section_3(capsys):
    assert main(["compare"]) == 0
    out = capsys.readouterr().out
    assert "token              1   0.7000   0.7000   0.0000" in out
    assert "K-SEQ              2   0.7914   0.8600   0.0686" in out
    assert "MSS iid            3   0.8080   0.9880   0.1800" in out
    assert "block chain        2   1.2500   1.3100   0.0600" in out  # token chain: 1.19 (F26); block: 1.25 (F20)


def test_compare_writes_a_png_for_a_catalogue_case_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the catalogue is library data: no repository on the path needed
    path = tmp_path / "schemes.png"
    assert main(["compare", "--case", "spec_section4", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_check_one_level_writes_one_json_object(tmp_path, capsys):
    path = tmp_path / "report.json"
    assert main(["check", "--only", "multidraft", "--tv", "0.1", "--json", str(path), "--device", "cpu"]) == 0
    data = json.loads(path.read_text())
    assert data["verdict"] in ("PASS", "INCONCLUSIVE") and len(data["subjects"]) == 2
    assert {"verdict", "summary", "asked_tv", "reached_tv", "seed", "versions", "checks"} <= set(data["subjects"][0])
    out = capsys.readouterr().out
    assert "-- specdec verify_kseq (kseq: SpecTr K-SEQ over k i.i.d. drafts (F11-F13)) (multi-draft verifier) on cpu" in out  # the plan
    assert "2 subjects:" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "--target", "1,x"], "--target must be comma-separated numbers"),
        (["compare", "--target", "1,2"], "--target has 2 entries but the default --draft (the reference example's) has 3"),
        (["compare", "--draft", "0,0,0"], "not all zero"),
        (["compare", "--case", "nope"], "unknown --case 'nope'"),
        (["compare", "--case", ""], "unknown --case ''"),
        (["compare", "--case", "equal", "--target", "1,1"], "give --case or --target/--draft, not both"),
        (["compare", "--max-drafts", "0"], "--max-drafts must be >= 1"),
        (["compare", "--draft-tokens", "50"], "--draft-tokens 50 needs V^K = 3^50 prefixes"),
        (["compare", "--plot", "/missing/dir/x.png"], "--plot '/missing/dir/x.png': the folder /missing/dir does not exist"),
        (["check", "--tv", "2"], "--tv must be in (0, 1)"),
        (["check", "--tv", "nan"], "--tv must be in (0, 1)"),
        (["check", "--hf-budget", "0"], "--hf-budget must be a positive number of seconds"),
        (["check", "--hf-budget", "nan"], "--hf-budget must be a positive number of seconds"),
        (["check", "--budget", "-1"], "--budget must be a positive number of seconds"),
        (["check", "--json", "/missing/x.json"], "--json '/missing/x.json': the folder /missing does not exist"),
        (["check", "--device", "tpu9"], "--device must name a torch device"),
        (["check", "--seed", "-1"], "--seed must be in [0, 2**63 - 1], got -1"),
    ],
)
def test_bad_arguments_are_one_line_errors_before_any_work(capsys, argv, message):
    started = time.perf_counter()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert time.perf_counter() - started < 5  # refused before sampling anything


def test_help_is_fast():
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "specdec", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "check" in done.stdout and "compare" in done.stdout
    assert time.perf_counter() - started < 3


def test_check_any_subject_passes_fails_and_locates(capsys):
    assert main(["check", "fixtures.subjects:my_verifier", "--tv", "0.1", "--device", "cpu", "--json", ""]) == 2  # empty --json refused
    assert main(["check", "fixtures.subjects:bonus_row_bug", "--tv", "0.1", "--device", "cpu", "--json", "/dev/null"]) == 1
    out = capsys.readouterr().out
    assert "FAIL (stopped early at look " in out and "): chain V=4 K=2 L=3: first 3 tokens vs chain law (F35)" in out  # P4
    assert "where: position 2" in out
    assert "1 subject: 0 PASS, 0 INCONCLUSIVE, 1 FAIL" in out


def test_check_a_decoder_subject_against_a_target_factory(capsys):
    argv = ["check", "fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "fixtures.subjects:tiny_target",
            "--prompts", "1,2,3;4,5", "--length", "1", "--tv", "0.1", "--json", "/dev/null"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "prompt 1 (len 2): first 1 of 3 tokens (F35)" in out and "1 subject: 1 PASS" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nope.mod:x"], "SUBJECT 'nope.mod:x': cannot import 'nope.mod': ModuleNotFoundError: No module named 'nope'"),
        (["fixtures.subjects:nothing"], "SUBJECT 'fixtures.subjects:nothing': 'fixtures.subjects' has no attribute 'nothing'"),
        (["fixtures.subjects"], "SUBJECT must look like package.module:attribute"),
        (["fixtures.subjects:tiny_target"], "fixtures.subjects:tiny_target is not a TokenVerifier (specdec.protocols.TokenVerifier"),
        (["fixtures.subjects:_DEFAULT", "--kind", "multidraft"], "has no attribute"),
        (["fixtures.subjects:my_verifier", "--kind", "decoder", "--target", "fixtures.subjects:tiny_target", "--prompts", "1"],
         "is not a Decoder (specdec.protocols.Decoder, called as (prompts, max_new_tokens, seed))"),
        (["fixtures.subjects:my_decoder", "--kind", "decoder"], "--kind decoder needs --target"),
        (["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "a:b"], "--kind decoder needs --prompts"),
        (["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "a:b", "--prompts", "1,x"], "--prompts must be"),
        (["fixtures.subjects:my_verifier", "--prompts", "1"], "--prompts is for --kind decoder"),
        (["fixtures.subjects:my_verifier", "--only", "verifiers"], "--only picks among the embedded defaults"),
        (["--kind", "decoder"], "--kind, --target, --prompts (--prompt, --prompts-file, --tokenizer, --chat), --eos, --max-new-tokens, "
                                "--reference, --reference-server and --n need a SUBJECT"),
        (["--reference", "fixtures.subjects:autoregressive_decoder"], "need a SUBJECT (package.module:attr) or --server"),
        (["--server", "http://127.0.0.1:9"], "--server needs --model"),
        (["fixtures.subjects:my_decoder", "--kind", "decoder", "--prompts", "1,2", "--target", "fixtures.subjects:tiny_target",
          "--reference", "fixtures.subjects:autoregressive_decoder"], "not both"),
    ],
)
def test_a_bad_subject_is_one_line_naming_the_protocol(capsys, argv, message):
    assert main(["check", *argv, "--json", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_the_console_script_checks_a_module_of_the_working_directory(tmp_path):
    script = Path(sys.executable).parent / "specdec"
    if not script.exists():
        pytest.skip("specdec is not installed as a console script in this environment")
    (tmp_path / "theirs.py").write_text(
        "import specdec as sd\n"
        "def verifier(draft_tokens, draft_probs, target_probs, generator):\n"
        "    return sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator)\n"
    )
    done = subprocess.run([str(script), "check", "theirs:verifier", "--tv", "0.2", "--device", "cpu", "--json", "r.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "PASS"


def test_two_decoders_are_checked_against_each_other(tmp_path, capsys):
    """--reference: the two-sample check (H1-H3) between two importable decoders, with speculation shown."""
    out = tmp_path / "ab.json"
    code = main(["check", "fixtures.subjects:my_decoder", "--kind", "decoder", "--reference", "fixtures.subjects:autoregressive_decoder",
                 "--prompts", "1,2,3", "--length", "1", "--n", "400", "--tv", "0.9", "--json", str(out)])
    document = json.loads(out.read_text())
    report = document["subjects"][0]
    assert code == 0 and report["level"] == "A/B (two samples)" and report["verdict"] in ("PASS", "INCONCLUSIVE"), capsys.readouterr().out
    assert report["checks"][0]["n"] == 800 and report["speculation"]["drafts"] > 0


def test_compare_on_subnormal_laws_answers(capsys):
    """Laws with 5e-324 entries are laws: compare answers (issue 31: exit 2, "cannot convert float NaN to integer")."""
    assert main(["compare", "--target", "5e-324,1", "--draft", "1,5e-324"]) == 0
    out = capsys.readouterr().out
    assert "MSS iid" in out and "nan" not in out.lower() and "inf" not in out.lower()
