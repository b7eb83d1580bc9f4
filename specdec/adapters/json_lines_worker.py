"""A child process behind JSON lines, the boundary of the adapters whose engine runs in another runtime or needs a
process of its own (node-llama-cpp's Node.js worker, mlx-lm's worker: mlx's random state is global to a process).

:class:`JsonLinesWorker` starts ``argv`` (its stderr into a temporary log, quoted when it fails; its own session, so it
is stopped by its pid alone), waits for its first line (``{"ready": true, ...}``: :attr:`JsonLinesWorker.ready`), then
sends one request per line and reads one answer per line, with a timeout on each read; an answer with an ``error``
key is a :class:`WorkerError`.  :meth:`JsonLinesWorker.close` closes the worker's stdin (it then exits) and, if it is
still there after ``timeout``, kills that one pid.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["JsonLinesWorker", "WorkerError"]


class WorkerError(RuntimeError):
    """The worker died, answered an error, or did not answer in time (the message quotes its log's tail)."""


class JsonLinesWorker:
    """``argv`` as a JSON-lines worker named ``label`` in its errors (module docstring); ``request(obj)`` returns the
    answer's JSON object."""

    def __init__(self, argv: list[str], *, label: str, start_timeout: float, request_timeout: float,
                 env: dict | None = None) -> None:
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError(f"argv must be a non-empty list of str, got {argv!r}")
        self.label = str(label)
        self.request_timeout = float(request_timeout)
        self._log = tempfile.NamedTemporaryFile(prefix=f"specdec-{self.label.replace(' ', '-')}-", suffix=".log", delete=False)
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                      start_new_session=True, env=env)
        self._buffer = b""
        try:
            self.ready = self._read(start_timeout)
        except BaseException:
            self.close()
            raise
        if not self.ready.get("ready"):
            self.close()
            raise WorkerError(f"the {self.label} worker did not start: {self.ready!r}; {self._tail()}")

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
                raise WorkerError(f"the {self.label} worker (pid {self.pid}) did not answer within {timeout:g} s; {self._tail()}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerError(f"the {self.label} worker (pid {self.pid}) exited ({self._proc.poll()}); {self._tail()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerError(f"the {self.label} worker wrote a line that is not JSON: {line[:300]!r}") from None

    def request(self, obj: dict) -> dict:
        """Send ``obj`` (one line), return the worker's answer; a WorkerError when it answers an error."""
        if self._proc.poll() is not None:
            raise WorkerError(f"the {self.label} worker (pid {self.pid}) has exited ({self._proc.returncode}); {self._tail()}")
        try:
            self._proc.stdin.write((json.dumps(obj) + "\n").encode())
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(f"the {self.label} worker (pid {self.pid}) closed its input; {self._tail()}") from None
        answer = self._read(self.request_timeout)
        if "error" in answer:
            raise WorkerError(f"{self.label}: {answer['error']}")
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

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
