"""Long checks that survive (issue 31): a check stopped mid-campaign continues from its checkpoint to the
counts, statistics and verdict of a run that was never stopped - on the tiny models (check_decoder) and
on the fake server (check_ab, whose n is re-planned from the counts) - and a checkpoint of other
settings is refused, naming the difference."""

import json

import pytest

import specdec as sd
from fixtures import subjects
from fixtures.fake_server import MODEL, FakeServer
from specdec.adapters.openai.client import OpenAICompletionsDecoder
from specdec.warpers import SamplingConfig

PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]


class StopsAfter:
    """A decoder that is Ctrl-C'd at its ``calls``-th call (as a terminal's Ctrl-C reaches a running check)."""

    def __init__(self, decoder, calls: int) -> None:
        self.decoder, self.calls, self.made = decoder, calls, 0
        self.num_draft_tokens = getattr(decoder, "num_draft_tokens", None)
        self.sampling_settings = getattr(decoder, "sampling_settings", None)  # what it samples with: in the checkpoint

    def __call__(self, prompts, max_new_tokens, seed):
        self.made += 1
        if self.made == self.calls:
            raise KeyboardInterrupt
        return self.decoder(prompts, max_new_tokens, seed)


def _same(a, b) -> None:
    assert (a.verdict, a.samples) == (b.verdict, b.samples), (a.summary(), b.summary())
    assert [(c.name, c.n, c.statistic, c.pvalue, c.detectable_tv) for c in a.checks] == \
           [(c.name, c.n, c.statistic, c.pvalue, c.detectable_tv) for c in b.checks]


def test_a_decoder_check_resumed_from_its_checkpoint_ends_as_the_uninterrupted_one(tmp_path):
    target, path = subjects.tiny_target(), tmp_path / "checkpoint.json"
    settings = sd.RunSettings(n=3000, chunk_size=250, seed=9, name="tiny loop")
    whole = sd.check_decoder(subjects.my_decoder, target, PROMPTS, length=2, settings=settings)
    stopped = sd.check_decoder(StopsAfter(subjects.my_decoder, 5), target, PROMPTS, length=2, settings=settings, checkpoint=path)
    assert stopped.verdict == "INTERRUPTED" and stopped.samples == 4 * 250
    saved = json.loads(path.read_text())
    assert saved["streams"][0]["drawn"] == 1000 and saved["streams"][0]["next_chunk"] == 4 and not saved["complete"]
    resumed = sd.check_decoder(subjects.my_decoder, target, PROMPTS, length=2, settings=settings, resume=path)
    _same(whole, resumed)
    assert whole.checks[0].details["independence"] == resumed.checks[0].details["independence"]
    again = sd.check_decoder(subjects.my_decoder, target, PROMPTS, length=2, settings=settings, resume=stopped.to_dict())
    _same(whole, again)  # the report's own checkpoint continues it too


@pytest.mark.parametrize("change, says", [
    (dict(seed=10), "seed: 9 in the checkpoint, 10 now"),
    (dict(n=4000), "n: 3000 in the checkpoint, 4000 now"),
    (dict(chunk_size=500), "chunk_size: 250 in the checkpoint, 500 now"),
    (dict(name="another"), "subject: \"tiny loop\" in the checkpoint, \"another\" now"),
])
def test_a_checkpoint_of_other_settings_is_refused_naming_the_difference(tmp_path, change, says):
    target, path = subjects.tiny_target(), tmp_path / "checkpoint.json"
    settings = sd.RunSettings(n=3000, chunk_size=250, seed=9, name="tiny loop")
    sd.check_decoder(StopsAfter(subjects.my_decoder, 3), target, PROMPTS, length=2, settings=settings, checkpoint=path)
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        sd.check_decoder(subjects.my_decoder, target, PROMPTS, length=2, settings=settings.replace(**change), resume=path)


def _server_decoder(server, name):
    return OpenAICompletionsDecoder(server.base_url, MODEL, sampling=SamplingConfig(temperature=0.8), samples_per_request=8,
                                    max_in_flight=4, name=name)


def test_a_two_sample_server_check_resumed_ends_as_the_uninterrupted_one(tmp_path):
    """check_ab re-plans n from the combined counts after every chunk; a continuation re-plans from the same
    counts, so it stops where the uninterrupted run stopped."""
    path = tmp_path / "ab.json"
    settings = sd.RunSettings(tv=0.2, seed=4, max_n=20_000, name="fake server vs itself")
    with FakeServer() as server:
        subject, reference = _server_decoder(server, "subject"), _server_decoder(server, "reference")
        whole = sd.check_ab(subject, reference, PROMPTS, length=2, rows_per_call=64, settings=settings)
        stopped = sd.check_ab(StopsAfter(subject, 4), reference, PROMPTS, length=2, rows_per_call=64, settings=settings,
                              checkpoint=path)
        assert stopped.verdict == "INTERRUPTED" and 0 < stopped.samples < whole.samples
        resumed = sd.check_ab(subject, reference, PROMPTS, length=2, rows_per_call=64, settings=settings, resume=path)
    _same(whole, resumed)
    assert whole.samples > 4 * 64 * 2  # several chunks, re-planned after each


def test_a_per_token_check_resumed_ends_as_the_uninterrupted_one(tmp_path):
    """check_tokens' tally (counts and expectations by position, mark and cell) restores exactly."""
    from fixtures.models import tiny_pair
    from specdec.decoding import ModelDraft, SpeculativeDecoder

    target, draft = tiny_pair(1, 8)
    sampling, path = SamplingConfig(temperature=0.8, top_k=5), tmp_path / "tokens.json"
    loop = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=sampling)
    settings = sd.RunSettings(n=600, chunk_size=100, seed=11, tv=None, name="tiny loop, per token")
    oracle = sd.TargetLawOracle(target, sampling)
    whole = sd.check_tokens(loop, oracle, PROMPTS, length=6, settings=settings)
    class Marked(StopsAfter):  # says where it drafted, as the loop does (a DraftMarker)
        def last_drafted(self):
            return self.decoder.last_drafted()

    stopped = sd.check_tokens(Marked(loop, 5), oracle, PROMPTS, length=6, settings=settings, checkpoint=path)
    assert stopped.verdict == "INTERRUPTED" and not json.loads(path.read_text())["complete"]
    resumed = sd.check_tokens(loop, oracle, PROMPTS, length=6, settings=settings, resume=path)
    assert (whole.verdict, whole.samples) == (resumed.verdict, resumed.samples), (whole.summary(), resumed.summary())
    for a, b in zip(whole.checks, resumed.checks, strict=True):  # counts exact; expectations are sums of laws the
        assert (a.name, a.n, a.df, a.detectable_tv) == (b.name, b.n, b.df, b.detectable_tv)  # oracle recomputes,
        assert a.statistic == pytest.approx(b.statistic, rel=1e-9) and a.pvalue == pytest.approx(b.pvalue, rel=1e-9)  # equal to rounding
