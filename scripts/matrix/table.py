"""Merge ``docs/data/matrix/*.json`` into the table of ``docs/matrix.md`` (between its two markers)::

    .venv/bin/python -m scripts.matrix.table
"""

from __future__ import annotations

import sys
from pathlib import Path

from specdec._io import atomic_write_text
from specdec.conformance.matrix import markdown_table, read_cells
from specdec.conformance.token_cells import token_table

from .runner import runs_of

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "data" / "matrix"
DOC = ROOT / "docs" / "matrix.md"
BEGIN, END = "<!-- matrix:begin -->", "<!-- matrix:end -->"
FILES = {"vllm-server.json": "vLLM 0.32's OpenAI server", "vllm-engine.json": "vLLM 0.32's in-process engine (vllm.LLM)",
         "llama-cpp.json": "llama.cpp through llama-cpp-python 0.3.36, in process",
         "llama-server.json": "llama.cpp's own llama-server (built from llama-cpp-python 0.3.36's sources)", "transformers.json": "transformers",
         "llama-cpp-tokens.json": "llama.cpp through llama-cpp-python 0.3.36, in process, per token on real prompts (issue 38)",
         "llama-server-tokens.json": "llama.cpp's own llama-server, per token on real prompts (issue 38)",
         "vllm-server-tokens.json": "vLLM 0.32's OpenAI server, per token on real prompts (issue 38)",
         "vllm-engine-tokens.json": "vLLM 0.32's in-process engine (vllm.LLM), per token on real prompts (issue 38)",
         "openvino-tokens.json": "OpenVINO GenAI 2026.4.1.0, per token on real prompts (issue 39)",
         "ortgenai-tokens.json": "ONNX Runtime GenAI 0.18.0, per token on real prompts (issue 39)",
         "nodellama-tokens.json": "node-llama-cpp 3.21.1, per token on real prompts (issue 39)",
         "transformers-tokens.json": "transformers, per token on the tiny pair, the workload's prompts modulo 8 (issue 38)"}


def section() -> str:
    parts = []
    for name in FILES:
        path = SOURCES / name
        if not path.exists():
            parts.append(f"*{name}: not run*")
            continue
        header, cells = read_cells(path)
        versions = ", ".join(f"{k} {v}" for k, v in header["versions"].items() if v)
        table = token_table(cells) if any(c.extra.get("kind") == "per token" for c in cells) else markdown_table(cells)
        parts.append(f"**{FILES[name]}** - {runs_line(header, cells)}; {versions}\n\n{table}")
    return "\n\n".join(parts)


def runs_line(header: dict, cells) -> str:
    """When and where the cells were run: one run, or each run with the number of its cells still in the file."""
    runs = runs_of(header)
    counts = [sum(1 for c in cells if c.extra.get("run", 0) == i) for i in range(len(runs))]
    size = lambda r: f"per-token TV {r['per_token_tv']:g}" if r.get("per_token_tv") is not None else f"n = {r['samples_per_side']} per side"  # noqa: E731
    said = [f"{r['date']} on commit `{r['commit']}` ({size(r)}" + (f"; {k} cells)" if len(runs) > 1 else ")")
            for r, k in zip(runs, counts) if k or len(runs) == 1]
    return ("run " if len(said) == 1 else "runs ") + ", ".join(said)


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
