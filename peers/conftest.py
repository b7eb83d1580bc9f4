"""Every test here runs a real peer package: marked ``peers`` (deselected in the main suite).

mistral.rs 0.6.0's prebuilt CPU wheel executes instructions some CPUs lack: on an AMD EPYC with AVX2 only its first
Runner dies with SIGILL (``Fatal Python error: Illegal instruction``, CI of 2026-11-29), where Intel machines with
AVX-512 ran it.  A one-token probe in a child process decides, once, before the mistral.rs tests run: on SIGILL they
are skipped with that reason (the machine cannot run the package); any other failure of the probe lets them run
and fail as they would."""

import os
import signal
import subprocess
import sys

import pytest

MISTRALRS_PROBE = (
    "from specdec.adapters.mistralrs import MistralRsDecoder\n"
    "from specdec.decoding.models import GGUF_FILE, _gguf_dir\n"
    "MistralRsDecoder(str(_gguf_dir() / GGUF_FILE), name='probe')([[1, 2, 3]], 1, 0)\n"
)


def _simd_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return "unknown"
    return " ".join(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c"))) or "none of AVX"


def mistralrs_cannot_run(root) -> str | None:
    """Why mistral.rs cannot run on this machine (its probe died of SIGILL), else None."""
    done = subprocess.run([sys.executable, "-c", MISTRALRS_PROBE], cwd=root, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode == -signal.SIGILL:
        return (f"mistralrs' prebuilt CPU wheel dies of SIGILL (an instruction this CPU lacks) at its first Runner; "
                f"this CPU: {_simd_flags()}")
    return None


def pytest_collection_modifyitems(config, items):
    here = str(config.rootpath / "peers")
    mistralrs = []
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.peers)
            if os.path.basename(str(item.fspath)).startswith("test_mistralrs"):
                mistralrs.append(item)
    if mistralrs:
        try:
            import mistralrs as _  # noqa: F401  (only in .venv-mistralrs)
        except ImportError:
            return
        reason = mistralrs_cannot_run(config.rootpath)
        if reason:
            for item in mistralrs:
                item.add_marker(pytest.mark.skip(reason=reason))
