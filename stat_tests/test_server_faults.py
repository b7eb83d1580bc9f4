"""Faults in a server's life (issue 31), against the fake server: throttling (429 and 503 with Retry-After),
connections reset after the work was done, a slow phase, and a restart on the same port.  The client
retries what failed in transport with the same request (seed included), so a check under faults ends
with exactly the counts of the same check without them: no sample drawn twice, none lost, and none
half-answered counted (the server's log of what it drew shows the repeats; the client's log of what it
used shows each request once).  A server that stays away past the retry budget is an ERROR naming the
request."""

import time

import pytest

import specdec as sd
from fixtures.fake_server import MODEL, FakeServer, target_law
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.openai.retries import RetryPolicy, retry_after_seconds
from specdec.warpers import SamplingConfig

PROMPTS = [[1, 2, 0], [3, 3]]
SETTINGS = sd.RunSettings(n=1_200, chunk_size=200, seed=21, tv=None)


def _client(server, **kwargs) -> OpenAICompletionsDecoder:
    kwargs.setdefault("retry", RetryPolicy(budget=60.0, first=0.05, longest=0.5))
    return OpenAICompletionsDecoder(server.base_url, MODEL, sampling=SamplingConfig(temperature=1.0), samples_per_request=20,
                                    max_in_flight=4, request_timeout=5.0, **kwargs)


def _check(decoder, name: str, **settings):
    return sd.check_decoder(decoder, target_law(), PROMPTS, length=2, max_new_tokens=2, settings=SETTINGS, name=name, **settings)


@pytest.fixture(scope="module")
def undisturbed(specdec_budget):
    """The check without faults (under the run's budget: its verdict is asserted): the counts every faulty run
    must reproduce."""
    with FakeServer() as server:
        client = _client(server)
        report = _check(client, "no faults", budget=specdec_budget)
    assert report.verdict in ("PASS", "INCONCLUSIVE"), report.format()
    return report


def _same_counts(a, b) -> None:
    assert (a.samples, [(c.n, c.statistic, c.pvalue) for c in a.checks]) == (b.samples, [(c.n, c.statistic, c.pvalue) for c in b.checks])


@pytest.mark.parametrize("kind, injection, words", [
    ("throttle", dict(count=6), "HTTP 429"),
    ("unavailable", dict(count=6), "HTTP 503"),
    ("reset", dict(count=6), "RemoteDisconnected"),
    ("slow", dict(seconds=2.0, delay=6.0), "timeout"),
])
def test_a_check_under_server_faults_ends_with_the_counts_of_one_without_them(undisturbed, kind, injection, words):
    with FakeServer() as server:
        client = _client(server)
        client([PROMPTS[0]] * 4, 2, 0)  # warm: the fault lands inside the check
        server.inject(kind, **injection)
        report = _check(client, f"fake server, {kind}")
        served = list(server.served)
    assert report.verdict == undisturbed.verdict, report.format()
    _same_counts(report, undisturbed)
    assert client.faults and set(client.faults) == {words}, client.faults[:5]
    used = [seed for seed, _ in client.answered]
    assert len(used) == len(set(used))  # every request counted once
    if kind == "reset":  # drawn by the server, its answer lost, drawn again on retry: repeats on the server only
        assert len(served) > len(set(served)) == len(set(used))


class RestartsAt:
    """The client, with the server restarted (down ``down`` seconds) just before call ``call`` of the check."""

    def __init__(self, client, server, call: int, down: float) -> None:
        self.client, self.server, self.call, self.down, self.calls = client, server, call, down, 0

    def __call__(self, prompts, max_new_tokens, seed):
        self.calls += 1
        if self.calls == self.call:
            self.server.restart(down=self.down)
        return self.client(prompts, max_new_tokens, seed)


def test_a_restart_on_the_same_port_mid_check_loses_and_doubles_nothing(undisturbed):
    with FakeServer() as server:
        client = _client(server)
        report = _check(RestartsAt(client, server, call=3, down=1.5), "fake server restarted")
    _same_counts(report, undisturbed)
    assert "ConnectionRefusedError" in client.faults, client.faults[:5]
    used = [seed for seed, _ in client.answered]
    assert len(used) == len(set(used))


def test_counters_survive_a_restart():
    with FakeServer() as server:
        client = _client(server)
        client(PROMPTS * 10, 3, 1)
        before = client.speculation_counts()
        server.restart(down=0.2)
        time.sleep(0.6)
        client(PROMPTS * 10, 3, 2)
        after = client.speculation_counts()
    assert before["draft_tokens"] > 0 and all(after[k] > before[k] for k in ("drafts", "draft_tokens")), (before, after)


def test_a_server_that_stays_away_is_an_error_after_the_retry_budget():
    with FakeServer() as server:
        client = _client(server, retry=RetryPolicy(budget=1.5, first=0.1, longest=0.5))
        server.restart(down=60.0)
        started = time.monotonic()
        report = _check(client, "fake server gone")
    assert report.verdict == "ERROR" and time.monotonic() - started < 30
    message = report.error["message"]
    assert "gave up after" in message and "the retry budget is 1.5 s" in message and "seed=" in message, message


def test_retry_after_is_read_as_seconds_or_a_date():
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert 0 <= retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") <= 1e-9  # a date in the past: now
    policy = RetryPolicy(budget=10.0, first=0.5, longest=4.0, longest_wait=2.0)
    assert [policy.wait(a, None, time.monotonic()) for a in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.wait(0, 30.0, time.monotonic()) == 2.0 and policy.wait(0, 1.0, time.monotonic() - 9.5) is None


def test_the_fault_proxy_brings_a_deployments_faults_to_any_server(undisturbed):
    """The proxy make peers puts in front of vLLM, here in front of the fake: every kind of fault at once, and
    a restart behind it; the counts are the undisturbed run's."""
    from fixtures.fault_proxy import FaultProxy

    with FakeServer() as server, FaultProxy(server.base_url, timeout=30.0) as proxy:
        client = OpenAICompletionsDecoder(proxy.base_url, MODEL, sampling=SamplingConfig(temperature=1.0), samples_per_request=20,
                                          max_in_flight=4, request_timeout=5.0, retry=RetryPolicy(budget=60.0, first=0.05, longest=0.5))
        for kind in ("throttle", "unavailable", "reset"):
            proxy.inject(kind, count=3)
        proxy.inject("slow", count=2, delay=6.0)
        report = _check(RestartsAt(client, server, call=4, down=1.0), "fake server behind the fault proxy")
    _same_counts(report, undisturbed)
    assert set(proxy.injected_total) == {"throttle", "unavailable", "reset", "slow"}, proxy.injected_total
    used = [seed for seed, _ in client.answered]
    assert len(used) == len(set(used)) and len(client.faults) >= 9
