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
import sys
from pathlib import Path

from ..json_lines_worker import JsonLinesWorker, WorkerError

__all__ = ["DEFAULT_PYTHON", "WORKER_SCRIPT", "MlxWorker", "WorkerError", "default_python"]

WORKER_SCRIPT = Path(__file__).resolve().parent / "mlx_worker.py"
DEFAULT_PYTHON = Path(__file__).resolve().parents[3] / ".venv-mlx" / "bin" / "python"


def default_python() -> str:
    """``.venv-mlx``'s Python when it exists, else this interpreter's."""
    return os.fspath(DEFAULT_PYTHON) if DEFAULT_PYTHON.exists() else sys.executable


class MlxWorker(JsonLinesWorker):
    """``python mlx_worker.py config`` (module docstring) as a :class:`..json_lines_worker.JsonLinesWorker`."""

    def __init__(self, config: dict, *, python: str | None = None, start_timeout: float = 180.0,
                 request_timeout: float = 1800.0) -> None:
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        self.python = python or default_python()
        super().__init__([self.python, os.fspath(WORKER_SCRIPT), json.dumps(config)], label="mlx-lm",
                         start_timeout=start_timeout, request_timeout=request_timeout,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
