"""A running OpenAI-compatible server as a subject (specdec.adapters.openai.client), against the fake
server of fixtures/fake_server.py, whose exact law is known (a first-order Markov law over V = 6).

The correct fake PASSes under the run's error budget, with the server's speculation counters in the
report.  Planted faults, each checked outside the budget (expected FAILs cost no alpha): a server that
ignores the request's seed FAILs and its rows show as copies; a server that crosses its answers FAILs
when the crossed requests carry different prompts - between requests of one prompt the crossing is
invisible to any check of the law (both answers are independent draws of the same law), which the
last test states.  A server that answers garbage, errors, hangs or is not there gives the verdict
ERROR, naming the request.
"""

import json

import pytest

import specdec as sd
from fixtures.fake_server import EOS, MODEL, FakeServer, sample, target_law
from specdec.adapters.openai.client import OpenAICompletionsDecoder, ServerRequestError, parse_counters, request_seeds
from specdec.adapters.openai.process import free_port
from specdec.adapters.openai.wire import read_choices

PROMPTS = [[1, 2, 0], [3, 4, 2]]  # different last tokens: different laws of the next two tokens


def client(server, **kwargs) -> OpenAICompletionsDecoder:
    kwargs.setdefault("samples_per_request", 256)
    kwargs.setdefault("max_in_flight", 8)
    return OpenAICompletionsDecoder(server.base_url, MODEL, **kwargs)


def independence(report) -> list[dict]:
    return [c.details["independence"] for c in report.checks]


def test_a_correct_server_passes_and_reports_its_speculation(specdec_budget):
    with FakeServer() as server:
        report = sd.check_decoder(client(server), target_law(), PROMPTS, length=2, max_new_tokens=2, tv=0.05, seed=11,
                                  budget=specdec_budget, name="fake OpenAI server (correct)")
    assert report.verdict == "PASS", report.format()
    spec = report.speculation
    assert spec is not None and spec["drafts"] == report.samples * len(PROMPTS) and 0 < spec["accepted_tokens"] < spec["draft_tokens"], spec
    assert not any(entry["dependent"] for entry in independence(report)), report.format()


def test_a_server_that_ignores_the_seed_fails_and_its_rows_are_copies():
    """Every request drawn with seed 0: each request of 4 rows returns the same 4 rows, in every call."""
    with FakeServer("fixed_seed") as server:
        report = sd.check_decoder(client(server, samples_per_request=4), target_law(), PROMPTS, length=2, max_new_tokens=2,
                                  n=2000, seed=12, name="fake server ignoring seeds")
    assert report.verdict == "FAIL", report.format()
    assert all(entry["dependent"] and entry["z"] > 20 for entry in independence(report)), independence(report)


def test_a_server_that_crosses_answers_between_prompts_fails():
    with FakeServer("swap") as server:
        report = sd.check_decoder(client(server), target_law(), PROMPTS, length=2, max_new_tokens=2, n=2000, seed=13,
                                  name="fake server crossing answers")
    assert report.verdict == "FAIL", report.format()


def test_crossed_answers_between_requests_of_one_prompt_are_invisible_to_a_law_check():
    """The limit of any check of the law: swapping two independent draws of one law leaves the law
    and the independence of rows intact.  (A prompt echo would show it; the client checks
    ``prompt_token_ids`` when a server returns it, and the fake echoes the right prompt.)"""
    with FakeServer("swap") as server:
        report = sd.check_decoder(client(server), target_law(), PROMPTS[:1], length=2, max_new_tokens=2, n=2000, tv=None,
                                  seed=14, name="fake server crossing answers, one prompt")
    assert report.verdict != "FAIL", report.format()
    assert not independence(report)[0]["dependent"]


@pytest.mark.parametrize("fault, says", [("malformed", "the body is not JSON"), ("error500", "HTTP 500"),
                                         ("hang", "no answer within request_timeout=0.5 s")])
def test_a_broken_server_is_an_error_that_names_the_request(fault, says):
    with FakeServer(fault) as server:
        decoder = client(server, request_timeout=0.5, retry=1.0)  # a hang is retried, within a budget of 1 s
        report = sd.check_decoder(decoder, target_law(), PROMPTS, length=2, max_new_tokens=2, n=200, seed=15, name=f"fake {fault}")
    assert report.verdict == "ERROR", report.format()
    message = report.error["message"]
    assert message.startswith("ServerRequestError: request ") and f"POST {decoder.url}" in message, message
    assert "prompt row " in message and "n=" in message and "seed=" in message and says in message, message


def test_a_refused_connection_is_an_error():
    port = free_port()  # nothing listens there
    decoder = OpenAICompletionsDecoder(f"http://127.0.0.1:{port}", MODEL, retry=2.0)
    report = sd.check_decoder(decoder, target_law(), PROMPTS, length=2, max_new_tokens=2, n=100, seed=16)
    assert report.verdict == "ERROR", report.format()
    assert f"127.0.0.1:{port}/v1/completions" in report.error["message"] and "refused" in report.error["message"].lower()
    assert "gave up after" in report.error["message"] and "the retry budget is 2 s" in report.error["message"]
    assert decoder.speculation_counts() is None and "127.0.0.1" in decoder.metrics_error


# ---- the client's protocol (no statistics) ----

def test_a_call_is_reproducible_its_rows_independent_and_in_input_order():
    rows = [PROMPTS[i % 2] for i in range(40)]
    with FakeServer() as server:
        decoder = client(server, samples_per_request=8, max_in_flight=3)
        first, again, other = decoder(rows, 3, 5), decoder(rows, 3, 5), decoder(rows, 3, 6)
    assert first == again and first != other
    plan = decoder.plan(rows, 5)
    assert [r.seed for r in plan] == request_seeds(5, len(plan)) and len(set(r.seed for r in plan)) == len(plan)
    assert [r.prompt for r in plan[:2]] == [tuple(PROMPTS[0]), tuple(PROMPTS[1])]  # round-robin over prompts
    for request in plan:  # each row is the fake's draw for its request and its place in it
        expected = sample(request.prompt, len(request.rows), 3, request.seed, 1.0, True)
        assert [first[row] for row in request.rows] == expected


def test_the_request_carries_the_sampling_and_eos_settings():
    decoder = OpenAICompletionsDecoder("http://127.0.0.1:1/v1/", MODEL, sampling=sd.SamplingConfig(temperature=0.7, top_p=0.8),
                                       ignore_eos=False)
    assert decoder.url == "http://127.0.0.1:1/v1/completions" and decoder.metrics_url == "http://127.0.0.1:1/metrics"
    body = decoder.payload(decoder.plan([[1, 2]], 0)[0], 4)
    assert body == {"model": MODEL, "prompt": [1, 2], "max_tokens": 4, "temperature": 0.7, "top_p": 0.8, "top_k": 0, "min_p": 0.0,
                    "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": body["seed"], "n": 1,
                    "ignore_eos": False, "return_token_ids": True, "logprobs": None, "stream": False}  # every field, "off" included
    with_k = OpenAICompletionsDecoder("http://h:1", MODEL, sampling=sd.SamplingConfig(top_k=3)).payload(decoder.plan([[1]], 0)[0], 1)
    assert with_k["top_k"] == 3 and json.dumps(with_k)


def test_without_ignore_eos_the_server_stops_and_the_check_reads_eos_as_absorbing(specdec_budget):
    with FakeServer() as server:
        report = sd.check_decoder(client(server, ignore_eos=False), target_law(), [[5, 4], [1, 5]], length=2, max_new_tokens=3,
                                  eos_token_id=EOS, tv=0.05, seed=17, budget=specdec_budget, name="fake server stopping at EOS")
    assert report.verdict == "PASS", report.format()


def test_counters_are_summed_over_label_sets_and_absent_counters_are_none():
    text = ('# TYPE vllm:spec_decode_num_drafts_total counter\n'
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 3.0\n'
            'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 4.0\n'
            'vllm:spec_decode_num_draft_tokens_total{engine="0"} 12.0\n'
            'vllm:spec_decode_num_accepted_tokens_total 5\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 99\n')
    # the per-position counter is kept apart (position 0 is the first draft), never added to accepted_tokens
    assert parse_counters(text) == {"drafts": 7, "draft_tokens": 12, "accepted_tokens": 5, "accepted_at_1": 99}
    assert parse_counters("# nothing\nother_total 3\n") is None
    with FakeServer("no_counters") as server:
        assert client(server).speculation_counts() is None
    assert OpenAICompletionsDecoder("http://h:1", MODEL, metrics_url=None).speculation_counts() is None


@pytest.mark.parametrize("kwargs, error, names", [
    (dict(base_url="127.0.0.1:8000"), ValueError, "base_url"),
    (dict(base_url=8000), TypeError, "base_url"),
    (dict(model=""), ValueError, "model"),
    (dict(sampling={"temperature": 1}), TypeError, "sampling"),
    (dict(samples_per_request=0), ValueError, "samples_per_request"),
    (dict(max_in_flight=True), TypeError, "max_in_flight"),
    (dict(request_timeout=0), ValueError, "request_timeout"),
    (dict(ignore_eos="yes"), TypeError, "ignore_eos"),
    (dict(metrics_url="/metrics"), ValueError, "metrics_url"),
])
def test_constructor_arguments_are_validated_by_name(kwargs, error, names):
    arguments = {"base_url": "http://127.0.0.1:8000", "model": MODEL, **kwargs}
    with pytest.raises(error, match=names):
        OpenAICompletionsDecoder(arguments.pop("base_url"), arguments.pop("model"), **arguments)


def test_a_wrong_number_of_choices_names_the_request():
    with FakeServer() as server:
        decoder = client(server)
        request = decoder.plan([[1, 2]] * 3, 0)[0]
        body = json.dumps({"choices": [{"index": 0, "token_ids": [1]}]}).encode()
        with pytest.raises(ServerRequestError, match=r"1 choices for n=3: "):
            read_choices(request, body, 200, "request 1 of 1")
        body = json.dumps({"choices": [{"index": i, "token_ids": [1, "2"]} for i in range(3)]}).encode()
        with pytest.raises(ServerRequestError, match=r"token_ids is missing or not a list of token ids"):
            read_choices(request, body, 200, "request 1 of 1")
        body = json.dumps({"choices": [{"index": i, "token_ids": [1], "prompt_token_ids": [9]} for i in range(3)]}).encode()
        with pytest.raises(ServerRequestError, match=r"is not the prompt sent"):
            read_choices(request, body, 200, "request 1 of 1")


def test_the_cli_checks_a_server_against_a_law_and_two_servers_against_each_other(tmp_path, specdec_budget):
    """``specdec check --server``: one server against the law specdec computes (PASS, within this run's
    budget), and two servers against each other (two samples): a crossed wire between prompts FAILs."""

    from specdec.cli import main

    entry = specdec_budget.allot(1, "CLI: a fake server against its exact law")
    with FakeServer() as correct, FakeServer("swap") as crossed:
        out = tmp_path / "one.json"
        code = main(["check", "--server", correct.base_url, "--model", "fake", "--target", "fixtures.fake_server:target_law",
                     "--prompts", "1,2,3", "--length", "2", "--n", "600", "--tv", "0.5", "--family-alpha", repr(entry.alpha),
                     "--json", str(out)])
        report = json.loads(out.read_text())["subjects"][0]
        assert code == 0 and report["verdict"] == "PASS" and report["level"] == "decoder", report["summary"]
        out = tmp_path / "ab.json"
        code = main(["check", "--server", correct.base_url, "--model", "fake", "--reference-server", crossed.base_url,
                     "--prompts", "1,2,3;4,5,0", "--length", "2", "--n", "600", "--tv", "0.5", "--samples-per-request", "8",
                     "--json", str(out)])
        report = json.loads(out.read_text())["subjects"][0]
        assert code == 1 and report["verdict"] == "FAIL" and report["level"] == "A/B (two samples)", report["summary"]
