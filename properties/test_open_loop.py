"""Open-loop load (issue 33) on fakes of known timing: the arrival processes, the per-request latencies and goodput
by their definitions, the rounds' ratios, our loop as a streaming subject, a server's stream read, the stored run."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from fixtures.models import tiny_pair
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.bench.arrivals import arrival_times
from specdec.bench.history import load_run
from specdec.bench.loop_server import LoopServer
from specdec.bench.open_loop import Objective, RequestTrace, load_summary, open_loop_row, run_open_loop, wait_until_ready
from specdec.bench.stored_run import write_run
from specdec.decoding import NgramDraft, SpeculativeDecoder
from specdec.errors import ServerRequestError


def test_arrivals_have_the_rate_asked_and_gamma_controls_the_burstiness():
    poisson = np.diff([0.0] + arrival_times(20.0, 500.0, seed=1))
    assert abs(len(poisson) / 500.0 - 20.0) < 0.5 and abs(poisson.std() / poisson.mean() - 1.0) < 0.05  # exponential: CV 1
    bursty = np.diff([0.0] + arrival_times(20.0, 500.0, process="gamma", burstiness=0.25, seed=1))
    assert abs(bursty.std() / bursty.mean() - 2.0) < 0.2  # CV = 1 / sqrt(shape)
    assert arrival_times(5.0, 10.0, seed=3) == arrival_times(5.0, 10.0, seed=3) and all(t < 10.0 for t in arrival_times(5.0, 10.0))
    with pytest.raises(ValueError, match="burstiness"):
        arrival_times(1.0, 1.0, burstiness=0.5)
    with pytest.raises(ValueError, match="rate"):
        arrival_times(0.0, 1.0)


def test_latencies_and_goodput_follow_their_definitions():
    fast = RequestTrace(0, 1.0, False, 1.0, [(1.2, 1), (1.3, 3), (1.5, 1)], 1.5)  # TTFT 0.2, TPOT 0.3 / 4, E2E 0.5
    slow = RequestTrace(1, 2.0, False, 2.0, [(4.0, 1), (4.1, 1)], 4.1)  # TTFT 2.0: misses the objective
    warm = RequestTrace(2, 0.1, True, 0.1, [(0.2, 1)], 0.2)  # warm-up: not counted
    failed = RequestTrace(3, 3.0, False, 3.0, error="ServerRequestError: HTTP 500")
    summary = load_summary([fast, slow, warm, failed], duration=10.0, objective=Objective(ttft=1.0, tpot=0.1))
    assert (summary["requests"], summary["completed"], summary["failed"]) == (3, 2, 1) and "HTTP 500" in summary["first_error"]
    assert fast.tpot == pytest.approx(0.075) and fast.itl == pytest.approx([0.1, 0.2]) and fast.tokens == 5
    assert summary["goodput"] == pytest.approx(0.1) and summary["request_throughput"] == pytest.approx(0.2)
    assert summary["ttft"]["p50"] == pytest.approx(1.1) and summary["e2e"]["n"] == 2 and summary["itl"]["n"] == 3


class _Sleepy:
    """A subject that answers ``tokens`` tokens, ``per_event`` at a time, ``seconds`` apart (one at a time if ``serial``)."""

    def __init__(self, seconds, per_event=1, serial=False):
        self.seconds, self.per_event, self.lock = seconds, per_event, threading.Lock() if serial else None

    def stream(self, prompt, max_new_tokens, seed):
        if self.lock:
            self.lock.acquire()
        try:
            for _ in range(0, max_new_tokens, self.per_event):
                time.sleep(self.seconds)
                yield self.per_event
        finally:
            if self.lock:
                self.lock.release()


def test_requests_are_sent_at_their_arrivals_and_queueing_counts_in_ttft():
    traces = run_open_loop(_Sleepy(0.02), [[1, 2]], rate=20.0, duration=1.0, warmup=0.2, max_new_tokens=4, seed=2)
    assert all(t.sent - t.arrival < 0.25 for t in traces) and all(t.tokens == 4 and t.error is None for t in traces)
    serial = run_open_loop(_Sleepy(0.05, serial=True), [[1]], rate=40.0, duration=0.5, warmup=0.0, max_new_tokens=2, seed=2)
    assert max(t.ttft for t in serial) > 0.3  # one at a time, 0.1 s each, 20 due: the last ones wait in the queue
    with pytest.raises(TypeError, match="must stream"):
        run_open_loop(lambda p, n, s: [], [[1]], rate=1.0, duration=1.0)


def test_servers_are_waited_for_before_the_first_window():
    class Booting(_Sleepy):
        waited = 0

        def wait_ready(self):
            self.waited += 1

    booting, plain = Booting(0.01), _Sleepy(0.01)
    wait_until_ready(booting, plain)
    assert booting.waited == 1  # a subject without wait_ready is taken as ready


def test_a_row_keeps_per_round_ratios_of_the_two_sides():
    row = open_loop_row(_Sleepy(0.005, per_event=4), _Sleepy(0.005), [[1]], rate=10.0, rounds=2, duration=0.6, warmup=0.1,
                        max_new_tokens=8, objective=Objective(ttft=1.0, tpot=0.5), progress=lambda line: None)
    assert set(row["ratios"]) >= {"e2e_p50", "tpot_p50", "goodput"} and len(row["ratios"]["e2e_p50"]["values"]) == 2
    assert all(v < 1 for v in row["ratios"]["e2e_p50"]["values"])  # four tokens an event: faster answers
    assert row["ratios"]["e2e_p50"]["higher_is_better"] is False and row["speculative"]["completed"] >= 6


def test_our_loop_streams_each_steps_tokens_and_a_queue_batches_what_waits():
    target, _ = tiny_pair(0, 8)
    server = LoopServer(SpeculativeDecoder(target, NgramDraft(), num_draft_tokens=2), max_batch=4)
    try:
        counts = list(server.stream([1, 2, 1, 2, 1, 2], 6, 0))
        assert sum(counts) == 6 and all(c >= 1 for c in counts)
        traces = run_open_loop(server, [[1, 2, 3], [4, 5]], rate=50.0, duration=0.3, warmup=0.0, max_new_tokens=5, seed=1)
        assert all(t.error is None and t.tokens == 5 for t in traces)
    finally:
        server.close()
    with pytest.raises(TypeError, match="SpeculativeDecoder"):
        LoopServer(object())


class _SSE(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["stream"] is True and body["return_token_ids"] is True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for ids in ([5], [6, 7], [8]):
            self.wfile.write(f"data: {json.dumps({'choices': [{'index': 0, 'text': 'x', 'token_ids': ids}]})}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


def test_a_servers_stream_is_read_event_by_event():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SSE)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = OpenAICompletionsDecoder(f"http://127.0.0.1:{server.server_address[1]}", "m")
        assert list(client.stream([1, 2], 4, 0)) == [1, 2, 1]
        refused = OpenAICompletionsDecoder("http://127.0.0.1:9", "m", request_timeout=2)
        with pytest.raises(ServerRequestError, match="streamed"):
            list(refused.stream([1], 2, 0))
    finally:
        server.shutdown()


def test_a_stored_open_loop_run_is_read_by_the_gate(tmp_path):
    row = {"rate": 1.0, "ratios": {"goodput": {"values": [1.2, 1.1], "higher_is_better": True}}}
    path = write_run(tmp_path, [{"fullname": "open-loop::ours::K4::rate=1", "median": 0.5, "extra_info": row}], commit="abc")
    run = load_run(path)
    assert run.commit == "abc" and run.benchmarks["open-loop::ours::K4::rate=1"]["extra_info"]["ratios"]["goodput"]["values"] == [1.2, 1.1]
    assert write_run(tmp_path, [], commit="abc").name.startswith("0002_")


# ---------------------------------------------------------------- failures that must not pass as measurements (issue 40)


class _Silent:
    """Streams nothing: an answer "completed" with no token (what a server that ignored "stream" looked like)."""

    def stream(self, prompt, max_new_tokens, seed):
        return iter(())


def test_a_stream_that_brings_no_token_is_a_protocol_break_not_a_completed_request():
    traces = run_open_loop(_Silent(), [[1, 2]], rate=20.0, duration=0.3, warmup=0.0, max_new_tokens=3, seed=1)
    assert traces and all(t.broken and t.end is None for t in traces)
    assert all("_Silent.stream" in t.error and "no token" in t.error and "max_new_tokens=3" in t.error for t in traces)
    summary = load_summary(traces, 0.3)
    assert summary["completed"] == 0 and summary["protocol_breaks"] == len(traces) and "no token" in summary["first_protocol_break"]


def test_a_server_that_ignores_stream_is_a_protocol_break_naming_the_request():
    from fixtures.fake_server import FakeServer
    from specdec.errors import ContractError

    with FakeServer() as server:  # one JSON body, whatever "stream" says
        client = OpenAICompletionsDecoder(server.base_url, "fake-markov", metrics_url=False)
        with pytest.raises(ContractError, match="no streamed event") as caught:
            list(client.stream([1, 2], 3, 0))
    assert f"{server.base_url}/v1/completions" in str(caught.value) and "stream" in str(caught.value)


def test_a_goodput_that_falls_to_zero_keeps_its_ratio_of_zero():
    """No speculative request meets the objective, every autoregressive one does: the goodput ratio is 0 (judged a
    regression by the gate), not a missing ratio (which the gate could only call DROPPED)."""
    row = open_loop_row(_Sleepy(0.15), _Sleepy(0.001), [[1]], rate=10.0, rounds=2, duration=0.4, warmup=0.0, max_new_tokens=2,
                        objective=Objective(ttft=0.1, tpot=1.0), progress=lambda line: None)
    assert row["speculative"]["goodput"] == 0 and row["autoregressive"]["goodput"] > 0
    assert row["ratios"]["goodput"] == {"values": [0.0, 0.0], "higher_is_better": True}


def test_an_absurd_rate_is_refused_before_any_arrival_is_drawn():
    from specdec.bench.arrivals import MAX_ARRIVALS

    started = time.perf_counter()
    for rate, duration in ((1e12, 70.0), (1e300, 1e300), (MAX_ARRIVALS / 10 + 1, 10.0)):
        with pytest.raises(ValueError, match="arrivals"):
            arrival_times(rate, duration)
    assert time.perf_counter() - started < 1.0
    assert len(arrival_times(MAX_ARRIVALS / 100, 10.0, seed=0)) < MAX_ARRIVALS
