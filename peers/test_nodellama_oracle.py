"""node-llama-cpp 3.21.1's own per-token law (:class:`specdec.adapters.nodellama.NodeLlamaOracle`) on SmolLM2's Q4_1 GGUF.

Runs with ``.venv-llama``'s Python after ``make .peers/nodellama/.installed`` (``make peers-nodellama``).  What it shows:

* arguments and settings the oracle cannot take are refused by name before Node starts, as the decoder's;
* greedy: the oracle's one-hot law at every position is the engine's own choice - the rows node-llama-cpp draws at
  T = 0 without speculation are the argmax chains of the oracle's laws, on the per-token matrix's four prompts;
* the laws are the engine's sampled laws: truncated laws are listed whole (at T = 0.7, top-p 0.8 the " cat"/" dog"
  token prompt's first position keeps 2644 and 2767 only, in the ratio node-llama-cpp reports), an untruncated one
  travels as its 32 most likely tokens and the rest's mass, every law sums to 1; the penalty history is the answer's
  earlier tokens (a repetition penalty lowers a token the answer already holds, against the law without it);
* why the matrix does not judge node-llama-cpp with llama-cpp-python's build (the oracle's docstring): at that prompt
  llama-cpp-python 0.3.36's llama.cpp ends the top-p 0.8 nucleus after 2644 before token 198, node-llama-cpp's law keeps
  198 - two builds, two laws;
* ``make peers``' per-token penalty cell for node-llama-cpp (the engine takes no processor): at T = 0.7, top-p 0.8 with a
  repetition penalty of 1.5, 4 tokens after the " cat"/" dog" text prompt, the engine without a predictor PASSes against
  this oracle (the control, 64 answers), then input lookup FAILs (a drafted position sampled under its step's first
  penalty history: ``scripts/findings/nodellama_penalty_at_drafted_positions.py``), judged at family-wise alpha 1e-6.

About 2 minutes.  The control at power (the engine without speculation against this oracle, every setting, the
matrix's prompts) is the first check of every cell of ``scripts.matrix.nodellama_tokens``.
"""

import numpy as np
import pytest

import specdec
from fixtures.token_cell_log import keep_token_cell
from fixtures.vllm_subjects import PROMPT
from scripts.matrix.token_prompts import token_prompts
from specdec import SamplingSettings
from specdec.adapters.nodellama import NodeLlamaDecoder, NodeLlamaOracle
from specdec.decoding.models import GGUF_FILE, _gguf_dir
from specdec.sampling_settings import UnsupportedSetting

pytestmark = pytest.mark.peers
GREEDY = SamplingSettings(temperature=0.0)
NUCLEUS = SamplingSettings(temperature=0.7, top_p=0.8)
T1 = SamplingSettings(temperature=1.0)
PENALTY = SamplingSettings(temperature=0.7, top_p=0.8, repetition_penalty=1.5)
CAT_DOG = list(token_prompts()[3])  # the drafting-friendly prompt of the matrix: " cat"/" dog" tokens (2644, 2767)


def gguf() -> str:
    return str(_gguf_dir() / GGUF_FILE)


def law_of(law, token: int) -> float:
    hit = np.flatnonzero(law.ids == token)
    return float(law.probs[hit[0]]) if hit.size else 0.0


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(floor=-0.1), ValueError, r"floor must be >= 0"),
    (dict(keep=0), ValueError, r"keep must be an integer >= 1"),
    (dict(list_all=8), ValueError, r"list_all must be an integer >= 32"),
    (dict(check_version="yes"), TypeError, r"check_version must be a bool"),
    (dict(settings=SamplingSettings(temperature=0.7, logit_bias=((2767, 1.0),))), UnsupportedSetting, r"logit_bias"),
    (dict(settings=SamplingSettings(temperature=0.7, min_new_tokens=2, stop_token_ids=(2767,))), UnsupportedSetting,
     r"min_new_tokens"),
])
def test_bad_arguments_are_refused_by_name_before_node_starts(kwargs, error, message):
    with pytest.raises(error, match=message):
        NodeLlamaOracle(gguf(), **kwargs)


def test_a_missing_model_and_bad_calls_are_refused():
    with pytest.raises(FileNotFoundError, match="is not a file"):
        NodeLlamaOracle("/nonexistent.gguf")
    with NodeLlamaOracle(gguf(), settings=NUCLEUS) as oracle:
        with pytest.raises(ValueError, match="must pair up"):
            oracle.token_laws([CAT_DOG], [])
        with pytest.raises(ValueError, match=r"continuations\[0\]\[1\] must be an integer <= 49151, got 49152"):
            oracle.token_laws([CAT_DOG], [[2644, 49152]])
        with pytest.raises(ValueError, match=r"prompts\[0\] is empty"):
            oracle.token_laws([[]], [[2644]])
        with pytest.raises(ValueError, match="context holds 1024"):
            oracle.token_laws([CAT_DOG * 60], [[2644]])
        assert oracle.token_laws([CAT_DOG], [[]]) == [[]]


def test_the_greedy_law_is_the_engines_own_choice():
    prompts = [list(p) for p in token_prompts()]
    with NodeLlamaDecoder(gguf(), settings=GREEDY) as engine:
        rows = engine(prompts, 12, 0)
    with NodeLlamaOracle(gguf(), settings=GREEDY) as oracle:
        laws = oracle.token_laws(prompts, rows)
    for row, row_laws in zip(rows, laws):
        assert [law.ids.tolist() for law in row_laws] == [[t] for t in row]
        assert all(law.probs.tolist() == [1.0] and law.rest == 0 for law in row_laws)


def test_the_laws_are_the_engines_sampled_laws():
    with NodeLlamaOracle(gguf(), settings=NUCLEUS) as nucleus, NodeLlamaOracle(gguf(), settings=T1) as whole, \
            NodeLlamaOracle(gguf(), settings=SamplingSettings(temperature=0.7, top_p=0.8, repetition_penalty=1.5)) as penalised:
        answer = [2644, 2644, 198, 2644]
        truncated, = nucleus.token_laws([CAT_DOG], [answer])
        untruncated, = whole.token_laws([CAT_DOG], [answer])
        penalty, = penalised.token_laws([CAT_DOG], [answer])
    for law in truncated + untruncated + penalty:
        assert abs(float(law.probs.sum()) + law.rest - 1) < 1e-6, law
    first = truncated[0]
    assert sorted(first.ids.tolist()) == [2644, 2767] and first.rest == 0  # top-p 0.8 ends after two tokens
    # at T = 1 the two tokens' ratio is the untruncated law's; at T = 0.7 it is that ratio to the power 1 / 0.7
    ratio = law_of(untruncated[0], 2644) / law_of(untruncated[0], 2767)
    assert law_of(first, 2644) / law_of(first, 2767) == pytest.approx(ratio ** (1 / 0.7), rel=1e-3)
    assert all(law.ids.size == 32 and law.rest > 0 for law in untruncated)  # ~49,000 candidates: the 32 most likely and the rest
    assert 198 in truncated[1].ids.tolist()  # node-llama-cpp's nucleus after 2644 keeps the newline (below)
    # the penalty's history is the answer so far: at position 2 (after 2644) the repeated token is penalised, at position
    # 1 (empty history) the law is the unpenalised one
    assert law_of(penalty[0], 2644) == pytest.approx(law_of(first, 2644), abs=1e-6)
    assert law_of(penalty[1], 2644) < law_of(truncated[1], 2644) - 0.1


def test_llama_cpp_pythons_build_is_another_law():
    from specdec.adapters.llama_cpp.oracle import LlamaCppOracle

    with NodeLlamaOracle(gguf(), settings=NUCLEUS) as own:
        node_law = own.token_laws([CAT_DOG], [[2644, 2644]])[0][1]
    other = LlamaCppOracle(gguf(), settings=NUCLEUS, llama_args={"n_threads": 1})
    try:
        other_law = other.token_laws([CAT_DOG], [[2644, 2644]])[0][1]
    finally:
        other.close()
    print(f"\nafter 2644: node-llama-cpp {dict(zip(node_law.ids.tolist(), node_law.probs.round(4).tolist()))}, "
          f"llama-cpp-python {dict(zip(other_law.ids.tolist(), other_law.probs.round(4).tolist()))}")
    assert law_of(node_law, 198) > 0.01 and law_of(other_law, 198) == 0.0


def test_a_penalty_cell_per_token_control_first(specdec_budget):
    common = dict(length=4, tv=None, rows_per_call=16)
    with NodeLlamaOracle(gguf(), settings=PENALTY) as oracle:
        with NodeLlamaDecoder(gguf(), settings=PENALTY) as control:
            report = specdec.check_tokens(control, oracle, [list(PROMPT)], n=64, seed=500, budget=specdec_budget,
                                          name="node-llama-cpp, repetition 1.5: control (no speculation) per token", **common)
        keep_token_cell("nodellama", "penalty slice", "control", report)
        assert report.verdict == "PASS", report.format()  # only then may the oracle judge the speculative engine
        with NodeLlamaDecoder(gguf(), settings=PENALTY, speculation="lookup", num_draft_tokens=4) as subject:
            report = specdec.check_tokens(subject, oracle, [list(PROMPT)], n=160, seed=501, family_alpha=1e-6,
                                          name="node-llama-cpp input lookup K=4, repetition 1.5: per token", **common)
        keep_token_cell("nodellama", "penalty slice", "tokens", report)
    assert report.verdict == "FAIL", report.format()
    assert report.speculation["accepted_tokens"] > 0, report.speculation
