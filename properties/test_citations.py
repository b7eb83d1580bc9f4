"""Every number the code, the tests and the documents cite resolves inside the repository: each F, E,
L, B and H id is defined in docs/reference.md, each "docs/reference.md §N" is one of its sections, and
nothing points at a file outside the repository (the project's specification and research notes
were written into docs/ in the project's own words)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "docs" / "reference.md").read_text()
DEFINED = set(re.findall(r"\| \*\*([FELBHP]\d+)\*\* \|", REFERENCE)) | set(re.findall(r"\(\*\*(F\d+)\*\*", REFERENCE))  # rows, and F21 inside L1
SECTIONS = set(re.findall(r"^## (\d+)\. ", REFERENCE, flags=re.M))


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", *patterns], capture_output=True, text=True, cwd=ROOT).stdout.split()
    untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", *patterns], capture_output=True, text=True, cwd=ROOT).stdout.split()
    return [ROOT / p for p in out + untracked if (ROOT / p).exists() and not p.startswith("CHANGELOG")]


def test_every_cited_id_is_defined_in_the_reference():
    assert {"F1", "F36", "E1", "E8", "L1", "L6", "B1", "B16", "H1", "H3"} <= DEFINED
    missing = {}
    for path in tracked("*.py", "*.md"):
        for cited in re.findall(r"(?<![A-Za-z0-9_])([FELBHP]\d{1,2})(?![0-9A-Za-z_])", path.read_text()):
            if cited not in DEFINED:
                missing.setdefault(cited, set()).add(str(path.relative_to(ROOT)))
    assert not missing, missing


def test_every_cited_section_exists_and_nothing_points_outside():
    for path in tracked("*.py", "*.md", "Makefile", "*.toml"):
        text = path.read_text()
        for section in re.findall(r"reference\.md §(\d+)", text):
            assert section in SECTIONS, f"{path.relative_to(ROOT)} cites docs/reference.md §{section}, which does not exist"
        if path.name == "test_citations.py":
            continue
        for outside in ("SPEC" + ".md", "PEERS" + ".md", "../" + "shared", "SPEC" + " §"):
            assert outside not in text, f"{path.relative_to(ROOT)} cites {outside!r}, outside the repository"
