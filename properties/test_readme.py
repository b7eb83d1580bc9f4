"""Every example of the README and of docs/ runs as written, the output they quote is what the code
prints, and the README stays short: a newcomer reads it in ten minutes."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PAGES = {"README.md": README, **{f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}}
BLOCKS = [(name, i, block) for name, text in PAGES.items() for i, block in enumerate(re.findall(r"```python\n(.*?)```", text, flags=re.S))]


@pytest.mark.parametrize("name, index, block", BLOCKS, ids=[f"{name}-{index}" for name, index, _ in BLOCKS])
def test_python_example_runs(name, index, block):
    exec(compile(block, f"{name} python block {index}", "exec"), {"__name__": "readme"})


def test_compare_output_is_what_the_cli_prints(capsys):
    from specdec.cli import main

    page = next(text for text in PAGES.values() if "```text\n$ specdec compare\n" in text)
    quoted = re.search(r"```text\n\$ specdec compare\n(.*?)```", page, flags=re.S).group(1)
    assert main(["compare"]) == 0
    printed = capsys.readouterr().out
    assert [line.rstrip() for line in quoted.strip().splitlines()] == [line.rstrip() for line in printed.strip().splitlines()[: len(quoted.strip().splitlines())]]


def test_the_quick_start_is_two_commands():
    block = re.search(r"## Quick start\n\n```sh\n(.*?)```", README, flags=re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make check", "make test"]


def test_the_readme_is_at_most_300_lines_and_every_link_resolves():
    assert len(README.splitlines()) <= 300, f"README.md has {len(README.splitlines())} lines"
    for name, text in PAGES.items():
        folder = (ROOT / name).parent
        for target in re.findall(r"\]\(([\w./-]+\.(?:md|png|json))(?:#[^)]*)?\)", text):
            assert (folder / target).exists(), f"{name} links to {target}, which does not exist"
