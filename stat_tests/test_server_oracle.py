"""A server as the law oracle (issue 29): :class:`specdec.adapters.vllm.server_oracle.VLLMServerOracle` on the fake
server, which answers ``prompt_logprobs`` in vLLM 0.32's format (raw log-probabilities; ``peers/`` runs the
same oracle on vLLM itself), and ``specdec check --oracle-server``.

* the laws rebuilt from raw top-k log-probabilities are vLLM's sampled laws: against specdec's own warpers on
  full rows (temperature, top-k, top-p: the order both apply), and, with fewer listed tokens than the
  vocabulary, the listed ones plus one rest mass;
* settings whose law raw log-probabilities cannot give are refused by name;
* a server that samples its law PASSes every token against it; a crossed wire between prompts FAILs; an answer
  with missing log-probabilities is an ERROR of the law oracle, naming the request;
* the CLI runs both checks - per token and A/B - at half the family alpha each and prints both.
"""

import json

import numpy as np
import pytest
import torch

from fixtures.fake_server import V, FakeServer, law
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.adapters.vllm.server_oracle import VLLMServerOracle, law_from_logprobs
from specdec.cli import main
from specdec.conformance import check_tokens
from specdec.warpers import SamplingConfig, warped_probs

PROMPTS = [[1, 2, 3], [4, 5, 0]]


def _entry(logp: np.ndarray) -> dict:
    return {str(t): {"logprob": float(x), "rank": 0, "decoded_token": ""} for t, x in enumerate(logp)}


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=0.7, top_k=5), SamplingConfig(temperature=1.3, top_k=12, top_p=0.8),
                                      SamplingConfig(temperature=0.5, top_k=20, top_p=0.6), SamplingConfig(temperature=0)])
def test_rebuilt_laws_are_the_warped_rows(sampling):
    rng = np.random.default_rng(7)
    for _ in range(50):
        logits = torch.tensor(rng.normal(size=20) * rng.uniform(0.5, 3), dtype=torch.float64)
        logp = torch.log_softmax(logits, -1).numpy()
        rebuilt = law_from_logprobs(_entry(logp), sampling)
        full = np.zeros(20)
        full[rebuilt.ids] = rebuilt.probs
        expected = warped_probs(logits[None], sampling, dtype=torch.float64)[0].numpy()
        assert rebuilt.rest == 0 and np.allclose(full, expected, atol=1e-12), (sampling, full, expected)


def test_a_partial_listing_is_the_listed_tokens_and_one_rest_mass():
    with FakeServer() as server:
        oracle = VLLMServerOracle(server.base_url, "fake", top_logprobs=2)
        laws = oracle.token_laws([[1]], [[2, 5, 5]])[0]
    for token_law, context in zip(laws, ([1], [1, 2], [1, 2, 5])):
        row = law(context)
        top_two = np.lexsort((np.arange(V), -row))[:2]  # the actual token, listed by vLLM when outside the two, is not kept
        assert sorted(token_law.ids) == sorted(top_two) and np.allclose(token_law.probs, row[token_law.ids], atol=1e-12)
        assert token_law.rest == pytest.approx(1 - row[token_law.ids].sum(), abs=1e-12)


def test_a_server_sampling_its_raw_law_passes_against_a_partial_listing(specdec_budget):
    """Temperature 1 against the top 2 of 8 and a rest cell: unbiased only if the listing does not depend on the token."""
    with FakeServer() as correct, FakeServer() as reference:
        report = check_tokens(_decoder(correct), VLLMServerOracle(reference.base_url, "fake", top_logprobs=2), PROMPTS, length=4,
                              tv=0.1, seed=3, budget=specdec_budget, name="fake server, T=1, per token vs its top-2 prompt_logprobs")
    assert report.verdict == "PASS" and report.reached_tv <= 0.1, report.format()


@pytest.mark.parametrize("sampling, says", [
    (SamplingConfig(temperature=0.7), "temperature 1 without truncation, or a top_k <= top_logprobs"),
    (SamplingConfig(temperature=1.0, top_p=0.9), "needs the whole tempered row"),
    (SamplingConfig(temperature=0.7, top_k=50), "top_k <= top_logprobs (20)"),
])
def test_settings_raw_log_probabilities_cannot_give_are_refused(sampling, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        VLLMServerOracle("http://127.0.0.1:9", "fake", sampling=sampling)


def _decoder(server, temperature=1.0, top_k=None):
    return OpenAICompletionsDecoder(server.base_url, "fake", sampling=SamplingConfig(temperature=temperature, top_k=top_k),
                                    samples_per_request=16, max_in_flight=4, name="fake server")


def test_a_server_sampling_its_law_passes_and_a_crossed_wire_fails(specdec_budget):
    with FakeServer() as correct, FakeServer("swap") as crossed, FakeServer() as reference:
        tempered = VLLMServerOracle(reference.base_url, "fake", sampling=SamplingConfig(temperature=0.7, top_k=V))
        report = check_tokens(_decoder(correct, 0.7, V), tempered, PROMPTS, length=8, tv=0.1, seed=1, budget=specdec_budget,
                              name="fake server, T=0.7, per token vs its prompt_logprobs")
        assert report.verdict == "PASS" and report.reached_tv <= 0.1, report.format()
        bad = check_tokens(_decoder(crossed), VLLMServerOracle(reference.base_url, "fake"), PROMPTS, length=8, tv=0.1, seed=2,
                           family_alpha=1e-6, name="crossed wire")
        assert bad.verdict == "FAIL" and bad.stopped_early is not None, bad.format()


def test_missing_log_probabilities_are_an_error_of_the_oracle_naming_the_request():
    with FakeServer() as subject, FakeServer("short_logprobs") as broken:
        report = check_tokens(_decoder(subject), VLLMServerOracle(broken.base_url, "fake"), PROMPTS, length=4, n=32, tv=None, seed=3)
    assert report.verdict == "ERROR" and report.error["party"] == "law oracle", report.format()
    assert "prompt_logprobs" in report.error["message"] and "POST http://127.0.0.1:" in report.error["message"], report.error


def test_the_cli_runs_both_checks_at_half_the_family_alpha_each(tmp_path, capsys):
    with FakeServer() as subject, FakeServer() as oracle:
        out = tmp_path / "both.json"
        code = main(["check", "--server", subject.base_url, "--model", "fake", "--oracle-server", oracle.base_url,
                     "--prompts", "1,2,3;4,5,0", "--length", "2", "--oracle-length", "8", "--tv", "0.3", "--family-alpha", "1e-6",
                     "--samples-per-request", "16", "--json", str(out)])
    reports = json.loads(out.read_text())["subjects"]
    printed = capsys.readouterr().out
    assert code == 0 and [r["level"] for r in reports] == ["per-token (law oracle)", "A/B (two samples)"], printed
    assert all(r["verdict"] == "PASS" and r["family_alpha"] == pytest.approx(5e-7) for r in reports), printed
    assert "2 subjects: 2 PASS" in printed and "per token vs http://127.0.0.1:" in printed


@pytest.mark.parametrize("argv, says", [
    (["--oracle-server", "http://127.0.0.1:9", "--prompts", "1"], "--oracle-server checks a --server"),
    (["--server", "http://127.0.0.1:9", "--model", "m", "--oracle-server", "http://127.0.0.1:9", "--reference-server",
      "http://127.0.0.1:9", "--prompts", "1"], "give it without --reference"),
    (["--server", "http://127.0.0.1:9", "--model", "m", "--oracle-server", "http://127.0.0.1:9", "--prompts", "1",
      "--temperature", "0.7"], "--oracle-server 'http://127.0.0.1:9': vLLM's server returns raw log-probabilities"),
])
def test_bad_oracle_arguments_are_one_line(capsys, argv, says):
    assert main(["check", *argv, "--json", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
