"""The model folder mlx-lm loads: the project's float32 safetensors copy of SmolLM2 with a config mlx-lm 0.32.2 reads.

mlx-lm reads the rotary base from ``config.json``'s top-level ``rope_theta`` (``mlx_lm/models/llama.py``, ``ModelArgs``,
default 10000) and ignores transformers 5's ``rope_parameters`` block, where the copy written by
:func:`specdec.decoding.models.smollm2_dir` (transformers 5.23.0's ``save_pretrained``) keeps SmolLM2's 100000.  Loaded as
it is, the model runs with a base of 10000: measured on 59 tokens, its logits differ from transformers' by up to 31
(with ``rope_theta`` restated: 0.005).  :func:`mlx_model_dir` therefore publishes a copy under ``.peers/mlx/`` (ignored by
git): the same files as symbolic links, and ``config.json`` with ``rope_theta`` (and ``rope_scaling`` when the rope type
is not the default one: refused, mlx-lm's llama reads another layout) stated at the top level.  Nothing else changes:
the weights are the same float32 tensors.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["DEFAULT_ROOT", "mlx_config", "mlx_model_dir"]

DEFAULT_ROOT = Path(__file__).resolve().parents[3] / ".peers" / "mlx"


def mlx_config(config: dict) -> dict:
    """``config`` (a transformers 5 ``config.json``) with ``rope_theta`` at the top level, as mlx-lm reads it."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
    out = dict(config)
    rope = config.get("rope_parameters")
    if rope is None:
        return out
    if not isinstance(rope, dict) or "rope_theta" not in rope:
        raise ValueError(f"config's rope_parameters must be a dict with rope_theta, got {rope!r}")
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"config's rope_parameters has rope_type={rope.get('rope_type')!r}: only the default rope is "
                         "restated for mlx-lm (its scaling keys are read from another layout)")
    if "rope_theta" in config and float(config["rope_theta"]) != float(rope["rope_theta"]):
        raise ValueError(f"config states rope_theta={config['rope_theta']!r} and rope_parameters.rope_theta="
                         f"{rope['rope_theta']!r}: which one the model was trained with is not known")
    out["rope_theta"] = rope["rope_theta"]
    return out


def mlx_model_dir(source: str | os.PathLike | None = None, root: str | os.PathLike = DEFAULT_ROOT) -> Path:
    """The folder mlx-lm loads for the transformers folder ``source`` (default: SmolLM2's float32 copy,
    :func:`specdec.decoding.models.smollm2_dir`), published once under ``root`` (module docstring) and reused."""
    if source is None:
        from ...decoding.models import smollm2_dir

        source = smollm2_dir()
    source = Path(source).resolve()
    if not (source / "config.json").is_file():
        raise FileNotFoundError(f"source {os.fspath(source)!r} has no config.json (a transformers model folder)")
    config = mlx_config(json.loads((source / "config.json").read_text()))
    destination = Path(root) / source.name
    if (destination / "config.json").is_file():
        if json.loads((destination / "config.json").read_text()) == config:
            return destination
        shutil.rmtree(destination)  # a copy of another source or config: rewritten
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=destination.parent))
    try:
        for item in source.iterdir():
            if item.name != "config.json" and item.is_file():
                (staging / item.name).symlink_to(item)
        (staging / "config.json").write_text(json.dumps(config, indent=2))
        try:
            os.rename(staging, destination)  # atomic; fails if another process published first
        except OSError:
            if not (destination / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination
