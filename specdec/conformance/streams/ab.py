"""Two decoders against each other (two samples, H1-H3): the stream of :func:`specdec.conformance.check_ab`.

Each chunk asks both decoders for the same prompts (interleaved in every call), the subject with the
seed (campaign seed, 0, chunk) and the reference with (campaign seed, 1, chunk), and reads their
first L tokens by the decoder contract.  :class:`ABTally` keeps, per side, the sequences per prompt
and each call's rows (for the independence diagnostic of :mod:`.decoder_rows`).  No law is known, so
n is re-planned from the *combined* counts after every chunk (:func:`ab_needed`, H2): the side labels
are exchangeable given the combined counts under the null, which keeps the level.  :func:`ab_check`
turns the two sides' counts of one prompt into one :class:`Check`: H1's test, H2's reached TV (with
the rare mass and the Good-Turing estimate of the unseen mass, :func:`unseen_mass`), H3's location
and the sequences one side only saw.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...stats.two_sample import homogeneity_test, two_sample_detectable_tv, two_sample_prefix_decomposition, two_sample_sample_size
from ..calls import CallGuard
from ..checks import Check
from ..decoder_output import read_rows
from ..engine import ChunkKey, Stream
from ..seeds import derive_seed
from ..tallies import saved_sequences
from .decoder_rows import Independence

SIDES = ("subject", "reference")

SEES_AB = (
    "any difference between the two decoders' laws of the first L tokens: a lossy acceptance rule or residual "
    "(L1-L6, B1, B10, B12, B14), warpers dropped or misapplied on the speculative path (B4, B9, B15), rows of a "
    "batch mixed up (B13) - without knowing either law (H1, located by H3)"
)


class Side:
    """What one decoder produced: sequences per prompt, and each call's rows for the independence diagnostic."""

    def __init__(self, num_prompts: int) -> None:
        self.counts = [Counter() for _ in range(num_prompts)]
        self.calls: list[list[Counter]] = [[] for _ in range(num_prompts)]

    def add(self, prompt: int, rows: list[tuple[int, ...]]) -> None:
        self.counts[prompt].update(rows)
        self.calls[prompt].append(Counter(rows))

    def independence(self, prompt: int) -> dict:
        counts = self.counts[prompt]
        total = sum(counts.values())
        probs = np.array([c / total for c in counts.values()]) if total else np.zeros(1)
        diagnostic = Independence(probs)  # the plug-in law of this side's own sample
        for call in self.calls[prompt]:
            diagnostic.add(list(call.elements()))
        return diagnostic.summary()


class ABTally:
    """The two sides of a two-sample check; a chunk: (subject's rows per prompt, reference's rows per prompt)."""

    def __init__(self, num_prompts: int) -> None:
        self.sides = (Side(num_prompts), Side(num_prompts))

    def add(self, chunk) -> None:
        for side, rows in zip(self.sides, chunk):
            for i, tested in enumerate(rows):
                side.add(i, tested)

    def state(self) -> dict:
        """Per side and prompt: each call's sequences with their counts (the counts are their sum)."""
        return {role: [[[[list(s), k] for s, k in call.items()] for call in calls] for calls in side.calls]
                for role, side in zip(SIDES, self.sides)}

    def restore(self, state: dict, drawn: int) -> None:
        """Each side's calls per prompt, whose counts sum to the ``drawn`` samples per side and prompt."""
        prompts = len(self.sides[0].counts)
        for role, side in zip(SIDES, self.sides):
            saved = state.get(role)
            if not isinstance(saved, list) or len(saved) != prompts or not all(isinstance(c, list) for c in saved):
                raise ValueError(f"resume: the tally's {role} side must be a list of {prompts} prompts' calls")
            for prompt, calls in enumerate(saved):
                found = [saved_sequences(call, f"{role}[{prompt}][{c}]") for c, call in enumerate(calls)]
                if sum(sum(call.values()) for call in found) != drawn:
                    raise ValueError(f"resume: the {role} side of prompt {prompt} counts {sum(sum(c.values()) for c in found):,} "
                                     f"samples, not the {drawn:,} drawn (an edited or damaged checkpoint)")
                for call in found:
                    side.add(prompt, list(call.elements()))


def ab_needed(tally: ABTally, drawn: int, alpha_check: float, *, tv: float, max_n: int, first: int) -> int:
    """Samples per side and prompt the run needs now: H2's n for ``tv`` on the combined counts so far
    (``first`` before any estimate); at most ``max_n``."""
    if drawn == 0:
        return min(first, max_n)
    needed = 0
    for i in range(len(tally.sides[0].counts)):
        law = combined_law(*tally.sides, i)
        unseen = unseen_mass(*tally.sides, i)
        if two_sample_detectable_tv(law, drawn, drawn, alpha=alpha_check)[0] + unseen <= tv:
            needed = max(needed, drawn)
            continue
        planned = two_sample_sample_size(law, max(tv - unseen, tv / 2), alpha=alpha_check, max_n=max_n)
        needed = max(needed, min(max_n, max(planned, drawn + 1)))
    return needed


def ab_stream(subject, reference, prompts: list[list[int]], *, length: int, asked: int, eos: frozenset, tv: float | None,
              max_n: int, per_call: int, guard: CallGuard, vocab: int | None = None) -> Stream:
    """Both decoders on ``prompts``, ``per_call`` rows per prompt and call, ``asked`` tokens per row, the first
    ``length`` tested (EOS ``eos`` absorbing); n planned for ``tv`` from the combined counts (H2)."""

    def draw(m: int, key: ChunkKey):
        rows = [p for _ in range(m) for p in prompts]
        out = []
        for index, decoder in enumerate((subject, reference)):
            seed = derive_seed(key.seed, index, key.chunk)
            describe = lambda role=SIDES[index], seed=seed: (  # noqa: E731
                f"a call of the {role} with {len(rows):,} rows ({m:,} per prompt x {len(prompts)}), max_new_tokens={asked}, seed={seed}")
            outputs = guard.call(decoder, (rows, asked, seed), describe)
            tested = guard.read(lambda: read_rows(outputs, len(rows), length, eos, asked=asked, vocab=vocab), describe)
            out.append([tested[i :: len(prompts)] for i in range(len(prompts))])
        return out

    def evaluate(tally: ABTally, alpha):
        return [ab_check(i, prompt, length, asked, tally.sides, alpha, eos) for i, prompt in enumerate(prompts)]

    def needed(tally: ABTally, drawn: int, alpha):
        return ab_needed(tally, drawn, alpha, tv=tv, max_n=max_n, first=per_call)

    return Stream(f"A/B, {len(prompts)} prompt(s)", [], len(prompts), 1, lambda: ABTally(len(prompts)), draw, evaluate,
                  needed=needed if tv is not None else None, pilot=False, samples_per_draw=2 * len(prompts), chunk=per_call)


def combined_law(side_a: Side, side_b: Side, prompt: int) -> np.ndarray:
    both = side_a.counts[prompt] + side_b.counts[prompt]
    values = np.array(list(both.values()), dtype=np.float64)
    return values / values.sum() if values.size else values


def unseen_mass(side_a: Side, side_b: Side, prompt: int) -> float:
    both = side_a.counts[prompt] + side_b.counts[prompt]
    total = sum(both.values())
    return sum(1 for c in both.values() if c == 1) / total if total else 1.0


def ab_check(i: int, prompt, length: int, asked: int, sides, alpha_check: float, eos) -> Check:
    side_a, side_b = sides
    a, b = side_a.counts[i], side_b.counts[i]
    result = homogeneity_test(a, b)
    reached, bins, rare = two_sample_detectable_tv(combined_law(side_a, side_b, i), result.n_a, result.n_b, alpha=alpha_check)
    unseen = unseen_mass(side_a, side_b, i)
    reached = min(1.0, reached + unseen) if bins >= 2 else 1.0
    tested_of = f"first {length} of {asked} tokens" if asked > length else f"first {length} tokens"
    details = {"n_subject": result.n_a, "n_reference": result.n_b, "bins": bins, "rare_mass": rare, "unseen_mass": unseen,
               "only_subject": [[list(s), k] for s, k in result.only_a[:10]],
               "only_reference": [[list(s), k] for s, k in result.only_b[:10]]}
    over = [(str(list(s)), o, e) for s, o, e in result.deviations if o > e][:3]
    under = [(str(list(s)), o, e) for s, o, e in result.deviations if o < e][:3]
    details.update(over=over, under=under)
    independence = [side.independence(i) for side in sides]
    details["independence"] = {"dependent": any(x["dependent"] for x in independence), "subject": independence[0],
                               "reference": independence[1],
                               "text": "; ".join(f"{role}: {x['text']}" for role, x in zip(SIDES, independence))}
    method = "pearson homogeneity" if bins >= 2 else "none (fewer than two bins)"
    check = Check(f"prompt {i} (len {len(prompt)}): {tested_of}, subject vs reference (H1)", "two-sample sequence", SEES_AB,
                  method, result.statistic, result.pvalue, result.n_a + result.n_b, result.cells, result.df, reached,
                  details=details)
    location = two_sample_prefix_decomposition(a, b, terminal=eos)
    check.location = _describe_location(location) + _support_text(result)
    return check


def _describe_location(location) -> str:
    prefix, position = location.worst_prefix(), location.worst_position()
    if prefix is None or position is None:
        return "no prefix seen by both sides"
    shown = ", ".join(f"token {x}: {o} in the subject vs {e:.1f} if the laws were equal" for x, o, e in prefix.deviations[:3])
    return (f"position {position[0]} (G={position[1]:.4g}, df={position[2]}, p={position[3]:.3g}); "
            f"prefix {list(prefix.prefix)} (G={prefix.g:.4g}, df={prefix.df}, n={prefix.n}, p={prefix.pvalue:.3g}): {shown} (H3)")


def _support_text(result) -> str:
    parts = []
    for role, only in (("the subject", result.only_a), ("the reference", result.only_b)):
        if only:
            shown = ", ".join(f"{list(s)} x{k}" for s, k in only[:3])
            parts.append(f"{len(only)} sequence(s) seen by {role} only ({sum(k for _, k in only):,} samples; e.g. {shown})")
    return ("; " + "; ".join(parts)) if parts else ""
