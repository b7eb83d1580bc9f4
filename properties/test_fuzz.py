"""Fuzzing every public entry point: each call returns a valid result, or raises a ValueError /
TypeError whose message names one of the arguments.  Never NaN out of valid input, never a raw
RuntimeError, IndexError or OverflowError.

Arguments are drawn from palettes that mix good values with the bad ones seen in the wild: NaN,
+-inf, negative and unnormalised masses, complex and bool arrays, numpy scalars, bools as numbers,
huge ints, wrong shapes and dtypes, meta tensors, empty vocabularies - and the edges of issue 23:
token ids of every integer dtype, B = 0 at vocabularies past 1024, ints beyond float range and counts
whose totals pass 2**63, alpha a hair below 1, pairs equal up to rounding (E2), enumeration sizes at
their caps.  Where a value is known exactly (F22, count totals) the result must equal it.  ``EXAMPLES`` per entry point
in the default run; ``pytest -m slow -k fuzz`` runs ``SLOW_EXAMPLES``.  The counts per entry point
(valid results / named errors) are printed with ``-s``.
"""

from __future__ import annotations

import collections
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import specdec as sd
import specdec.conformance
from specdec.laws import block, multidraft
from specdec._validation import TOKEN_DTYPES
from specdec.stats import holm, monte_carlo_gof, sample_size_for_alternative

EXAMPLES = 60
SLOW_EXAMPLES = 1000
COUNTS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

# ------------------------------------------------------------------ palettes

BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1, -0.5, True, False, 1 + 1j, "3", None, 2**70, 10**400, np.float32(math.nan), np.complex64(1)]
GOOD_INTS = [0, 1, 2, 3, np.int64(2), np.int32(1), np.uint8(3), torch.tensor(2)]
GOOD_UNIT = [0.0, 0.3, 1.0, np.float32(0.5), np.float64(0.9), 1, torch.tensor(0.25), 0.9999999997, 1 - 2**-40]
BIG = 2**63 - 1
# (q (1 - 1e-10), q) renormalise to rows equal but for rounding; the old threshold (tiny) drew from that noise.
NEAR_COPY = [0.2640516114947549, 0.05846688316193, 0.42524139978199826, 0.052892696209109344, 0.19934740935220732]


def numbers(good):
    """Good values about four times as often as bad ones, so calls with several numbers still succeed."""
    return st.sampled_from(good * (4 * len(BAD_NUMBERS) // len(good) + 1) + BAD_NUMBERS)


def _vector(kind, rng, size):
    w = rng.random(size) + 1e-3
    w /= w.sum()
    if kind == "good":
        return w
    if kind == "one_hot":
        return np.eye(size)[rng.integers(size)]
    if kind == "tiny":
        w[: size // 2] = 1e-30
        return w / w.sum()
    if kind == "nan":
        w[0] = math.nan
    elif kind == "negative":
        w[0] = -0.5
    elif kind == "unnormalised":
        w *= 1.5
    elif kind == "complex":
        return w.astype(np.complex128)
    elif kind == "bool":
        return w > 0
    elif kind == "empty":
        return np.zeros(0)
    elif kind == "matrix":
        return np.stack([w, w])
    elif kind == "inf":
        w[-1] = math.inf
    return w


VECTOR_KINDS = ["good"] * 8 + ["one_hot", "tiny", "nan", "negative", "unnormalised", "complex", "bool", "empty", "matrix", "inf"]


@st.composite
def vectors(draw, size=None, as_tensor=None):
    kind = draw(st.sampled_from(VECTOR_KINDS))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    w = _vector(kind, rng, size or draw(st.integers(1, 6)))
    choice = draw(st.sampled_from(["numpy", "tensor", "list", "float32"])) if as_tensor is None else as_tensor
    if choice == "tensor":
        return torch.as_tensor(w)
    if choice == "float32" and w.dtype.kind == "f":
        return torch.as_tensor(w, dtype=torch.float32)
    if choice == "list":
        return w.tolist()
    return w


VOCABS = [1, 2, 3, 4, 5] * 3 + [300, 1500]  # 300: past uint8's range; 1500: two-level search (B = 0 crashed)
CLEAN = ["none"] * 4 + ["uint8_v300", "empty_v1500"] * 2  # valid inputs: each must give a valid result, never an error


def token_ids(draw, ids):
    """``ids`` (int64, drawn from a seeded generator) in any integer dtype torch has that holds them:
    V may not fit that dtype (ids < 256 of V = 300 in uint8), which is why ids are compared in int64."""
    top = int(ids.max()) if ids.numel() else 0
    return ids.to(draw(st.sampled_from([d for d in TOKEN_DTYPES if torch.iinfo(d).max >= top])))


@st.composite
def verifier_arguments(draw):
    """((draft_tokens, draft_probs, target_probs), clean) with one defect now and then; clean: a valid input."""
    defect = draw(st.sampled_from(CLEAN + ["nan", "token", "shape", "dtype", "meta", "none_draft", "float_tokens", "bf16", "list", "vocab0", "expand"]))
    batch, k, vocab = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.sampled_from(VOCABS))
    if defect == "uint8_v300":  # ids below 256 in uint8 with V = 300: V wrapped to 44 in the ids' dtype
        batch, k, vocab = max(batch, 1), max(k, 1), 300
    elif defect == "empty_v1500":
        batch, vocab = 0, 1500
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([torch.float64, torch.float32]))
    target = torch.rand(batch, k + 1, vocab, generator=g, dtype=torch.float64).softmax(-1).to(dtype)
    draft = torch.rand(batch, k, vocab, generator=g, dtype=torch.float64).softmax(-1).to(dtype)
    tokens = token_ids(draw, torch.randint(0, vocab, (batch, k), generator=g))
    if defect == "uint8_v300":
        tokens = torch.randint(44, 256, (batch, k), generator=g).to(torch.uint8)
    elif defect == "nan" and target.numel():
        target.view(-1)[0] = math.nan
    elif defect == "token" and tokens.numel():
        tokens = tokens.long()
        tokens.view(-1)[0] = vocab + 3
    elif defect == "shape":
        target = target[:, :k]
    elif defect == "dtype":
        draft = draft.double() if dtype == torch.float32 else draft.float()
    elif defect == "meta":
        target = torch.empty_like(target, device="meta")
    elif defect == "none_draft":
        draft = None
    elif defect == "float_tokens":
        tokens = tokens.float()
    elif defect == "bf16":
        target = target.bfloat16()
    elif defect == "list":
        target = target.tolist()
    elif defect == "vocab0":
        target, draft, tokens = target[..., :0], draft[..., :0], tokens.long().clamp(max=-1)
    elif defect == "expand" and batch:
        target, draft = target[:1].expand(batch, -1, -1), draft[:1].expand(batch, -1, -1)
        tokens = tokens[:1].expand(batch, -1)
    return (tokens, draft, target), defect in CLEAN


# ------------------------------------------------------------------ validity of results


def finite_probs(result):
    t = torch.as_tensor(result)
    return bool(torch.isfinite(t).all()) and bool((t >= -1e-12).all()) and bool((t <= 1 + 1e-4).all())  # float32 inputs: sum within 1e-4


def verify_result_ok(result, args):
    tokens, _, target = args
    batch, k = tokens.shape
    vocab = target.shape[-1]
    n = result.num_accepted
    if n.shape != (batch,) or result.tokens.shape != (batch, k + 1) or ((n < 0) | (n > k)).any():
        return False
    if result.tokens.dtype != torch.int64 or n.dtype != torch.int64:
        return False
    last = result.tokens.gather(1, n.unsqueeze(-1))
    return bool(((last >= 0) & (last < vocab)).all())


def number_ok(value):
    return isinstance(value, (int, float)) and math.isfinite(value)


def exact_tokens(alpha, k) -> float | None:
    """F22 in rationals (None where K is too large to sum)."""
    alpha, k = float(alpha), int(k)
    return float(sum(Fraction(alpha) ** i for i in range(k + 1))) if k <= 64 else None


def exact_ratio(name, counts, k) -> Fraction | None:
    """The metric in rationals for a list of int counts and an int K (None for the other palettes)."""
    if not (isinstance(counts, list) and counts and all(type(x) is int and x >= 0 for x in counts)):
        return None
    if name == "mean_tokens_per_step":
        return Fraction(sum(counts), len(counts))
    if type(k) is not int or k <= 0 or max(counts) > k:
        return None
    if name == "draft_utilisation":
        return Fraction(sum(counts), k * len(counts))
    return Fraction(sum(counts), sum(a + (a < k) for a in counts))


def equals_f22(result, alpha, k, denominator=1.0) -> bool:
    want = exact_tokens(alpha, k)
    return number_ok(result) and (want is None or abs(result - want / denominator) <= 1e-13 * want)


# ------------------------------------------------------------------ entry points


def entry(draw, name):
    """(callable, argument names, validity predicate[, clean]) for one draw of entry point ``name``;
    clean: the draw is a valid input, so an error is a failure too."""
    g = torch.Generator().manual_seed(0)
    if name in ("verify_tokens", "verify_block"):
        args, clean = draw(verifier_arguments())
        fn = getattr(sd, name)
        pad = draw(st.sampled_from([-1, 0, np.int64(-5)] * 2 + [None, 1.5, 2**70, True]))
        clean = clean and pad is not None and not isinstance(pad, (bool, float)) and pad != 2**70
        return (lambda: fn(*args, g, pad_id=pad)), ("draft_tokens", "draft_probs", "target_probs", "pad_id", "generator"), lambda r: verify_result_ok(r, args), clean
    if name == "verify_tokens_with_uniforms":
        args, clean = draw(verifier_arguments())
        batch = args[0].shape[0] if isinstance(args[0], torch.Tensor) else 0
        width = (args[0].shape[1] + 1) if isinstance(args[0], torch.Tensor) and args[0].ndim == 2 else 1
        which = draw(st.sampled_from(["rand", "ones", "float32"]))
        u = {"rand": torch.rand(batch, width, dtype=torch.float64, generator=g), "ones": torch.ones(batch, width, dtype=torch.float64),
             "float32": torch.rand(batch, width, generator=g)}[which]
        return ((lambda: sd.verify_tokens_with_uniforms(*args, u)), ("draft_tokens", "draft_probs", "target_probs", "uniforms"),
                lambda r: verify_result_ok(r, args), clean and (which == "rand" or (which == "ones" and not u.numel())))
    if name == "verify_greedy":
        (tokens, _, target), clean = draw(verifier_arguments())
        return (lambda: sd.verify_greedy(tokens, target)), ("draft_tokens", "target_scores"), lambda r: r.tokens.shape[-1] == tokens.shape[-1] + 1, clean
    if name in ("verify_kseq", "verify_mss"):
        batch, k, vocab = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.sampled_from([0, 1, 2, 3, 4] * 3 + [300, 1500]))
        edge = draw(st.sampled_from(["none"] * 4 + ["uint8_v300", "empty_v1500"]))
        if edge != "none":  # valid inputs that were refused (V wrapped in uint8) or crashed (B = 0 past V = 1024)
            batch, k, vocab = (max(batch, 1), max(k, 1), 300) if edge == "uint8_v300" else (0, max(k, 1), 1500)
        rows = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
        target = torch.rand(batch, vocab, dtype=torch.float64, generator=rows).softmax(-1) if vocab else torch.zeros(batch, 0, dtype=torch.float64)
        which = "same" if edge != "none" else draw(st.sampled_from(["same", "none", "float32", "narrow"]))
        draft = {"same": target.clone(), "none": None, "float32": target.float(), "narrow": target[:, :1]}[which]
        tokens = token_ids(draw, torch.randint(0, max(vocab, 1), (batch, k), generator=rows))
        if edge == "uint8_v300":
            tokens = torch.randint(44, 256, (batch, k), generator=rows).to(torch.uint8)
        fn = getattr(sd, name)
        ok = lambda r: r.token.shape == (batch,) and bool(((r.token >= 0) & (r.token < vocab)).all())  # noqa: E731
        return (lambda: fn(tokens, draft, target, g)), ("draft_tokens", "draft_probs", "target_probs"), ok, which == "same" and vocab > 0 and k > 0
    if name == "sample_categorical":
        probs = draw(st.one_of(vectors(as_tensor="tensor"), st.sampled_from([torch.ones(0, 1500) / 1500, torch.ones(2, 0, 1025) / 1025])))
        return (lambda: sd.sample_categorical(probs, g)), ("probs",), lambda r: r.shape == probs.shape[:-1] and r.dtype == torch.int64 and bool(
            ((r >= 0) & (r < probs.shape[-1])).all())
    if name == "inverse_cdf":
        weights = draw(st.one_of(vectors(as_tensor="tensor"), st.sampled_from([torch.zeros(2, 3), torch.ones(0, 1500), torch.rand(2, 1100, generator=torch.Generator().manual_seed(1))])))
        lead = tuple(weights.shape[:-1]) if isinstance(weights, torch.Tensor) else ()
        uniforms = draw(st.sampled_from([torch.full(lead, 0.5), torch.zeros(lead, dtype=torch.float64), torch.full(lead, 1.0), torch.full(lead, -0.1),
                                         torch.full(lead, math.nan), torch.full((3,), 0.5), torch.full(lead, 0.999999, dtype=torch.float64)]))
        ok = lambda r: r.shape == lead and bool(((r >= 0) & (r < weights.shape[-1])).all()) and bool((weights.gather(-1, r.unsqueeze(-1)) > 0).all())  # noqa: E731
        return (lambda: sd.inverse_cdf(weights, uniforms)), ("weights", "uniforms"), ok
    if name == "SamplingConfig":
        kwargs = {k: draw(numbers(v)) for k, v in
                  (("temperature", GOOD_UNIT + [2.0]), ("top_k", GOOD_INTS), ("top_p", GOOD_UNIT), ("min_p", GOOD_UNIT), ("min_tokens_to_keep", GOOD_INTS))}
        return (lambda: sd.SamplingConfig(**kwargs)), tuple(kwargs), lambda r: True
    if name == "warped_probs":
        logits = torch.tensor(draw(st.lists(st.sampled_from([0.0, 1.0, -1e30, 1e30, 3e38, -math.inf, math.inf, math.nan]), min_size=1, max_size=5)))
        logits = logits.to(draw(st.sampled_from([torch.float16, torch.float32, torch.float64])))
        temperature = draw(st.sampled_from([0.0, 1.0, 1e-300, 1e300, 0.5, 1e-8]))
        config = sd.SamplingConfig(temperature=temperature, top_p=draw(st.sampled_from([None, 0.5])))
        return (lambda: sd.warped_probs(logits, config)), ("logits", "temperature"), lambda r: finite_probs(r) and abs(float(r.double().sum()) - 1) < 1e-5
    if name in ("acceptance_probability", "residual_distribution", "token_joint_law", "token_output_law", "optimal_plan"):
        size = draw(st.integers(1, 5))
        target, draft = draw(vectors(size)), draw(vectors(draw(st.sampled_from([size, size, size + 1]))))
        copy = draw(st.sampled_from([False] * 4 + [True]))
        if copy:  # equal up to rounding: the residual is empty (E2), residual_distribution is the target itself
            draft = np.array(NEAR_COPY)
            target = draft * (1 - 1e-10)
        fn = getattr(sd, name)
        ok = (lambda r: finite_probs(r) and (not copy or float(np.abs(np.asarray(r) - draft).max()) <= 1e-12)) if name == "residual_distribution" else finite_probs
        return (lambda: fn(target, draft)), ("target_probs", "draft_probs"), ok
    if name in ("multidraft_optimum", "kseq_acceptance", "mss_acceptance", "kseq_law", "mss_law"):
        size = draw(st.integers(1, 5))
        target, draft, k = draw(vectors(size)), draw(vectors(size)), draw(numbers(GOOD_INTS[1:] + ([10**6] if name.endswith("acceptance") else [])))
        fn = getattr(sd, name, None) or getattr(multidraft, name)
        ok = (lambda r: finite_probs(r[0]) and 0 <= r[1] <= 1 + 1e-9) if name.endswith("_law") else (lambda r: 0 <= r <= 1 + 1e-9)
        return (lambda: fn(target, draft, k)), ("target_probs", "draft_probs", "num_drafts"), ok
    if name == "distinct_children_law":
        target = draw(vectors(4))
        children = draw(st.lists(st.sampled_from([0, 1, 3, -1, 4, 1.5, np.int64(2), True]), max_size=4))
        return (lambda: multidraft.distinct_children_law(target, children)), ("target_probs", "children"), lambda r: finite_probs(r[0])
    if name in ("acceptance_profile", "emitted_block_law", "block_law"):
        rows = draw(vectors(3, as_tensor="list"))
        k = draw(numbers(GOOD_INTS + ([12] if name == "block_law" else [])))  # 12: 3^12 drafts, inside the old cap (a hang)
        fn = (lambda a, b, kk: block.block_law(a, b, kk, 3)) if name == "block_law" else getattr(sd, name)
        return (lambda: fn(lambda prefix: rows, lambda prefix: rows, k)), ("target_fn", "draft_fn", "num_draft_tokens", "vocab"), lambda r: True
    if name == "tokens_per_step_moments":
        profile = draw(st.sampled_from([[1.0, 0.5, 0.25], [1.0], [1.0, 2.0], [0.5], [], [1.0, math.nan], np.array([1, 1j]), [[1.0]], torch.tensor([1.0, 0.3])]))
        return (lambda: sd.tokens_per_step_moments(profile)), ("profile",), lambda r: all(number_ok(x) for x in r) and r[2] >= 0
    if name in ("expected_tokens_iid", "speedup", "optimal_draft_length"):
        alpha, k, c = draw(numbers(GOOD_UNIT)), draw(numbers(GOOD_INTS + [32])), draw(numbers(GOOD_UNIT + [2.0]))
        top = draw(st.sampled_from([64] * 5 + [10**7, 2**70]))  # 10**7: a scan of minutes before its cap
        calls = {"expected_tokens_iid": lambda: sd.expected_tokens_iid(alpha, k), "speedup": lambda: sd.speedup(alpha, k, c),
                 "optimal_draft_length": lambda: sd.optimal_draft_length(alpha, c, max_draft_tokens=top)}
        checks = {"expected_tokens_iid": lambda r: equals_f22(r, alpha, k), "speedup": lambda r: equals_f22(r, alpha, k, 1 + int(k) * float(c)),
                  "optimal_draft_length": lambda r: all(number_ok(x) for x in r)}
        return calls[name], ("alpha", "num_draft_tokens", "cost_ratio", "max_draft_tokens"), checks[name]
    if name == "expected_tokens_positional":
        alphas = draw(st.sampled_from([[0.5, 0.2], [], [1.5], [math.nan], np.array([0.5j]), ["a"], [True, False], [[0.5, 0.5], [0.5, 0.5]], [[0.5], [0.5, 0.2]]]))
        return (lambda: sd.expected_tokens_positional(alphas)), ("alphas",), lambda r: number_ok(r) and np.ndim(alphas) == 1  # never flattened
    if name in ("acceptance_rate", "draft_utilisation", "mean_tokens_per_step"):
        counts = draw(st.sampled_from([[1, 2], [0.5], [-1], [], np.array([2**64 - 1], dtype=np.uint64), np.array([1, 2], dtype=np.uint8), [math.nan], [[1, 2]], ["x"],
                                       [2**62] * 4, [BIG, BIG]]))  # totals past 2**63
        k = draw(st.sampled_from([2, [2, 3], 0, -1, 1.5, np.int64(3), BIG]))
        fn = getattr(sd, name)
        call = (lambda: fn(counts)) if name == "mean_tokens_per_step" else (lambda: fn(counts, k))
        want = exact_ratio(name, counts, k)
        ok = lambda r: number_ok(r) and (want is None or r == float(want)) and (name == "mean_tokens_per_step" or 0 <= r <= 1)  # noqa: E731
        return call, ("num_accepted", "num_draft_tokens", "num_emitted"), ok
    if name == "required_sample_size":
        bins, x, alpha = draw(numbers([2, 27, np.int64(5)])), draw(numbers([0.02, 0.5, np.float32(0.1), 1e-160, 1e-200])), draw(numbers([1e-3, 1e-6, np.float32(0.01)]))
        return (lambda: sd.required_sample_size(bins, x, alpha=alpha)), ("num_bins", "tv", "alpha", "power"), number_ok
    if name == "detectable_tv":  # on a law: the pooled-bins number the reports print
        law, x, alpha = draw(vectors(3)), draw(numbers([1, 1000, np.int64(50), BIG])), draw(numbers([1e-3, 1e-6, np.float32(0.01)]))
        return (lambda: sd.detectable_tv(law, x, alpha=alpha)), ("law", "n", "alpha", "power"), lambda r: number_ok(r) and 0 < r <= 1
    if name in ("goodness_of_fit", "monte_carlo_gof"):
        counts = draw(st.sampled_from([[5, 3, 2], [1.5, 2, 3], [-1, 2, 3], [5, 3], np.array([1, 2, 3], dtype=np.uint64), [math.nan, 1, 1], [0, 0, 0], [2**62] * 3]))
        law = draw(vectors(3))
        call = (lambda: sd.goodness_of_fit(counts, law)) if name == "goodness_of_fit" else (lambda: monte_carlo_gof(counts, law, num_resamples=100, seed=0))
        return call, ("observed_counts", "expected_probs", "method"), lambda r: 0 <= r.pvalue <= 1 and r.n == sum(int(x) for x in np.ravel(counts))  # n exact
    if name == "holm":
        pvalues = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1e-9, math.nan, -0.1, 2.0, True, "x"]), max_size=4))
        alpha = draw(numbers([0.05, 1e-6]))
        return (lambda: holm(pvalues, alpha)), ("pvalues", "alpha"), lambda r: len(r) == len(pvalues)
    if name == "sample_size_for_alternative":
        law, target = draw(vectors(3)), draw(vectors(3))
        return (lambda: sample_size_for_alternative(law, target, alpha=1e-6)), ("law", "target", "alpha"), lambda r: r > 0
    if name == "check_law":
        outcomes = draw(st.sampled_from([[0, 1, 2, 1], [0.5], [], [5, -1], np.array([1, 2], dtype=np.uint8), torch.tensor([0, 1]), ["a"]]))
        law = draw(vectors(3))
        return (lambda: sd.check_law(outcomes, law, name="fuzz", alpha=1e-6)), ("outcomes", "law"), lambda r: 0 <= r.pvalue <= 1
    if name == "generate":
        from fixtures.models import tiny_pair

        target, draft = tiny_pair(0, 8)
        prompts = draw(st.sampled_from([[[1, 2]], [[1, 2], [3]], [[]], [], [[9]], [[1.5]], [np.array([1, 2])], "12", [[True]], torch.tensor([[1, 2]])]))
        kwargs = dict(
            max_new_tokens=draw(numbers([1, 3, np.int64(2)])), num_draft_tokens=draw(numbers([0, 2, np.int32(1)])),
            eos_token_id=draw(st.sampled_from([None, 7, np.int64(3), 8, -1, [1, 2], 1.5])), seed=draw(numbers([0, 5])),
        )
        return (lambda: sd.generate(target, draft, prompts, **kwargs)), ("prompts", *kwargs, "num_draft_tokens"), lambda r: all(
            len(t) <= int(kwargs["max_new_tokens"]) for t in r.tokens)
    if name == "sequence_law":
        from fixtures.models import tiny_pair

        target, _ = tiny_pair(0, 8)
        valid = [[1, 2], np.array([3]), torch.tensor([1, 2]), (4,)]  # what generate accepts as one prompt
        which = draw(st.integers(0, 8))
        prompt = (valid + [[], [9], [1.5], "ab", np.array([[1, 2]])])[which]
        length = draw(numbers([1, 2]))
        clean = which < len(valid) and type(length) is int and length in (1, 2)
        return (lambda: sd.sequence_law(target, prompt, length)), ("prompt", "length"), lambda r: abs(r.probs.sum() - 1) < 1e-9, clean
    if name == "check_verifier":
        kwargs = dict(tv=draw(numbers([0.1, 0.05, None])), n=draw(st.sampled_from([None, 200, 0, 1.5, -3, True])),
                      seed=draw(numbers([0, 3])), max_n=draw(st.sampled_from([20_000, 0, "x"])))
        cases = draw(st.sampled_from([None, [], ["spec"], [sd.conformance.catalogue.token_cases()[0]]]))
        return (lambda: sd.check_verifier(sd.verify_tokens, cases=cases, chains=[], device="cpu", **kwargs)), ("tv", "n", "seed", "max_n", "cases"), lambda r: r.verdict in ("PASS", "INCONCLUSIVE")
    raise KeyError(name)


ENTRY_POINTS = [
    "verify_tokens", "verify_block", "verify_tokens_with_uniforms", "verify_greedy", "verify_kseq", "verify_mss",
    "sample_categorical", "inverse_cdf", "SamplingConfig", "warped_probs",
    "acceptance_probability", "residual_distribution", "token_joint_law", "token_output_law", "optimal_plan",
    "multidraft_optimum", "kseq_acceptance", "mss_acceptance", "kseq_law", "mss_law", "distinct_children_law",
    "acceptance_profile", "emitted_block_law", "block_law", "tokens_per_step_moments",
    "expected_tokens_iid", "speedup", "optimal_draft_length", "expected_tokens_positional",
    "acceptance_rate", "draft_utilisation", "mean_tokens_per_step",
    "required_sample_size", "detectable_tv", "goodness_of_fit", "monte_carlo_gof", "holm", "sample_size_for_alternative", "check_law",
]
NAME_ALIASES = ("row", "logits", "contexts", "fn(")  # messages may name an argument's row or a callable's output


def run_one(name, data):
    call, names, ok, *clean = entry(data.draw, name)  # clean: a valid input, which must not be refused
    try:
        result = call()
    except (ValueError, TypeError) as error:
        message = str(error)
        assert not (clean and clean[0]), f"{name}: a valid input refused: {message!r}"
        assert any(n in message for n in names + NAME_ALIASES), f"{name}: the error does not name an argument: {message!r}"
        assert "\n" not in message.strip(), f"{name}: a multi-line error: {message!r}"
        COUNTS[name]["named error"] += 1
        return
    assert ok(result), f"{name}: an invalid result {result!r}"
    COUNTS[name]["valid result"] += 1


@pytest.mark.parametrize("name", ENTRY_POINTS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_entry_point(name, data):
    run_one(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ENTRY_POINTS)
@settings(max_examples=SLOW_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_entry_point_at_length(name, data):
    run_one(name, data)


MODEL_ENTRY_POINTS = ["generate", "sequence_law", "check_verifier"]


@pytest.mark.parametrize("name", MODEL_ENTRY_POINTS)
@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_model_entry_point(name, data):
    run_one(name, data)


def test_counts_per_entry_point():
    """Runs last in this module: the counts of both outcomes per entry point (see the module docstring)."""
    if not COUNTS:
        pytest.skip("run with the other fuzz tests")
    for name in ENTRY_POINTS + MODEL_ENTRY_POINTS:
        counts = COUNTS.get(name, {})
        print(f"fuzz {name:30s} valid {counts.get('valid result', 0):5d}  named errors {counts.get('named error', 0):5d}")
    assert all(COUNTS[name]["valid result"] > 0 and COUNTS[name]["named error"] > 0 for name in COUNTS), dict(COUNTS)
