"""A server subprocess that is always stopped: the lifetime of an OpenAI-compatible subject.

``with ServerProcess(argv, port=port) as server: ...`` starts ``argv`` in its own process group
(``start_new_session=True``: a Ctrl-C in the terminal reaches the check, not the server, and the
server's own children - vLLM's engine core and workers - share its group), waits until
``http://host:port{ready_path}`` answers 200, and stops the whole group *by its process id* on every
exit path:

* leaving the ``with`` block normally, by an exception or by KeyboardInterrupt (also during startup);
* SIGTERM of this process: a handler (installed from the main thread, chained to the previous one)
  stops every running server, then calls the previous handler, or exits with status 143;
* interpreter exit (``atexit``), for servers started without ``with`` and never stopped;
* the death of the thread that started it, on Linux, when it was started from the main thread
  (``PR_SET_PDEATHSIG``: a ``kill -9`` of this process still takes the server down).

Stopping sends SIGTERM to the group, waits up to ``stop_timeout`` seconds (15), then SIGKILLs it.

:func:`free_port` finds a free TCP port.  The command lines of the servers specdec starts live with
their peers (:func:`specdec.adapters.vllm.server.vllm_server_argv`).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping, Sequence

from ..._validation.scalars import as_float, as_int
from ...errors import ServerStartError


STOP_TIMEOUT = 15.0  # seconds between SIGTERM and SIGKILL
LOG_LINES = 30  # lines of the server's log shown when it fails to start

_RUNNING: dict[int, "ServerProcess"] = {}
_LOCK = threading.RLock()
_HANDLERS = {"atexit": False, "sigterm": False}
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # readiness polls never go through a proxy


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free when asked (bind to port 0 and read it back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's process now holds the id
        return True
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort (not Linux)
        pass


def _stop_all() -> None:
    with _LOCK:
        servers = list(_RUNNING.values())
    for server in servers:
        server.stop()


def _on_sigterm_factory(previous):
    def on_sigterm(signum, frame):
        _stop_all()
        if callable(previous):
            return previous(signum, frame)
        if previous == signal.SIG_IGN:
            return None
        raise SystemExit(128 + signum)

    return on_sigterm


def _install_handlers() -> None:
    with _LOCK:
        if not _HANDLERS["atexit"]:
            atexit.register(_stop_all)
            _HANDLERS["atexit"] = True
        if not _HANDLERS["sigterm"] and threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, _on_sigterm_factory(previous))
            _HANDLERS["sigterm"] = True


class ServerProcess:
    """A server subprocess, ready when ``http://host:port{ready_path}`` answers 200 (see the module docstring).

    ``argv``: the command line.  ``env``: variables set (over this process's environment) for the
    server.  ``log_path``: where its stdout and stderr go (default: a temporary file, removed when it
    stops cleanly).  ``startup_timeout``: seconds to wait for readiness.  Use it as a context manager,
    or call :meth:`start`, :meth:`wait_ready` and :meth:`stop` (two servers can boot side by side:
    ``a.start(); b.start(); a.wait_ready(); b.wait_ready()``).
    """

    def __init__(self, argv: Sequence[str], *, port: int, host: str = "127.0.0.1", ready_path: str = "/v1/models",
                 startup_timeout: float = 300, env: Mapping[str, str] | None = None, log_path: str | os.PathLike | None = None,
                 stop_timeout: float = STOP_TIMEOUT) -> None:
        if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError(f"argv must be a non-empty list of str (the server's command line), got {argv!r}")
        if not isinstance(host, str) or not host:
            raise ValueError(f"host must be a non-empty str, got {host!r}")
        if not isinstance(ready_path, str) or not ready_path.startswith("/"):
            raise ValueError(f"ready_path must be a str starting with '/', got {ready_path!r}")
        if env is not None and not (isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise TypeError(f"env must be a mapping of str to str or None, got {env!r}")
        self.argv = list(argv)
        self.port = as_int("port", port, minimum=1, maximum=65535)
        self.host = host
        self.ready_path = ready_path
        self.startup_timeout = as_float("startup_timeout", startup_timeout, minimum=0.0, low_open=True)
        self.stop_timeout = as_float("stop_timeout", stop_timeout, minimum=0.0)
        self.env = dict(env or {})
        self._own_log = log_path is None
        self.log_path = Path(log_path) if log_path is not None else None
        self.process: subprocess.Popen | None = None
        self.startup_seconds: float | None = None  # from start() to the first 200
        self._started_at: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server's process id (also its process group's id), once started."""
        return None if self.process is None else self.process.pid

    def start(self) -> "ServerProcess":
        """Spawn the server (does not wait for it)."""
        if self.process is not None:
            raise RuntimeError(f"server already started (pid {self.process.pid})")
        _install_handlers()
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="specdec-server-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        in_main = threading.current_thread() is threading.main_thread()
        with open(self.log_path, "ab") as log, _LOCK:
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                start_new_session=True, preexec_fn=_die_with_parent if (in_main and sys.platform.startswith("linux")) else None,
            )
            _RUNNING[self.process.pid] = self
        self._started_at = time.monotonic()
        return self

    def wait_ready(self) -> "ServerProcess":
        """Block until ``ready_path`` answers 200; stop the server and raise :class:`ServerStartError`
        if it exits or the startup timeout passes first."""
        if self.process is None:
            raise RuntimeError("start() the server first")
        deadline = self._started_at + self.startup_timeout
        url = self.base_url + self.ready_path
        while True:
            code = self.process.poll()
            if code is not None:
                self.stop()
                raise ServerStartError(f"the server exited with status {code} before {url} answered "
                                       f"({' '.join(self.argv)[:300]}); last lines of {self.log_path}:\n{self.log_tail()}")
            try:
                with _DIRECT.open(url, timeout=2.0) as answer:
                    if answer.status == 200:
                        self.startup_seconds = time.monotonic() - self._started_at
                        return self
            except (urllib.error.URLError, OSError, socket.timeout):
                pass
            if time.monotonic() > deadline:
                self.stop(keep_log=True)
                raise ServerStartError(f"{url} did not answer 200 within startup_timeout={self.startup_timeout:g} s "
                                       f"({' '.join(self.argv)[:300]}); the server was stopped; last lines of {self.log_path}:\n"
                                       f"{self.log_tail()}")
            time.sleep(0.25)

    def log_tail(self, lines: int = LOG_LINES) -> str:
        """The last ``lines`` lines of the server's log."""
        try:
            text = Path(self.log_path).read_bytes()[-200_000:].decode("utf-8", "replace")
        except (OSError, TypeError):
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, keep_log: bool = False) -> int | None:
        """SIGTERM to the server's process group, up to ``stop_timeout`` s, then SIGKILL; returns its
        exit status (None if it was never started).  Idempotent."""
        process = self.process
        if process is None:
            return None
        pgid = process.pid
        try:
            if process.poll() is None or _group_alive(pgid):
                _signal_group(pgid, signal.SIGTERM)
                deadline = time.monotonic() + self.stop_timeout
                while (process.poll() is None or _group_alive(pgid)) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if process.poll() is None or _group_alive(pgid):
                    _signal_group(pgid, signal.SIGKILL)
                    process.wait(timeout=30)
        except BaseException:  # interrupted while waiting (Ctrl-C twice): kill at once, then let it through
            _signal_group(pgid, signal.SIGKILL)
            try:
                process.wait(timeout=30)
            finally:
                with _LOCK:
                    _RUNNING.pop(pgid, None)
            raise
        with _LOCK:
            _RUNNING.pop(pgid, None)
        if self._own_log and not keep_log and process.returncode is not None and self.startup_seconds is not None:
            try:
                os.unlink(self.log_path)
            except OSError:
                pass
        return process.returncode

    def restart(self, *, kill: bool = True, down: float = 0.0) -> "ServerProcess":
        """Stop the server - at once with SIGKILL to its group when ``kill`` (an out-of-memory kill, a machine
        that lost it), else as :meth:`stop` does - wait ``down`` seconds, start it again on the same port and
        wait until it answers: what a rolling update or a crash and a supervisor do to a check's server."""
        if self.process is None:
            raise RuntimeError("start() the server first")
        if kill:
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.stop(keep_log=True)
        self.process, self.startup_seconds = None, None
        time.sleep(as_float("down", down, minimum=0.0))
        self.start()
        return self.wait_ready()

    def __enter__(self) -> "ServerProcess":
        try:
            self.start()
            return self.wait_ready()
        except BaseException:
            self.stop(keep_log=True)
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "not started" if self.process is None else ("running" if self.process.poll() is None else f"exited {self.process.returncode}")
        return f"ServerProcess(pid={self.pid}, {self.base_url}, {state})"


__all__ = ["ServerProcess", "ServerStartError", "free_port"]
