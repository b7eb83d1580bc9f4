"""When requests arrive in an open-loop benchmark (issue 33): Poisson or gamma arrivals at a stated rate, seeded.

The inter-arrival times are independent: exponential with mean 1 / rate (a Poisson process), or gamma with shape
``burstiness`` and the same mean (``vllm bench serve``'s convention: burstiness 1 is Poisson, below 1 burstier,
above 1 more regular; the coefficient of variation is 1 / sqrt(burstiness)).  Arrivals are generated from
``seed`` alone (numpy's ``default_rng``), so two runs of one plan send the same schedule.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float, as_seed

__all__ = ["PROCESSES", "arrival_times"]

PROCESSES = ("poisson", "gamma")


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
    rng = np.random.default_rng(as_seed(seed))
    expected = rate * duration
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
