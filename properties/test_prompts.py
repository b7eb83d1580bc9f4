"""The benchmark prompt set (issue 22): eleven distinct prompts per task kind with the original six
first and unchanged, a corpus of distinct passages, and long prompts within 10% of their bucket."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

import fixtures.prompts
from fixtures.models import smollm2
from specdec.workload import prompts
from specdec.workload.corpus import PASSAGES
from specdec.workload.prompts import KINDS, LENGTH_BUCKETS, LENGTH_TOLERANCE, PROMPTS, length_prompts, prompt_ids

# sha256 of json.dumps(PROMPTS[kind][:6]), computed from fixtures/prompts.py before the set grew:
# benchmark history compares seeded metrics of these prompts.
ORIGINAL_SIX = {
    "multi-turn": "085b36822e4796f42d759064969a2ad85ea2ef2e92f30d8b1aa2a505e250b73a",
    "translation": "ce8edf981b3fe9c10f7810aee19e02435753a050ab506017af55e567d305fa79",
    "summarisation": "145b7106978b00cab07830dbfe6855f7732317ea47dd24d59111d469685eb3b9",
    "qa": "ffaf65eac560ece22f9a17facd05ecf1b7c7379d1384e0ca851e84ebb6ddc8ae",
    "math": "693c442fb3d649063197b94a6472cd84b4fb85858b10d1320fa0128a2784245d",
    "retrieval": "883beed4ba048876690f8bfcd65baa715dc31aad92693eb7b16674343b6fd617",
}
PERIOD = 2 * len(PASSAGES)  # length prompts repeat after this many


def test_every_kind_has_at_least_ten_prompts():
    assert KINDS == ("multi-turn", "translation", "summarisation", "qa", "math", "retrieval")
    assert {kind: len(PROMPTS[kind]) for kind in KINDS} == {kind: 11 for kind in KINDS}


def test_all_prompts_are_distinct():
    texts = [json.dumps(messages) for kind in KINDS for messages in PROMPTS[kind]]
    assert len(texts) == 66 and len(set(texts)) == len(texts)
    assert all(messages[-1]["role"] == "user" for kind in KINDS for messages in PROMPTS[kind])


@pytest.mark.parametrize("kind", sorted(ORIGINAL_SIX))
def test_the_original_six_are_unchanged_and_first(kind):
    digest = hashlib.sha256(json.dumps(PROMPTS[kind][:6]).encode()).hexdigest()
    assert digest == ORIGINAL_SIX[kind], f"the first six {kind} prompts changed: benchmark history no longer compares"


def test_fixtures_prompts_re_exports_the_library():
    assert fixtures.prompts.PROMPTS is PROMPTS and fixtures.prompts.prompt_ids is prompt_ids
    assert set(fixtures.prompts.__all__) <= set(dir(prompts))


def test_corpus_passages_are_distinct_and_long_enough_for_4096_tokens():
    for field in ("subject", "text", "question"):
        values = [getattr(p, field) for p in PASSAGES]
        assert len(set(values)) == len(values), field
    sentences = [s for p in PASSAGES for s in p.text.split(". ")]
    assert len(set(sentences)) == len(sentences)
    assert sum(len(p.text.split()) for p in PASSAGES) >= 3600
    assert len(PASSAGES) % 2 == 1  # odd: (start passage, kind) runs through all PERIOD pairs


@pytest.mark.parametrize("bucket", LENGTH_BUCKETS)
def test_length_prompts_are_within_ten_percent_of_the_bucket(bucket):
    _, tokenizer = smollm2()
    *batch, again = length_prompts(tokenizer, bucket, PERIOD + 1)
    lengths = [len(p) for p in batch]
    assert all(abs(n - bucket) <= LENGTH_TOLERANCE * bucket for n in lengths), (bucket, min(lengths), max(lengths))
    assert len({tuple(p) for p in batch}) == PERIOD and again == batch[0]  # distinct over a whole period, then again


@pytest.mark.parametrize("bucket", LENGTH_BUCKETS)
def test_length_prompts_are_prose_without_repeats_and_answer_their_question(bucket):
    _, tokenizer = smollm2()
    for index, ids in enumerate(length_prompts(tokenizer, bucket, 4)):
        text = tokenizer.decode(ids)
        opening = PASSAGES[index].text.split(". ")[:2]  # prompt i starts at passage i; its first two sentences
        assert all(sentence in text for sentence in opening), (bucket, index)
        instruction = PASSAGES[index].question if index % 2 == 0 else "Summarise the text above in three sentences."
        assert text.count(instruction) == 1 and text.index(instruction) > text.index(opening[-1])
        assert all(text.count(p.text.split(". ")[0]) <= 1 for p in PASSAGES), (bucket, index)  # no passage twice


@pytest.mark.parametrize("bucket, count", [(0, 1), (-128, 1), (True, 1), (128.0, 1), ("128", 1), (128, 0), (128, 1.5), (128, False)])
def test_length_prompts_rejects_bad_arguments(bucket, count):
    name, bad = ("count", count) if type(bucket) is int and bucket > 0 else ("bucket", bucket)
    with pytest.raises(ValueError, match=rf"^{name} must be .*, got {re.escape(repr(bad))}$"):
        length_prompts(None, bucket, count)  # checked before the tokenizer is touched


def test_length_prompts_rejects_a_bucket_out_of_reach():
    _, tokenizer = smollm2()
    with pytest.raises(ValueError, match=r"^bucket=20 is out of reach"):
        length_prompts(tokenizer, 20, 1)
    with pytest.raises(ValueError, match=r"^bucket=9000 is out of reach"):
        length_prompts(tokenizer, 9000, 1)


def test_prompt_ids_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"^kind must be one of .*got 'poetry'"):
        prompt_ids(None, "poetry", 1)
    with pytest.raises(ValueError, match=r"^count must be in \[1, 11\], got 12"):
        prompt_ids(None, "qa", 12)
    with pytest.raises(ValueError, match=r"^count must be in \[1, 11\], got 0"):
        prompt_ids(None, "qa", 0)
