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
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ...errors import PeerVersionError

__all__ = ["DEFAULT_MODULES", "SERVER_SCRIPT", "NodeWorker", "WorkerError", "installed_node_llama_cpp"]

SERVER_SCRIPT = Path(__file__).resolve().parent / "js" / "server.mjs"
DEFAULT_MODULES = Path(__file__).resolve().parents[3] / ".peers" / "nodellama" / "node_modules"


class WorkerError(RuntimeError):
    """The worker died, answered an error, or did not answer in time (the message quotes its log's tail)."""


def installed_node_llama_cpp(modules: str | os.PathLike = DEFAULT_MODULES) -> str:
    """The version of node-llama-cpp installed in ``modules`` (a node_modules folder); a PeerVersionError when absent."""
    manifest = Path(modules) / "node-llama-cpp" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError) as exc:
        raise PeerVersionError(f"node-llama-cpp is not installed in {os.fspath(modules)!r} ({exc}); "
                               "make .peers/nodellama/.installed installs it (npm ci)") from None


class NodeWorker:
    """``node server.mjs config`` (module docstring); ``request(obj)`` returns the answer's JSON object."""

    def __init__(self, config: dict, *, node: str | None = None, start_timeout: float = 120.0,
                 request_timeout: float = 600.0) -> None:
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        self.node = node or shutil.which("node")
        if self.node is None:
            raise FileNotFoundError("node (Node.js >= 20) is not on PATH: the nodellama adapter runs node-llama-cpp in it")
        self.request_timeout = float(request_timeout)
        self._log = tempfile.NamedTemporaryFile(prefix="specdec-nodellama-", suffix=".log", delete=False)
        self._proc = subprocess.Popen([self.node, str(SERVER_SCRIPT), json.dumps(config)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, start_new_session=True)
        self._buffer = b""
        try:
            self.ready = self._read(start_timeout)
        except BaseException:
            self.close()
            raise
        if not self.ready.get("ready"):
            self.close()
            raise WorkerError(f"the node-llama-cpp worker did not start: {self.ready!r}; {self._tail()}")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _tail(self) -> str:
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return f"worker log {self._log.name}: ...{text[-2000:]}" if text else f"worker log {self._log.name} is empty"

    def _read(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerError(f"the node-llama-cpp worker (pid {self.pid}) did not answer within {timeout:g} s; {self._tail()}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerError(f"the node-llama-cpp worker (pid {self.pid}) exited ({self._proc.poll()}); {self._tail()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerError(f"the node-llama-cpp worker wrote a line that is not JSON: {line[:300]!r}") from None

    def request(self, obj: dict) -> dict:
        """Send ``obj`` (one line), return the worker's answer; a WorkerError when it answers an error."""
        if self._proc.poll() is not None:
            raise WorkerError(f"the node-llama-cpp worker (pid {self.pid}) has exited ({self._proc.returncode}); {self._tail()}")
        try:
            self._proc.stdin.write((json.dumps(obj) + "\n").encode())
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(f"the node-llama-cpp worker (pid {self.pid}) closed its input; {self._tail()}") from None
        answer = self._read(self.request_timeout)
        if "error" in answer:
            raise WorkerError(f"node-llama-cpp: {answer['error']}")
        return answer

    def close(self, timeout: float = 10.0) -> None:
        """Close stdin (the worker disposes of its model and exits); kill its pid if it is still there after ``timeout``."""
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout)
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._log.close()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass
        self._proc = None

    def __enter__(self) -> "NodeWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
