"""Open-loop load (issue 33): requests sent at their arrival times whatever the subject's state, as a serving
engineer's benchmark sends them (``vllm bench serve``), with per-request latencies and goodput.

A subject streams: :class:`StreamingDecoder` ``stream(prompt, max_new_tokens, seed)`` yields, as they arrive, the
number of tokens each event brought (an OpenAI server's chunk, llama-server's event, our loop's step).
:func:`run_open_loop` sends one request per arrival (:func:`specdec.bench.arrivals.arrival_times`: a warm-up window,
then the measured window), each on its own thread at its arrival time, and keeps a :class:`RequestTrace` per request.
:func:`load_summary` reads the measured requests (arrived after the warm-up), with these definitions:

* **TTFT**: first event - arrival (queueing included: the request was due at its arrival);
* **TPOT**: (end - first event) / (tokens - 1), per request with at least two tokens;
* **ITL**: the gaps between consecutive events of a request (a speculative step that emits several tokens is one
  event: bursty by design, as our closed-loop rows say);
* **E2E**: end - arrival;
* percentiles p50, p90, p99 (numpy's linear interpolation) over requests (ITL: over gaps);
* **goodput**: requests per second of the measured window that completed within the :class:`Objective` (TTFT and
  TPOT both at most its bounds); throughput: completed requests and tokens per second of that window.

A request that raised is failed (its error kept, the first one in the summary).  A stream that ends without a token,
or yields what is not a count of tokens, broke the :class:`StreamingDecoder` Protocol (a server that ignored
``"stream": true`` answers in one body, with no event to time): a :class:`~specdec.errors.ContractError` naming the
subject and the call, counted apart (``protocol_breaks``) - never a completed request of 0 tokens.

:func:`open_loop_row` runs speculation on and off at the same rate in alternating rounds (off first, the same arrival
schedule and seeds on both sides in a round, a new schedule each round) and keeps per-round ratios, so that machine
drift hits both sides of a ratio alike, as in every other row (the gate reads them).  A goodput of 0 on the
speculative side beside a positive one on the other is a ratio of 0 (a regression the gate judges); a ratio whose
denominator is 0 (or a latency of 0) is not a number, and the metric is left out of the row.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from .._validation import as_float, as_int, as_seed
from ..adapters._common import request_seeds
from ..errors import ContractError
from .arrivals import arrival_times

__all__ = ["Objective", "RequestTrace", "StreamingDecoder", "load_summary", "open_loop_row", "run_open_loop"]


@runtime_checkable
class StreamingDecoder(Protocol):
    """Streams one request: yields the number of tokens each event brought, in order, until the answer is whole."""

    def stream(self, prompt: Sequence[int], max_new_tokens: int, seed: int) -> Iterator[int]: ...


@dataclass(frozen=True)
class Objective:
    """The latency objective of goodput: TTFT and TPOT at most these (seconds)."""

    ttft: float = 1.0
    tpot: float = 0.1

    def __post_init__(self) -> None:
        as_float("ttft", self.ttft, minimum=0.0, low_open=True)
        as_float("tpot", self.tpot, minimum=0.0, low_open=True)


@dataclass
class RequestTrace:
    """One request: when it was due and sent, each event (seconds from the run's start, tokens), when it ended."""

    number: int
    arrival: float
    warmup: bool
    sent: float | None = None
    events: list[tuple[float, int]] = field(default_factory=list)
    end: float | None = None
    error: str | None = None
    broken: bool = False  # the error is a Protocol break (ContractError), not a failure of the request

    @property
    def tokens(self) -> int:
        return sum(n for _, n in self.events)

    @property
    def ttft(self) -> float | None:
        return None if not self.events else self.events[0][0] - self.arrival

    @property
    def e2e(self) -> float | None:
        return None if self.end is None else self.end - self.arrival

    @property
    def tpot(self) -> float | None:
        return None if self.end is None or self.tokens < 2 else (self.end - self.events[0][0]) / (self.tokens - 1)

    @property
    def itl(self) -> list[float]:
        return [b[0] - a[0] for a, b in zip(self.events, self.events[1:])]


def run_open_loop(subject: StreamingDecoder, prompts: Sequence[Sequence[int]], *, rate: float, duration: float, warmup: float = 10.0,
                  max_new_tokens: int = 64, process: str = "poisson", burstiness: float = 1.0, seed: int = 0,
                  drain_timeout: float = 600.0) -> list[RequestTrace]:
    """Send one request per arrival of [0, warmup + duration) (prompts round robin, a seed each) and wait for every
    answer (at most ``drain_timeout`` seconds after the last arrival); the traces, warm-up ones marked."""
    if not isinstance(subject, StreamingDecoder):
        raise TypeError(f"subject must stream (specdec.bench.open_loop.StreamingDecoder: stream(prompt, max_new_tokens, seed)), "
                        f"got {type(subject).__name__}")
    if not prompts:
        raise ValueError("prompts must name at least one prompt")
    warmup = as_float("warmup", warmup, minimum=0.0)
    max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
    times = arrival_times(rate, warmup + as_float("duration", duration, minimum=0.0, low_open=True), process=process,
                          burstiness=burstiness, seed=seed)
    seeds = request_seeds(as_seed(seed), len(times))
    traces = [RequestTrace(i, t, t < warmup) for i, t in enumerate(times)]
    start = time.monotonic()

    def one(trace: RequestTrace) -> None:
        trace.sent = time.monotonic() - start
        prompt, seed = list(prompts[trace.number % len(prompts)]), seeds[trace.number] % 2**62
        call = f"{type(subject).__name__}.stream(prompt of {len(prompt)} tokens, max_new_tokens={max_new_tokens}, seed={seed})"
        try:
            for count in subject.stream(prompt, max_new_tokens, seed):
                trace.events.append((time.monotonic() - start, _count(call, count)))
            if not trace.tokens:
                raise ContractError(f"{call} ended with no token: a stream yields each event's tokens as they arrive (a server "
                                    "that ignored \"stream\": true answers in one body, with no event to time)")
            trace.end = time.monotonic() - start
        except Exception as error:  # noqa: BLE001 - a failed request is counted and named, not raised
            trace.error, trace.broken = f"{type(error).__name__}: {error}"[:400], isinstance(error, ContractError)

    with ThreadPoolExecutor(max_workers=max(1, min(len(traces), 256)), thread_name_prefix="specdec-load") as pool:
        futures = []
        for trace in traces:
            delay = start + trace.arrival - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(one, trace))
        deadline = time.monotonic() + drain_timeout
        for future in futures:
            future.result(timeout=max(0.0, deadline - time.monotonic()) or None)
    return traces


def _count(call: str, count) -> int:
    """One event's count of tokens: an integer >= 0, else the stream broke its Protocol."""
    try:
        return as_int("count", count, minimum=0)
    except (TypeError, ValueError):
        raise ContractError(f"{call} yielded {type(count).__name__} {count!r}; a stream yields each event's number of tokens "
                            "(an integer >= 0)") from None


def wait_until_ready(*subjects) -> None:
    """Call each subject's ``wait_ready()`` where it has one (a server still booting), before any window starts: a
    request sent to a server that boots is refused, and would count as a failed request of the measured window."""
    for subject in subjects:
        ready = getattr(subject, "wait_ready", None)
        if callable(ready):
            ready()


def _percentiles(values) -> dict | None:
    arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if arr.size == 0:
        return None
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "mean": float(arr.mean()), "n": int(arr.size)}


def load_summary(traces: list[RequestTrace], duration: float, objective: Objective = Objective()) -> dict:
    """The measured requests' latencies (seconds), throughput and goodput (module docstring)."""
    counted = [t for t in traces if not t.warmup]
    done = [t for t in counted if t.error is None and t.end is not None]
    good = [t for t in done if t.ttft is not None and t.ttft <= objective.ttft and (t.tpot is None or t.tpot <= objective.tpot)]
    broken = [t for t in traces if t.broken]  # warm-up requests too: a subject that breaks its Protocol is broken
    return {"requests": len(counted), "completed": len(done), "failed": len(counted) - len(done),
            "first_error": next((t.error for t in counted if t.error), None),
            "protocol_breaks": len(broken), "first_protocol_break": broken[0].error if broken else None,
            "ttft": _percentiles(t.ttft for t in done), "tpot": _percentiles(t.tpot for t in done),
            "itl": _percentiles(g for t in done for g in t.itl), "e2e": _percentiles(t.e2e for t in done),
            "request_throughput": len(done) / duration, "token_throughput": sum(t.tokens for t in done) / duration,
            "goodput": len(good) / duration, "objective": asdict(objective)}


def _ratio(numerator, denominator, higher_is_better: bool) -> float | None:
    """speculative / autoregressive; 0 only for a higher-is-better metric (goodput that fell to 0), None when there is no
    number (a side without the metric, a denominator of 0)."""
    if numerator is None or not denominator or (not numerator and not higher_is_better):
        return None
    return float(numerator) / float(denominator)


def open_loop_row(speculative: StreamingDecoder, autoregressive: StreamingDecoder, prompts, *, rate: float, rounds: int = 3,
                  duration: float = 60.0, warmup: float = 10.0, max_new_tokens: int = 64, process: str = "poisson",
                  burstiness: float = 1.0, objective: Objective = Objective(), seed: int = 0, progress=print) -> dict:
    """Speculation off then on at ``rate``, ``rounds`` times (module docstring): the row (both sides pooled over rounds,
    each round's summaries, and the per-round ratios the gate reads)."""
    rounds = as_int("rounds", rounds, minimum=1)
    sides: dict = {"autoregressive": [], "speculative": []}
    per_round = []
    for number in range(rounds):
        summaries = {}
        for side, subject in (("autoregressive", autoregressive), ("speculative", speculative)):
            traces = run_open_loop(subject, prompts, rate=rate, duration=duration, warmup=warmup, max_new_tokens=max_new_tokens,
                                   process=process, burstiness=burstiness, seed=seed + number)
            sides[side] += traces
            summaries[side] = load_summary(traces, duration, objective)
            progress(f"  rate {rate:g}/s round {number + 1}/{rounds} {side}: {summaries[side]['completed']}/{summaries[side]['requests']} "
                     f"completed, goodput {summaries[side]['goodput']:.2f}/s, E2E p50 "
                     f"{(summaries[side]['e2e'] or {}).get('p50', float('nan')):.2f} s")
        per_round.append(summaries)
    ratios = {}
    for metric, pick, higher in (("e2e_p50", lambda s: (s["e2e"] or {}).get("p50"), False), ("tpot_p50", lambda s: (s["tpot"] or {}).get("p50"), False),
                                 ("ttft_p50", lambda s: (s["ttft"] or {}).get("p50"), False), ("goodput", lambda s: s["goodput"], True)):
        values = [_ratio(pick(r["speculative"]), pick(r["autoregressive"]), higher) for r in per_round]
        if values and all(v is not None for v in values):  # speculative / autoregressive per round
            ratios[metric] = {"values": values, "higher_is_better": higher}
    pooled = {side: load_summary(traces, duration * rounds, objective) for side, traces in sides.items()}
    return {"rate": rate, "process": process, "burstiness": burstiness, "duration": duration, "warmup": warmup, "rounds": rounds,
            "max_new_tokens": max_new_tokens, "prompts": len(prompts), **pooled, "per_round": per_round, "ratios": ratios}
