"""Every example of the README runs as written, and the output it quotes is what the code prints."""

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_example_runs(index):
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {"__name__": "readme"})


def test_compare_output_is_what_the_cli_prints(capsys):
    from specdec.cli import main

    quoted = re.search(r"```text\n\$ specdec compare\n(.*?)```", README, flags=re.S).group(1)
    assert main(["compare"]) == 0
    printed = capsys.readouterr().out
    assert [line.rstrip() for line in quoted.strip().splitlines()] == [line.rstrip() for line in printed.strip().splitlines()[: len(quoted.strip().splitlines())]]


def test_the_quick_start_is_two_commands():
    block = re.search(r"## Quick start\n\n```sh\n(.*?)```", README, flags=re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make check", "make test"]
