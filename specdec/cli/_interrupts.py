"""Ctrl-C held while a C++ extension stack is imported, delivered the moment the import ends.

torch's import runs Python code called from C++ (pybind11).  A Ctrl-C landing there is raised inside that
call as a ``KeyboardInterrupt`` which pybind11 cannot hand back through C++: the process aborts (SIGABRT,
"terminate called after throwing an instance of 'pybind11::error_already_set'", exit status -6) instead
of ending with exit status 130 and one line.  Measured on this machine (torch 2.13, CPU): 2 of 46 start-up
Ctrl-Cs sent 0.30-1.20 s after start, while ``torch.distributed`` and ``torch.autograd`` were imported.
So the commands import what they need of such stacks first, with SIGINT recorded instead of raised.
"""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Iterable

__all__ = ["import_holding_interrupts"]


def import_holding_interrupts(modules: Iterable[str]) -> None:
    """Import ``modules`` (dotted names) with Ctrl-C held; a Ctrl-C that came meanwhile is raised afterwards.

    Holds only Python's own Ctrl-C (``signal.default_int_handler``) in the main thread: an ignored SIGINT
    stays ignored and a caller's own handler is left alone (those imports run as they are)."""
    hold = threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    held: list[int] = []
    if hold:
        signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        if hold:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt
