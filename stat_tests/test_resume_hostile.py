"""Resume that cannot mix runs (issue 40, items 1, 12 and 14): a checkpoint's fingerprint covers what determines
the law being tested, its counts are checked before they are trusted, and a resumed run's speculation counters
are those of the chunks it counted.  Each case below made a correct decoder FAIL, or was trusted, before."""

import copy
import json

import pytest

import specdec as sd
from fixtures import subjects
from specdec.warpers import SamplingConfig

PROMPTS = [[1, 2, 3], [4, 5]]
KW = dict(length=2, n=2000, seed=3, name="dec", early_stop=False)


class StopsAfter:
    """Ctrl-C at the ``calls``-th call; forwards what the wrapped decoder states (K, drafts, counters)."""

    def __init__(self, decoder, calls: int) -> None:
        self.decoder, self.calls, self.made = decoder, calls, 0
        self.num_draft_tokens = getattr(decoder, "num_draft_tokens", None)

    def __call__(self, prompts, max_new_tokens, seed):
        self.made += 1
        if self.made == self.calls:
            raise KeyboardInterrupt
        return self.decoder(prompts, max_new_tokens, seed)

    def last_drafted(self):
        return self.decoder.last_drafted()

    def speculation_counts(self):
        return self.decoder.speculation_counts()


def _checkpoint():
    return sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, **KW).resume


def test_the_issue_reproducer_other_prompts_are_refused_naming_them():
    saved = _checkpoint()
    with pytest.raises(ValueError, match=r"prompts: \[\[1, 2, 3\], \[4, 5\]\] in the checkpoint, \[\[3, 2, 1\], \[5, 4\]\] now"):
        sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), [[3, 2, 1], [5, 4]], resume=saved, **KW)


def test_another_target_of_the_same_shape_or_other_warpers_are_refused():
    saved = _checkpoint()
    with pytest.raises(ValueError, match="exact_laws: "):
        sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, sampling=SamplingConfig(temperature=0.7),
                         resume=saved, **KW)
    from specdec.laws import FunctionLaw
    import numpy as np

    other = FunctionLaw(lambda context: np.full(8, 1 / 8), vocab_size=8)
    with pytest.raises(ValueError, match="exact_laws: "):
        sd.check_decoder(subjects.my_decoder, other, PROMPTS, resume=saved, **KW)


def test_another_eos_or_length_asked_is_refused():
    saved = _checkpoint()
    with pytest.raises(ValueError, match="eos: "):
        sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, eos_token_id=7, resume=saved, **KW)
    with pytest.raises(ValueError, match="max_new_tokens: "):
        sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, max_new_tokens=9, resume=saved, **KW)


def test_the_same_campaign_still_resumes_to_the_same_counts():
    first = sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, **KW)
    again = sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, resume=first.resume, **KW)
    assert (again.verdict, again.samples) == (first.verdict, first.samples)


def _tokens(oracle, **change):
    kw = dict(length=4, n=200, chunk_size=100, seed=5, tv=None, name="tokens", early_stop=False) | change
    return sd.check_tokens(subjects.my_decoder, oracle, PROMPTS, **kw)


def test_a_per_token_check_resumed_with_an_oracle_at_another_temperature_or_eos_is_refused():
    saved = _tokens(sd.TargetLawOracle(subjects.tiny_target())).resume
    with pytest.raises(ValueError, match="oracle_probe: "):
        _tokens(sd.TargetLawOracle(subjects.tiny_target(), SamplingConfig(temperature=0.5)), resume=saved)
    with pytest.raises(ValueError, match="eos: "):
        _tokens(sd.TargetLawOracle(subjects.tiny_target()), eos_token_id=7, resume=saved)
    again = _tokens(sd.TargetLawOracle(subjects.tiny_target()), resume=saved)  # the same oracle: its probe matches
    assert again.verdict == "PASS"


def _edited(saved: dict, path: tuple, value) -> dict:
    edited = copy.deepcopy(saved)
    where = edited
    for key in path[:-1]:
        where = where[key]
    if value is KeyError:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return edited


@pytest.mark.parametrize("path, value, says", [
    (("streams", 0, "drawn"), 10**9, "beyond the plan"),
    (("streams", 0, "drawn"), -5, "drawn must be an integer >= 0"),
    (("streams", 0, "drawn"), 1.5, "drawn must be an integer >= 0"),
    (("streams", 0, "next_chunk"), 0, "not the counts of a run"),
    (("streams", 0, "tally", "counts", 0, 0), -3, "non-negative integer counts"),
    (("streams", 0, "tally", "counts", 0, 0), 10**6, "not the counts of a run"),
    (("streams", 0, "tally", "counts", 0), [1, 2], "shape"),
    (("streams", 0, "tally", "counts"), KeyError, "count vectors"),
    (("streams", 0, "tally"), KeyError, "drawn, next_chunk and tally"),
    (("streams",), [], "streams must be a list of 1"),
    (("seconds",), float("nan"), "seconds must be a finite number"),
    (("streams", 0, "tally", "outside"), [[[[9, 9], 4]], []], "lists"),
    (("streams", 0, "tally", "independence", 0, "pairs"), "x", "independence"),
    (("speculation",), {"subject": {"drafts": "x"}}, "speculation"),
])
def test_an_edited_checkpoint_is_refused_naming_the_field(path, value, says):
    stopped = sd.check_decoder(StopsAfter(subjects.my_decoder, 3), subjects.tiny_target(), PROMPTS, chunk_size=250, **KW)
    assert stopped.verdict == "INTERRUPTED"
    saved = _edited(stopped.resume, path, value)
    with pytest.raises(ValueError, match=says):
        sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, chunk_size=250, resume=saved, **KW)


def test_an_edited_per_token_or_two_sample_tally_is_refused():
    oracle = sd.TargetLawOracle(subjects.tiny_target())
    stopped = sd.check_tokens(StopsAfter(subjects.my_decoder, 6), oracle, PROMPTS, length=4, n=400, chunk_size=100, seed=5,
                              tv=None, name="tokens")
    observed = stopped.resume["streams"][0]["tally"]["observed"]
    observed[0][0][0] += 7  # one more first token than answers drawn
    with pytest.raises(ValueError, match="not the counts of"):
        sd.check_tokens(subjects.my_decoder, oracle, PROMPTS, length=4, n=400, chunk_size=100, seed=5, tv=None, name="tokens",
                        resume=stopped.resume)
    ab = sd.check_ab(StopsAfter(subjects.my_decoder, 3), subjects.autoregressive_decoder, PROMPTS, length=2, n=600,
                     rows_per_call=200, seed=2, name="ab")
    ab.resume["streams"][0]["tally"]["subject"][0][0][0][1] += 1
    with pytest.raises(ValueError, match="subject side of prompt 0 counts"):
        sd.check_ab(subjects.my_decoder, subjects.autoregressive_decoder, PROMPTS, length=2, n=600, rows_per_call=200, seed=2,
                    name="ab", resume=ab.resume)


def test_a_checkpoint_path_that_cannot_be_written_is_refused_when_the_settings_are_made(tmp_path):
    with pytest.raises(ValueError, match="must be the path of a file, got the folder"):
        sd.RunSettings(checkpoint=tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        sd.RunSettings(checkpoint=tmp_path / "missing" / "run.json")
    assert sd.RunSettings(checkpoint=tmp_path / "run.json").checkpoint == tmp_path / "run.json"


def test_a_resumed_runs_counters_leave_out_the_chunk_cut_short(tmp_path):
    """Ctrl-C in the third call of a per-token chunk (four calls each): the two calls before it drafted, but the
    chunk is not counted, so their drafts are not either: resumed counters equal the uninterrupted run's."""
    from fixtures.models import tiny_pair
    from specdec.decoding import ModelDraft, SpeculativeDecoder

    target, draft = tiny_pair(1, 8)
    oracle = sd.TargetLawOracle(target)
    kw = dict(length=4, n=400, chunk_size=100, seed=7, tv=None, name="loop", early_stop=False)
    fresh = lambda: SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2)  # noqa: E731
    whole = sd.check_tokens(fresh(), oracle, PROMPTS, **kw)
    stopped = sd.check_tokens(StopsAfter(fresh(), 7), oracle, PROMPTS, checkpoint=tmp_path / "c.json", **kw)
    assert stopped.verdict == "INTERRUPTED" and stopped.samples == 100 * len(PROMPTS)
    resumed = sd.check_tokens(fresh(), oracle, PROMPTS, resume=tmp_path / "c.json", **kw)
    assert resumed.samples == whole.samples and resumed.speculation == whole.speculation, (resumed.speculation, whole.speculation)
    saved = json.loads((tmp_path / "c.json").read_text())
    assert saved["speculation"]["subject"]["drafts"] < stopped.speculation["drafts"]  # the cut chunk's drafts were seen, not kept


# ------------------------------------------------------------------ fuzz: any edit of a checkpoint


from functools import lru_cache  # noqa: E402

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@lru_cache(maxsize=None)
def _interrupted() -> str:
    stopped = sd.check_decoder(StopsAfter(subjects.my_decoder, 3), subjects.tiny_target(), PROMPTS, chunk_size=250, **KW)
    return json.dumps(stopped.resume)


def _paths(node, prefix=()):
    yield prefix
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield from _paths(child, prefix + (key,))


HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=3), st.lists(st.integers(-2, 3), max_size=3), st.just({}), st.just(KeyError))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pick=st.integers(min_value=1), value=HOSTILE)
def test_fuzz_any_edit_of_a_checkpoint_is_refused_or_continues_a_run(pick, value):
    """One node of an interrupted run's checkpoint replaced (or deleted): resume refuses it with a ValueError or
    TypeError, or continues to a report of at most the planned samples - never another exception."""
    saved = json.loads(_interrupted())
    paths = [p for p in _paths(saved) if p]
    edited = _edited(saved, paths[pick % len(paths)], value)
    try:
        report = sd.check_decoder(subjects.my_decoder, subjects.tiny_target(), PROMPTS, chunk_size=250, resume=edited, **KW)
    except (ValueError, TypeError) as error:
        assert str(error), "a refusal says why"
        return
    assert report.verdict in ("PASS", "INCONCLUSIVE", "FAIL") and report.samples <= 2000 * len(PROMPTS), report.format()
