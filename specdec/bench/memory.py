"""Peak memory of a region of code, on the device that does the work.

CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` (bytes the
caching allocator handed out; the region's peak minus what was allocated at its start).
CPU: the process's peak resident set size, reset at the start of the region by writing
5 to ``/proc/self/clear_refs`` (Linux >= 4.0) and read from ``VmHWM``; minus the resident
size at the start.  Freed heap memory that the C allocator kept would hide new allocations
(they reuse it without growing the RSS), so glibc's ``malloc_trim(0)`` returns it to the
system first.  Between repeated runs of the same work the result still moves by a few MiB
(allocator and page-level effects), so differences that small are noise.  Elsewhere the peak is unknown and reported as None, never guessed.
"""

from __future__ import annotations

import torch


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field_name}")


def _trim_heap() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _reset_peak_rss() -> bool:
    _trim_heap()
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


class PeakMemory:
    """``with PeakMemory(device) as peak: ...`` then ``peak.bytes``: the region's peak above its start (None: unknown)."""

    def __init__(self, device) -> None:
        self.device = torch.device(device)
        self.bytes: int | None = None
        self._start = 0
        self._known = False

    def __enter__(self) -> "PeakMemory":
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._start = torch.cuda.memory_allocated(self.device)
            self._known = True
        elif self.device.type == "cpu" and _reset_peak_rss():
            self._start = _status_kib("VmRSS") * 1024
            self._known = True
        return self

    def __exit__(self, *exc) -> None:
        if not self._known:
            return
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.bytes = torch.cuda.max_memory_allocated(self.device) - self._start
        else:
            self.bytes = max(0, _status_kib("VmHWM") * 1024 - self._start)
