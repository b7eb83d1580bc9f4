"""Prompt lookup's replayed draft counts (:mod:`specdec.adapters.openvino.lookup_replay`), against steps worked by hand
from ``generate_candidates`` (openvino.genai da1db86): no openvino needed.  The engine's own step counts are compared
with the replay in peers/test_openvino.py."""

import pytest

from specdec.adapters.openvino.lookup_replay import lookup_candidates, replay_lookup


@pytest.mark.parametrize("ids, k, ngram, drafts", [
    ([1, 2, 3, 1, 2], 3, 2, [3, 1, 2]),      # the bigram [1, 2] at 0: what followed it, up to the context's end
    ([1, 2, 3, 1, 2], 1, 2, [3]),            # at most num_pred_tokens
    ([5, 1, 9, 1, 7, 1], 4, 2, [9, 1, 7, 1]),  # [7, 1] never before; the unigram [1]: its *first* occurrence (1), not 3
    ([4, 4], 4, 3, [4]),                     # max_ngram_size >= length: halved to 1
    ([1, 2, 3], 4, 2, []),                   # nothing repeats: no drafts
    ([1, 2, 1, 2], 0, 2, []),                # num_pred_tokens 0
])
def test_lookup_candidates_follow_generate_candidates(ids, k, ngram, drafts):
    assert lookup_candidates(ids, k, ngram) == drafts


def test_a_step_keeps_the_drafts_the_answer_continues_with_and_emits_one_more():
    prompt = [1, 2, 3, 1, 2]
    # prefill emits 3; then [2, 3] (at 1) drafts [1, 2] (min(K = 2, 3 left)): both kept, 9 is the step's own token;
    # one token left: nothing drafted
    assert replay_lookup(prompt, [3, 1, 2, 9, 4], 2, 2) == {"steps": 3, "drafts": 1, "draft_tokens": 2, "accepted_tokens": 2}
    # the same drafts, the answer differs at the second: one kept, 7 replaces 2; then [1, 7] and [7] never occurred
    assert replay_lookup(prompt, [3, 1, 7, 8, 8], 2, 2) == {"steps": 4, "drafts": 1, "draft_tokens": 2, "accepted_tokens": 1}


def test_every_answer_token_is_emitted_once_and_edges_are_defined():
    prompt, answer = [7, 8, 7, 8, 7], [8, 7, 8, 7, 8, 7, 8, 7]
    counts = replay_lookup(prompt, answer, 4, 2)
    # steps emit len(answer) tokens: one per step plus the kept drafts
    assert counts["steps"] + counts["accepted_tokens"] == len(answer)
    assert counts["accepted_tokens"] <= counts["draft_tokens"] <= 4 * counts["drafts"]
    assert replay_lookup(prompt, [], 4, 2)["steps"] == 0
    assert replay_lookup(prompt, [8], 4, 2) == {"steps": 1, "drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
    with pytest.raises(ValueError, match="num_assistant_tokens"):
        replay_lookup(prompt, answer, 0, 2)
    with pytest.raises(ValueError, match="max_ngram_size"):
        lookup_candidates(prompt, 4, 0)
