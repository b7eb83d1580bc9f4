"""Merge ``docs/data/matrix/*.json`` into the table of ``docs/matrix.md`` (between its two markers)::

    .venv/bin/python -m scripts.matrix.table
"""

from __future__ import annotations

import sys
from pathlib import Path

from specdec._io import atomic_write_text
from specdec.conformance.matrix import markdown_table, read_cells

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "data" / "matrix"
DOC = ROOT / "docs" / "matrix.md"
BEGIN, END = "<!-- matrix:begin -->", "<!-- matrix:end -->"
FILES = ("vllm-server.json", "vllm-engine.json", "llama-cpp.json", "llama-server.json", "transformers.json")


def section() -> str:
    parts = []
    for name in FILES:
        path = SOURCES / name
        if not path.exists():
            parts.append(f"*{name}: not run*")
            continue
        header, cells = read_cells(path)
        versions = ", ".join(f"{k} {v}" for k, v in header["versions"].items() if v)
        parts.append(f"**{header['engine']}** - run {header['date']} on commit `{header['commit']}`, n = {header['samples_per_side']} "
                     f"per side and cell; {versions}\n\n{markdown_table(cells)}")
    return "\n\n".join(parts)


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{DOC} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    atomic_write_text(DOC, f"{head}{BEGIN}\n{section()}\n{END}{tail}")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
