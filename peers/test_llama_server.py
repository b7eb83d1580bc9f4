"""llama.cpp's own llama-server (built from llama-cpp-python 0.3.36's vendored sources, ``make llama-server``) through
:class:`specdec.adapters.llama_cpp.llama_server.LlamaServerDecoder`, on the real binary.  Runs in ``.venv-llama``
with ``make peers-slow`` and ``make peers-matrix`` (which build it first); skipped, saying so, where the binary has
not been built (``make peers`` does not build it: the build takes about 6 minutes of CI's hour).

* the adapter accepts this build (``/props``) and reads ``tokens`` and the speculation counters;
* llama-server's speculation is a coupling (``common_sampler_sample_and_accept_n`` draws every emitted token from the
  target with one draw each): a seeded request gives the same tokens with prompt lookup or a draft model as without;
* the law with speculation is the law without it (A/B PASS, drafts verified, from the run's budget).

About 2 minutes on 2 shared cores.
"""

import pytest

import specdec as sd
from fixtures import vllm_subjects
from scripts.matrix import llama_server as matrix
from scripts.matrix.settings import BASE, LENGTH
from specdec.adapters.llama_cpp.llama_server import DEFAULT_BINARY, TESTED_BUILD

pytestmark = [pytest.mark.peers, pytest.mark.skipif(not DEFAULT_BINARY.exists(), reason=f"{DEFAULT_BINARY} not built (make llama-server)")]
SAMPLED = sd.SamplingSettings(**BASE)


@pytest.fixture(scope="module")
def servers():
    started = {name: matrix.start(None if name == "plain" else name) for name in ("plain", "ngram", "draft")}
    try:
        for server in started.values():
            server.wait_ready()
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.mark.parametrize("method", ["ngram", "draft"])
def test_a_seeded_request_gives_the_same_tokens_with_speculation_as_without(servers, method):
    rows = [vllm_subjects.PROMPT] * 64
    spec = matrix.client(servers[method], SAMPLED, method)
    plain = matrix.client(servers["plain"], SAMPLED, "plain")
    ours, theirs = spec(rows, 8, 123), plain(rows, 8, 123)
    assert TESTED_BUILD in spec.build_info()
    counts = spec.speculation_counts()
    equal = sum(a == b for a, b in zip(ours, theirs))
    print(f"{method}: {equal} of {len(rows)} seeded rows equal; drafts {counts}; {len(set(map(tuple, ours)))} distinct answers")
    assert counts["drafts"] > 0 and counts["accepted_tokens"] > 0, counts
    assert len(set(map(tuple, ours))) > 1  # sampled, not one answer
    assert equal >= 60, (equal, ours[:4], theirs[:4])  # up to the rounding of batched logits: a coupling


def test_prompt_lookup_keeps_the_law(servers, specdec_budget):
    subject = matrix.client(servers["ngram"], SAMPLED, "llama-server, ngram-simple K=4")
    reference = matrix.client(servers["plain"], SAMPLED, "llama-server, no draft")
    report = sd.check_ab(subject, reference, [vllm_subjects.PROMPT], length=LENGTH, max_new_tokens=LENGTH, n=400, tv=None, seed=43,
                         budget=specdec_budget, name="llama-server prompt lookup vs no draft")
    print(report.format())
    assert report.verdict == "PASS" and report.speculation["drafts"] > 50, report.format()
