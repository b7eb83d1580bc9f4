"""``specdec check``'s JSON file: one document for the run, written atomically, kept current while it runs.

The document says which run it is from (time, seed, command, versions), the overall verdict, whether
the run completed, a decoder's prompts (as given and as token ids: :mod:`.prompt_sources`), and one
entry per subject: its report (``Report.to_dict``, with its checkpoint under ``resume``), or, for the
subject being checked, ``"verdict": "RUNNING"`` and its latest checkpoint - written every few seconds
while it samples, so a run stopped at any moment (Ctrl-C, a CI timeout, a
machine restart) leaves a whole file that ``specdec check --resume FILE`` continues from.
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

from ..errors import UsageError

__all__ = ["ReportFile", "read_resume"]


class ReportFile:
    """The run's document at ``path`` (None: nothing is written)."""

    def __init__(self, path: str | None, seed: int) -> None:
        self.path, self.seed = path, seed
        self.reports: list = []
        self.prompts: dict | None = None  # a decoder's prompts as given and as token ids (prompt_sources.resolve's record)

    def document(self, overall: str, complete: bool, running: dict | None = None) -> dict:
        from ..conformance.report import library_versions

        subjects = [r.to_dict() for r in self.reports]
        if running is not None:
            subjects.append(running)
        return {"verdict": overall, "complete": complete,
                "written_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "seed": self.seed, "argv": sys.argv[1:], "versions": library_versions(),
                **({"prompts": self.prompts} if self.prompts is not None else {}), "subjects": subjects}

    def write(self, overall: str, complete: bool, running: dict | None = None) -> None:
        if self.path is None:
            return
        from .._io import atomic_write_text

        atomic_write_text(self.path, json.dumps(self.document(overall, complete, running), indent=2) + "\n")

    def checkpoint(self, state: dict) -> None:
        """The engine's checkpoint writer: the document with the running subject's latest checkpoint."""
        running = {"subject": state["fingerprint"]["subject"], "level": state["fingerprint"]["level"], "verdict": "RUNNING",
                   "summary": "RUNNING: the check was stopped before it finished; specdec check --resume continues it",
                   "resume": state}
        self.write("RUNNING", False, running)


def read_resume(path: str | None) -> dict | None:
    """The document ``--resume`` names, read before any work (a UsageError names what is wrong with it)."""
    if path is None:
        return None
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise UsageError(f"--resume {path!r}: cannot read a specdec check JSON file: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("subjects"), list):
        raise UsageError(f"--resume {path!r}: not a specdec check JSON file (no 'subjects' list)")
    return document
