"""The Node.js worker of the nodellama adapter: ``js/server.mjs`` as a child process speaking JSON lines.

:class:`NodeWorker` starts ``node js/server.mjs CONFIG`` (its stderr into a temporary log, shown when it fails), waits
for its first line (``{"ready": true, "version": ...}``), then sends one request per line and reads one answer per
line, with a timeout on each read.  :meth:`NodeWorker.close` closes the worker's stdin (it then disposes of the model
and exits) and, if it has not exited within a few seconds, kills that one process by its pid.

Where node-llama-cpp is found: ``npm ci`` of ``js/package.json`` and ``js/package-lock.json`` in ``.peers/nodellama``
(``make .peers/nodellama/.installed``); :func:`installed_node_llama_cpp` reads the installed package's own
``package.json`` (its version), without starting Node.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ...errors import PeerVersionError
from ..json_lines_worker import JsonLinesWorker, WorkerError

__all__ = ["DEFAULT_MODULES", "SERVER_SCRIPT", "SUPPORTED_NODE_LLAMA_CPP", "NodeWorker", "WorkerError",
           "WorkerOwner", "installed_node_llama_cpp", "start_checked"]

SUPPORTED_NODE_LLAMA_CPP = ("3.21.1",)

SERVER_SCRIPT = Path(__file__).resolve().parent / "js" / "server.mjs"
DEFAULT_MODULES = Path(__file__).resolve().parents[3] / ".peers" / "nodellama" / "node_modules"


def installed_node_llama_cpp(modules: str | os.PathLike = DEFAULT_MODULES) -> str:
    """The version of node-llama-cpp installed in ``modules`` (a node_modules folder); a PeerVersionError when absent."""
    manifest = Path(modules) / "node-llama-cpp" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError) as exc:
        raise PeerVersionError(f"node-llama-cpp is not installed in {os.fspath(modules)!r} ({exc}); "
                               "make .peers/nodellama/.installed installs it (npm ci)") from None


class NodeWorker(JsonLinesWorker):
    """``node server.mjs config`` (module docstring) as a :class:`..json_lines_worker.JsonLinesWorker`."""

    def __init__(self, config: dict, *, node: str | None = None, start_timeout: float = 120.0,
                 request_timeout: float = 600.0) -> None:
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        self.node = node or shutil.which("node")
        if self.node is None:
            raise FileNotFoundError("node (Node.js >= 20) is not on PATH: the nodellama adapter runs node-llama-cpp in it")
        super().__init__([self.node, str(SERVER_SCRIPT), json.dumps(config)], label="node-llama-cpp",
                         start_timeout=start_timeout, request_timeout=request_timeout)


def start_checked(config: dict, *, modules: str | os.PathLike, node: str | None, check_version: bool) -> NodeWorker:
    """A worker on ``config``, the installed node-llama-cpp checked against :data:`SUPPORTED_NODE_LLAMA_CPP` before Node
    starts and the one the worker loaded after (``check_version``: both refused with a PeerVersionError otherwise)."""
    supported = " or ".join(SUPPORTED_NODE_LLAMA_CPP)
    if check_version:
        version = installed_node_llama_cpp(modules)
        if version not in SUPPORTED_NODE_LLAMA_CPP:
            raise PeerVersionError(f"specdec.adapters.nodellama supports node-llama-cpp {supported}; installed in "
                                   f"{os.fspath(modules)}: {version} (not tested on it; it does not guess another "
                                   "version's contract)")
    worker = NodeWorker(config, node=node)
    loaded = worker.ready.get("version")
    if check_version and loaded not in SUPPORTED_NODE_LLAMA_CPP:
        worker.close()
        raise PeerVersionError(f"the worker loaded node-llama-cpp {loaded!r}, not {supported}")
    return worker


class WorkerOwner:
    """What owns one :class:`NodeWorker` in ``_worker`` (the decoder, the oracle): :meth:`close` stops it, a ``with``
    block or garbage collection closes it."""

    _worker: NodeWorker | None = None

    def close(self) -> None:
        """Stop the worker (by its pid if it does not exit); a later call starts a new one."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
