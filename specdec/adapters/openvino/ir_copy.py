"""An OpenVINO IR copy of a GGUF model, with OpenVINO tokenizers: what ``openvino_genai.draft_model`` loads.

OpenVINO GenAI 2026.4.1.0 reads a GGUF file in ``ContinuousBatchingPipeline`` (the target), but its
``draft_model(path, device)`` wants a folder with ``openvino_model.xml`` and ``openvino_tokenizer.xml`` (without the
tokenizer the pipeline's constructor fails, "Either openvino_tokenizer.xml was not provided ...").
:func:`ir_copy` makes that folder once: the GGUF is linked into a staging folder and loaded with the property
``enable_save_ov_model`` (OpenVINO writes ``openvino_model.xml``/``.bin`` beside the GGUF it read: the same
dequantised graph the target runs), and the tokenizer and detokenizer are converted with
``openvino_tokenizers.convert_tokenizer`` from the transformers tokenizer of the same model.  The folder is
published with one atomic rename, so a reader never sees half of it; a second call returns it as it is.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

MODEL_FILES = ("openvino_model.xml", "openvino_model.bin", "openvino_tokenizer.xml", "openvino_detokenizer.xml")


def default_ir_dir(gguf_path: str | os.PathLike) -> Path:
    """``$XDG_CACHE_HOME/specdec/openvino-ir/<gguf file name without .gguf>`` (``~/.cache`` without XDG): a folder whose
    name ends in ``.gguf`` is opened as a GGUF file by OpenVINO GenAI."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "specdec" / "openvino-ir" / Path(gguf_path).stem


def ir_copy(gguf_path: str | os.PathLike, tokenizer_dir: str | os.PathLike, destination: str | os.PathLike | None = None) -> Path:
    """The IR folder of ``gguf_path`` (made on first use): ``destination`` (default :func:`default_ir_dir`).

    ``tokenizer_dir``: a folder transformers' ``AutoTokenizer`` reads (the same model's tokenizer)."""
    gguf_path = Path(gguf_path)
    if not gguf_path.is_file() or gguf_path.suffix != ".gguf":
        raise ValueError(f"gguf_path must be an existing .gguf file, got {str(gguf_path)!r}")
    if not Path(tokenizer_dir).is_dir():
        raise ValueError(f"tokenizer_dir must be a folder with a transformers tokenizer, got {str(tokenizer_dir)!r}")
    destination = Path(destination) if destination is not None else default_ir_dir(gguf_path)
    if destination.suffix == ".gguf":
        raise ValueError(f"destination must not end in .gguf (OpenVINO GenAI opens such a path as a GGUF file), got {str(destination)!r}")
    if all((destination / name).exists() for name in MODEL_FILES):
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=destination.parent))
    try:
        _write(gguf_path.resolve(), Path(tokenizer_dir), staging)
        try:
            os.rename(staging, destination)  # atomic; fails if another process published first
        except OSError:
            if not all((destination / name).exists() for name in MODEL_FILES):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination


def _write(gguf_path: Path, tokenizer_dir: Path, staging: Path) -> None:
    import openvino
    import openvino_genai
    from openvino_tokenizers import convert_tokenizer
    from transformers import AutoTokenizer

    link = staging / gguf_path.name
    link.symlink_to(gguf_path)
    scheduler = openvino_genai.SchedulerConfig()
    scheduler.cache_size = 1
    openvino_genai.ContinuousBatchingPipeline(str(link), scheduler, "CPU", {"enable_save_ov_model": True})
    link.unlink()
    tokenizer, detokenizer = convert_tokenizer(AutoTokenizer.from_pretrained(tokenizer_dir), with_detokenizer=True)
    openvino.save_model(tokenizer, str(staging / "openvino_tokenizer.xml"))
    openvino.save_model(detokenizer, str(staging / "openvino_detokenizer.xml"))
    missing = [name for name in MODEL_FILES if not (staging / name).exists()]
    if missing:
        raise RuntimeError(f"OpenVINO GenAI did not write {missing} from {gguf_path} (enable_save_ov_model)")


__all__ = ["MODEL_FILES", "default_ir_dir", "ir_copy"]
