"""`specdec plan` (issue 5): the report's numbers, the plot, one-line errors."""

import pytest

from specdec.cli import main


def test_plan_reports_spec_section_3(capsys):
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert "token              1   0.7000   0.7000   0.0000" in out
    assert "K-SEQ              2   0.7914   0.8600   0.0686" in out
    assert "MSS iid            3   0.8080   0.9880   0.1800" in out
    assert "block chain        2   1.2500   1.3100   0.0600" in out  # token chain: 1.19 (F26); block: 1.25 (F20)


def test_plan_writes_a_png(tmp_path, capsys):
    path = tmp_path / "plan.png"
    assert main(["plan", "--case", "spec_section4", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plan", "--target", "1,x"], "comma-separated numbers"),
        (["plan", "--target", "1,2"], "--target has 2 entries but --draft has 3"),
        (["plan", "--draft", "0,0,0"], "not all zero"),
        (["plan", "--case", "nope"], "unknown --case 'nope'"),
        (["plan", "--max-drafts", "0"], "--max-drafts must be >= 1"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
