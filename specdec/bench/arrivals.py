"""When requests arrive in an open-loop benchmark (issue 33): Poisson or gamma arrivals at a stated rate, seeded.

The inter-arrival times are independent: exponential with mean 1 / rate (a Poisson process), or gamma with shape
``burstiness`` and the same mean (``vllm bench serve``'s convention: burstiness 1 is Poisson, below 1 burstier,
above 1 more regular; the coefficient of variation is 1 / sqrt(burstiness)).  Arrivals are generated from
``seed`` alone (numpy's ``default_rng``), so two runs of one plan send the same schedule.

A window holds at most :data:`MAX_ARRIVALS` expected arrivals (rate x duration, checked before anything is drawn):
each arrival is a request on its own thread and a trace kept in memory, so a window of more is a typo (``--rate
1e12``), not a load any server or this sender keeps up with - and drawing it would exhaust the memory first.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float, as_seed

__all__ = ["MAX_ARRIVALS", "PROCESSES", "arrival_times", "check_window"]

PROCESSES = ("poisson", "gamma")
MAX_ARRIVALS = 100_000  # expected arrivals in one window: 1,000 requests a second for 100 s


def check_window(rate: float, duration: float, names: tuple[str, str] = ("rate", "duration")) -> float:
    """The expected number of arrivals of a window, refused (ValueError naming ``names``) above :data:`MAX_ARRIVALS`."""
    expected = rate * duration
    if not expected <= MAX_ARRIVALS:
        raise ValueError(f"{names[0]} {rate:g} /s over {names[1]} {duration:g} s is {expected:.3g} expected arrivals in one window; "
                         f"at most {MAX_ARRIVALS:,} (each is a request on its own thread): lower the rate or shorten the window")
    return expected


def arrival_times(rate: float, duration: float, *, process: str = "poisson", burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Seconds from the start at which requests arrive, every arrival before ``duration``, at ``rate`` requests per
    second on average."""
    rate = as_float("rate", rate, minimum=0.0, low_open=True)
    duration = as_float("duration", duration, minimum=0.0, low_open=True)
    burstiness = as_float("burstiness", burstiness, minimum=0.0, low_open=True)
    if process not in PROCESSES:
        raise ValueError(f"process must be one of {PROCESSES}, got {process!r}")
    if process == "poisson" and burstiness != 1.0:
        raise ValueError(f"burstiness={burstiness} is a gamma process's shape; a Poisson process has burstiness 1")
    expected = check_window(rate, duration)
    rng = np.random.default_rng(as_seed(seed))
    times: list[float] = []
    now = 0.0
    while True:
        block = int(expected + 10 * np.sqrt(expected) + 16)
        gaps = rng.exponential(1.0 / rate, block) if process == "poisson" else rng.gamma(burstiness, 1.0 / (rate * burstiness), block)
        for gap in gaps:
            now += float(gap)
            if now >= duration:
                return times
            times.append(now)
