"""``specdec bench load`` end to end on subjects whose failures are planted (issue 40, items 9 and 10).

A side whose every request failed (an address nobody listens on, HTTP 500 on every request) is an ERROR (exit 3)
that shows the first error, and nothing is stored for the gate; a server that ignores ``"stream": true`` answers in
one body with no streamed event: a Protocol break naming the server and the request, never a completed request of
0 tokens; failures of some requests are shown beside the table, and the run is stored.
"""

from __future__ import annotations

import re

import pytest

from fixtures.fake_server import FakeServer
from fixtures.load_subjects import FAIL_ENV, URL_ENV
from specdec.cli import exit_codes, main
from specdec.decoding.models import smollm2_dir


@pytest.fixture(scope="module")
def tokenizer():
    """SmolLM2's folder, converted here on a fresh machine (test_smollm2.py would convert it later in the same run;
    these tests used to skip without it, so CI never ran them)."""
    folder = smollm2_dir()
    assert (folder / "tokenizer.json").exists(), folder
    return str(folder)


def load(capsys, tmp_path, tokenizer, subject, *extra):
    argv = ["bench", "load", subject, "--rate", "20", "--duration", "0.4", "--warmup", "0", "--rounds", "1", "--prompts", "2",
            "--new-tokens", "2", "--tokenizer", tokenizer, "--storage", str(tmp_path / "store"), *extra]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err, sorted((tmp_path / "store").rglob("*.json"))


@pytest.mark.parametrize("fault, says", [(None, "URLError"), ("error500", "HTTP 500")])
def test_a_side_whose_every_request_failed_is_an_error_showing_the_first(capsys, tmp_path, monkeypatch, tokenizer, fault, says):
    if fault is None:
        monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9")  # nobody listens there
        code, out, err, stored = load(capsys, tmp_path, tokenizer, "fixtures.load_subjects:fake_server")
    else:
        with FakeServer(fault) as server:
            monkeypatch.setenv(URL_ENV, server.base_url)
            code, out, err, stored = load(capsys, tmp_path, tokenizer, "fixtures.load_subjects:fake_server")
    assert code == exit_codes.ERROR, (out, err)
    assert "every request" in err and says in err and "autoregressive" in err, err
    assert "Traceback" not in err and not stored  # nothing for the gate to read


def test_a_server_that_ignores_stream_breaks_the_protocol(capsys, tmp_path, monkeypatch, tokenizer):
    with FakeServer() as server:  # answers /v1/completions in one JSON body, "stream" or not
        monkeypatch.setenv(URL_ENV, server.base_url)
        code, out, err, stored = load(capsys, tmp_path, tokenizer, "fixtures.load_subjects:fake_server")
        assert server.requests > 0  # the requests were answered, in one body each
    assert code == exit_codes.ERROR, (out, err)
    assert "Protocol" in err and "stream" in err and server.base_url in err and "POST" in err, err
    completed = re.findall(r"(\d+)/(\d+) completed", out)
    assert not stored and completed and all(done == "0" for done, _ in completed), out  # none completed with 0 tokens


def test_failures_of_some_requests_are_shown_and_the_run_is_stored(capsys, tmp_path, monkeypatch, tokenizer):
    monkeypatch.setenv(FAIL_ENV, "3")
    code, out, err, stored = load(capsys, tmp_path, tokenizer, "fixtures.load_subjects:flaky")
    assert code == exit_codes.OK, (out, err)
    assert "requests of the speculative side failed" in out and "planted failure of request" in out, out
    assert len(stored) == 1


def test_a_run_without_failures_is_stored_and_says_nothing_failed(capsys, tmp_path, monkeypatch, tokenizer):
    monkeypatch.setenv(FAIL_ENV, "0")
    code, out, err, stored = load(capsys, tmp_path, tokenizer, "fixtures.load_subjects:flaky")
    assert code == exit_codes.OK and len(stored) == 1, (out, err)
    assert "failed" not in out.replace("completed", "")
