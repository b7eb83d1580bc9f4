"""check_ab (two samples, H1-H3) calibrated on the tiny models, where the exact law is known too.

* false alarms: pairs of samples drawn from one exact law (the tiny target's law of its first 3
  tokens, F35) reject at most at the nominal rate;
* power: at the TV H2 states for n samples per side, the worst-case pair of laws is caught with
  probability about 0.99;
* against the exact-law check: for the decoder mutants whose exact first-token laws are known, the
  two-sample test needs about twice the samples per side of check_decoder's one-sample test (it
  knows neither law), and the table is printed;
* end to end: specdec's speculative loop against its own autoregressive loop PASSes with speculation
  shown; a lossy decoder FAILs with position and prefix (H3); rows that are copies of one random
  stream show in the independence diagnostic; a subject that raises is an ERROR naming the call.
"""

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from fixtures.models import tiny_pair
from fixtures.mutants import decoder_mutant_first_token_laws, decoder_mutants
from specdec.conformance import check_ab
from specdec.decoding import ModelDraft, SpeculativeDecoder
from specdec.laws import sequence_law
from specdec.stats import (
    homogeneity_test,
    required_noncentrality,
    sample_size_for_alternative,
    two_sample_detectable_tv,
    two_sample_prefix_decomposition,
    two_sample_size_for_alternative,
)
from specdec.warpers import SamplingConfig

WARPED = SamplingConfig(temperature=0.8, top_k=5)
PROMPT = [1, 2, 3]
EOS = 7
TAIL = 1e-8  # each bound below is crossed by a correct implementation with probability at most this


def _pair():
    return tiny_pair(1, 8)


def _exact_law():
    law = sequence_law(_pair()[0], PROMPT, 3, sampling=WARPED, eos_token_id=EOS)
    return law.sequences, np.asarray(law.probs, dtype=np.float64)


def _sample(rng, sequences, probs, n) -> Counter:
    counts = rng.multinomial(n, probs)
    return Counter({sequences[i]: int(c) for i, c in enumerate(counts) if c})


def test_false_alarm_rate_is_at_most_nominal_on_an_exact_law():
    sequences, probs = _exact_law()
    rng = np.random.default_rng(20261124)
    runs, n = 3000, 2000
    pvalues = np.array([homogeneity_test(_sample(rng, sequences, probs, n), _sample(rng, sequences, probs, n)).pvalue
                        for _ in range(runs)])
    for level in (0.05, 0.01, 0.001):
        rejected = int((pvalues <= level).sum())
        bound = int(stats.binom.isf(TAIL, runs, level))  # a test at its nominal level exceeds this with probability TAIL
        print(f"\nH1 false alarms at level {level}: {rejected}/{runs} (nominal {level * runs:.1f}, bound {bound}); "
              f"{len(sequences)} cells, n = {n} per side")
        assert rejected <= bound, f"{rejected} of {runs} pairs from one law rejected at level {level} (bound {bound}, n={n})"
    assert stats.kstest(pvalues, "uniform").statistic < 0.05, "H1's p-values are far from uniform under the null"


def test_power_at_the_stated_tv_is_about_099():
    """The worst case of H2: pi_a = P (1 + 2 delta s) on the pooled bins (s = +-1 on halves of the mass),
    delta chosen so that lambda equals what H2 plans for; its TV is at most the TV H2 states."""
    sequences, probs = _exact_law()
    n, alpha = 3000, 1e-3
    stated, bins, rare = two_sample_detectable_tv(probs, n, n, alpha=alpha)
    big = probs * n >= 5
    order = np.argsort(-np.where(big, probs, 0))
    sign = np.zeros_like(probs)
    mass = 0.0
    for i in order[: int(big.sum())]:
        sign[i] = 1.0 if mass < probs[big].sum() / 2 else -1.0
        mass += probs[i]
    sign[big] -= (sign[big] * probs[big]).sum() / probs[big].sum()  # keep the total mass at 1
    lam = required_noncentrality(bins, alpha=alpha)
    unit = float((4 * (sign * probs) ** 2 / probs)[big].sum())  # sum (pi_a - P)^2 / P per delta^2 (pi_bar ~ P)
    delta = math.sqrt(lam / (n / 2) / unit)
    alternative = probs * (1 + 2 * delta * sign)
    assert alternative.min() >= 0
    tv = 0.5 * np.abs(alternative - probs).sum()
    assert tv <= stated, (tv, stated)
    rng = np.random.default_rng(7)
    runs = 400
    caught = sum(homogeneity_test(_sample(rng, sequences, alternative, n), _sample(rng, sequences, probs, n)).pvalue <= alpha
                 for _ in range(runs))
    floor = int(stats.binom.ppf(TAIL, runs, 0.97))  # power 0.99 planned; 0.97 leaves room for the chi-square approximations
    print(f"\nH2 power at TV {tv:.4f} (stated {stated:.4f}, {bins} bins, rare mass {rare:.4f}, n = {n} per side, alpha {alpha}): "
          f"{caught}/{runs} caught")
    assert caught >= floor, f"power {caught}/{runs} at TV {tv:.4f} below {floor}/{runs} (stated TV {stated:.4f}, n={n})"


@pytest.mark.parametrize("name", ["unwarped_target (B4)", "raw_q_topk_draft (B3)", "greedy_draft_softmax_q (B2)"])
def test_two_samples_need_about_twice_the_samples_of_the_exact_law_check(name):
    target, draft = _pair()
    mutant = decoder_mutant_first_token_laws(target, draft, PROMPT, sampling=WARPED)[name].numpy()
    reference = sequence_law(target, PROMPT, 1, sampling=WARPED)
    exact = np.zeros(mutant.size)
    for sequence, p in zip(reference.sequences, reference.probs):
        exact[sequence[0]] = p
    alpha = 1e-9
    one = sample_size_for_alternative(mutant, exact, alpha=alpha)
    two = two_sample_size_for_alternative(mutant, exact, alpha=alpha)
    tv = 0.5 * np.abs(mutant - exact).sum()
    print(f"\n{name}: first-token TV {tv:.4f}; n for power 0.99 at alpha {alpha:g}: exact-law check {one:,}, "
          f"A/B {two:,} per side ({two / one:.2f}x)")
    if (mutant[exact <= 0] > 0).any():  # outside the target's support: the one-sample support check needs few samples
        assert one < two
    else:
        assert 1.5 <= two / one <= 2.6, (one, two)


def _decoders(**kwargs):
    target, draft = _pair()
    speculative = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED, eos_token_id=EOS, **kwargs)
    autoregressive = SpeculativeDecoder(target, None, num_draft_tokens=0, sampling=WARPED, eos_token_id=EOS)
    return speculative, autoregressive


def test_speculative_loop_passes_against_its_autoregressive_loop(specdec_budget):
    speculative, autoregressive = _decoders()
    report = check_ab(speculative, autoregressive, [PROMPT, [4, 5, 4, 5, 4]], length=2, eos_token_id=EOS, n=3000, tv=0.2,
                      rows_per_call=1000, seed=11, budget=specdec_budget, name="loop K=2 vs K=0")
    assert report.verdict == "PASS", report.format()
    assert report.reached_tv <= 0.2 and all(c.n == 6000 for c in report.checks)
    assert report.speculation["drafts"] > 0 and 0 < report.speculation["accepted_tokens"] < report.speculation["draft_tokens"]
    assert not any(c.details["independence"]["dependent"] for c in report.checks)


def test_lossy_decoder_fails_with_position_and_prefix():
    target, draft = _pair()
    mutant = decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS)["greedy_draft_softmax_q (B2)"]
    _, autoregressive = _decoders()
    report = check_ab(mutant, autoregressive, [PROMPT], length=2, eos_token_id=EOS, n=2000, rows_per_call=1000, seed=12, name="B2 vs K=0")
    assert report.verdict == "FAIL", report.format()
    failing = report.checks[0]
    assert failing.location.startswith("position ") and "prefix [" in failing.location and "(H3)" in failing.location
    assert failing.details["over"] and failing.details["under"]


def test_rows_that_copy_one_random_stream_show_in_the_diagnostic():
    speculative, autoregressive = _decoders()

    def one_seed(prompts, max_new_tokens, seed):  # every row decoded with the call's seed: rows of a call are copies
        return [speculative([p], max_new_tokens, seed)[0] for p in prompts]

    report = check_ab(one_seed, autoregressive, [PROMPT], length=2, eos_token_id=EOS, n=64, rows_per_call=32, seed=13)
    independence = report.checks[0].details["independence"]
    assert independence["dependent"] and independence["subject"]["dependent"] and not independence["reference"]["dependent"]
    assert "copies of one random stream" in report.format()


def test_a_subject_that_raises_is_an_error_naming_the_call():
    _, autoregressive = _decoders()

    def broken(prompts, max_new_tokens, seed):
        raise RuntimeError("the server closed the connection")

    report = check_ab(broken, autoregressive, [PROMPT], length=2, n=10, seed=14)
    assert report.verdict == "ERROR" and "subject" in report.error["call"] and "closed the connection" in report.error["message"]


def test_support_difference_is_named_and_located():
    seen_a = Counter({(1, 2): 400, (1, 3): 400, (2, 2): 200})
    seen_b = Counter({(1, 2): 400, (1, 3): 300, (2, 2): 200, (1, 4): 100})
    result = homogeneity_test(seen_a, seen_b)
    assert result.only_b == (((1, 4), 100),) and result.pvalue < 1e-10
    location = two_sample_prefix_decomposition(seen_a, seen_b)
    assert location.worst_position()[0] == 1 and location.worst_prefix().prefix == (1,)
    assert math.isclose(location.total_g, 2 * sum(  # H3: the per-prefix terms sum to the G of the whole table
        o * math.log(o * 2000 / (1000 * (seen_a[s] + seen_b[s]))) for side in (seen_a, seen_b) for s, o in side.items()), rel_tol=1e-12)


@pytest.mark.parametrize("kwargs, message", [
    ({"prompts": []}, "prompts"),
    ({"prompts": [[1, -2]]}, "prompts[0][1]"),
    ({"tv": None}, "tv, n or time_budget"),
    ({"length": 0}, "length"),
    ({"rows_per_call": 0}, "rows_per_call"),
])
def test_bad_inputs_are_named(kwargs, message):
    args = {"prompts": [PROMPT], "length": 2, "tv": 0.1, **kwargs}
    noop = lambda prompts, max_new_tokens, seed: [[0, 0] for _ in prompts]  # noqa: E731
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_ab(noop, noop, args.pop("prompts"), **args)
    with pytest.raises(TypeError, match="reference must be callable"):
        check_ab(noop, "not a decoder", [PROMPT], n=1)


def test_the_plugin_fixture_runs_the_two_sample_check(specdec_report):
    from fixtures.subjects import autoregressive_decoder, my_decoder

    report = specdec_report.ab(my_decoder, autoregressive_decoder, [PROMPT], length=1, n=500, tv=0.5, name="plugin: loop vs K=0")
    assert report.level == "A/B (two samples)" and report.verdict == "PASS" and report.reached_tv <= 0.5
