"""Files that are never left half-written.

:func:`atomic_write_text` writes to a temporary file in the destination's folder, flushes it to
disk, and renames it into place: a reader (or a run killed mid-write by SIGINT, SIGTERM or SIGKILL)
sees either the previous file, whole, or the new one, whole - never a truncated one.  A symbolic
link is followed (the file it points to is replaced, the link kept); a destination that exists and
is not a regular file (``/dev/null``, a FIFO, ``/dev/stdout``) is written in place, since there is
nothing to replace there and a rename would replace the device itself.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (same-folder temporary file, fsync, ``os.replace``)."""
    path = Path(os.path.realpath(path))
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file path")
    if path.exists() and not path.is_file():  # a device or a pipe: nothing to replace
        with open(path, "w", encoding=encoding) as stream:
            stream.write(text)
        return path
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding=encoding) as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if path.exists():  # keep the previous file's permissions
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
