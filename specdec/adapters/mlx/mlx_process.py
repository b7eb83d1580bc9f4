"""The mlx adapter's worker process: :mod:`.mlx_worker` run as a script by a Python with mlx-lm, JSON lines both ways.

:class:`MlxWorker` starts ``PYTHON mlx_worker.py CONFIG`` (its stderr into a temporary log, quoted when it fails; its own
session, so it is stopped by its pid alone), waits for the ready line, then sends one request per line and reads one
answer per line with a timeout.  mlx's random state is global to a process: one worker per decoder keeps each
decoder's seeded rows its own.  :meth:`MlxWorker.close` closes the worker's stdin (it then exits) and kills that one
pid if it is still there after a few seconds.  The Python: ``.venv-mlx/bin/python`` of the checkout when it exists
(``make .venv-mlx/.installed``), else this interpreter.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["DEFAULT_PYTHON", "WORKER_SCRIPT", "MlxWorker", "WorkerError", "default_python"]

WORKER_SCRIPT = Path(__file__).resolve().parent / "mlx_worker.py"
DEFAULT_PYTHON = Path(__file__).resolve().parents[3] / ".venv-mlx" / "bin" / "python"


def default_python() -> str:
    """``.venv-mlx``'s Python when it exists, else this interpreter's."""
    return os.fspath(DEFAULT_PYTHON) if DEFAULT_PYTHON.exists() else sys.executable


class WorkerError(RuntimeError):
    """The worker died, answered an error, or did not answer in time (the message quotes its log's tail)."""


class MlxWorker:
    """``python mlx_worker.py config`` (module docstring); ``request(obj)`` returns the answer's JSON object."""

    def __init__(self, config: dict, *, python: str | None = None, start_timeout: float = 180.0,
                 request_timeout: float = 1800.0) -> None:
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        self.python = python or default_python()
        self.request_timeout = float(request_timeout)
        self._log = tempfile.NamedTemporaryFile(prefix="specdec-mlx-", suffix=".log", delete=False)
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self._proc = subprocess.Popen([self.python, os.fspath(WORKER_SCRIPT), json.dumps(config)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, start_new_session=True, env=env)
        self._buffer = b""
        try:
            self.ready = self._read(start_timeout)
        except BaseException:
            self.close()
            raise
        if not self.ready.get("ready"):
            self.close()
            raise WorkerError(f"the mlx-lm worker did not start: {self.ready!r}")

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
                raise WorkerError(f"the mlx-lm worker (pid {self.pid}) did not answer within {timeout:g} s; {self._tail()}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerError(f"the mlx-lm worker (pid {self.pid}) exited ({self._proc.poll()}); {self._tail()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerError(f"the mlx-lm worker wrote a line that is not JSON: {line[:300]!r}") from None

    def request(self, obj: dict) -> dict:
        """Send ``obj`` (one line), return the worker's answer; a WorkerError when it answers an error."""
        if self._proc.poll() is not None:
            raise WorkerError(f"the mlx-lm worker (pid {self.pid}) has exited ({self._proc.returncode}); {self._tail()}")
        try:
            self._proc.stdin.write((json.dumps(obj) + "\n").encode())
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(f"the mlx-lm worker (pid {self.pid}) closed its input; {self._tail()}") from None
        answer = self._read(self.request_timeout)
        if "error" in answer:
            raise WorkerError(f"mlx-lm: {answer['error']}")
        return answer

    def close(self, timeout: float = 10.0) -> None:
        """Close stdin (the worker exits); kill its pid if it is still there after ``timeout``."""
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
