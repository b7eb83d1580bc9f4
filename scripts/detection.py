"""The mutation table: does the engine catch each mutant at the budget its exact TV calls for,
and do the peers' own tests (re-implemented from their descriptions) catch it at the same budget?

For each mutant of :mod:`fixtures.mutants` on one case (default ``peaked_v16``, K = 2, rows
rolled per position), from its exact first-token law: the TV, and n*, the smallest n whose
chi-square test at the report's per-check alpha has power 0.99 (F34 with the exact lambda;
:func:`specdec.stats.sample_size_for_alternative`).  Then, over 20 seeds: how often
``check_verifier`` (that case only: first-token and acceptance checks, family alpha 1e-6) fails
the mutant at n*, and - side by side at one common budget of 20,000 samples - how often it
and the two baselines flag it:

* vLLM's L2 test: empirical histograms at n/10^4 ... n samples; the L2 distance to the target
  must shrink more than 20x faster than the distance to an unrelated reference law, else flagged;
* transformers' count-ordering test: the counts of the target's three most likely tokens must
  come out in the target's order, else flagged.

    python -m scripts.detection                 # verifier mutants and controls (minutes, mostly transformers)
    python -m scripts.detection --decoders      # decoder mutants on a tiny Llama pair
    python -m scripts.detection --max-n 2e8 --device cuda   # a GPU reaches the bf16 mutant (B11)
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from fixtures.mutants import CONTROLS, MUTANTS, Mutant
from specdec.conformance import TokenCase, check_verifier, pair
from specdec.conformance.streams.one_step import token_stream
from specdec.conformance.engine import ChunkKey
from specdec.stats import sample_size_for_alternative

SEEDS = 20
FAMILY_ALPHA = 1e-6
CHECKS_PER_REPORT = 2  # first token + acceptance, one case
COMMON_N = 20_000  # the budget all three methods get side by side (transformers' own test uses 10,000)
MIN_N = 200  # n* comes from the chi-square approximation, which needs expected counts >= 5: never run fewer


def run_size(n_star: float) -> int:
    """The n a detection run uses: n*, but at least MIN_N."""
    return max(int(n_star), MIN_N)


def main_case(name: str = "peaked_v16") -> TokenCase:
    return TokenCase.from_pair(name, *pair(name))


def first_tokens(verifier, case: TokenCase, n: int, seed: int, device=torch.device("cpu")) -> np.ndarray:
    """Counts of the first emitted token over n steps (one chunk per 65,536 samples)."""
    stream = token_stream(verifier, case, device)
    counts, chunk = np.zeros(case.vocab + 1, dtype=np.int64), 0
    while n > 0:
        size = min(n, 65_536)
        counts += stream.draw(size, ChunkKey(seed, 0, chunk, device))[0].cpu().numpy()
        n, chunk = n - size, chunk + 1
    return counts[:-1]


def vllm_l2_flags(verifier, case: TokenCase, n: int, seed: int) -> bool:
    target = case.first_token_law()
    reference = torch.randn(case.vocab, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).softmax(-1).numpy()
    sizes = sorted({max(10, n // 10**j) for j in range(4, -1, -1)})
    to_target, to_reference = [], []
    for i, size in enumerate(sizes):
        counts = first_tokens(verifier, case, size, seed * 100 + i)
        empirical = counts / max(counts.sum(), 1)
        to_target.append(np.linalg.norm(empirical - target))
        to_reference.append(np.linalg.norm(empirical - reference))
    ratio_target = to_target[0] / max(to_target[-1], 1e-300)
    ratio_reference = to_reference[0] / max(to_reference[-1], 1e-300)
    return not ratio_target > 20 * ratio_reference


def ordering_flags(verifier, case: TokenCase, n: int, seed: int) -> bool:
    counts = first_tokens(verifier, case, n, seed)
    top = np.argsort(-case.first_token_law(), kind="stable")[:3]
    return not all(counts[top[i]] > counts[top[i + 1]] for i in range(len(top) - 1))


def detection_row(name, source, verifier, law, case, *, seeds=SEEDS, max_n=2_000_000, device=None) -> dict:
    """Flags over ``seeds`` seeds: ours at n*, then ours and both baselines at the common budget."""
    target = case.first_token_law()
    tv = 0.5 * float(np.abs(law - target).sum())
    n_star = sample_size_for_alternative(law, target, alpha=FAMILY_ALPHA / CHECKS_PER_REPORT) if tv > 0 else math.inf
    row = dict(name=name, source=source, case=case.name, tv=tv, n_star=n_star, ours_at_n_star=None, seeds=seeds, seconds=None)
    quiet = dict(cases=[case], chains=[], device=device)
    if math.isfinite(n_star) and n_star <= max_n:
        started = time.perf_counter()
        row["ours_at_n_star"] = sum(
            check_verifier(verifier, n=run_size(n_star), max_n=run_size(n_star), seed=seed, name=name, **quiet).verdict == "FAIL"
            for seed in range(seeds)
        )
        row["seconds"] = (time.perf_counter() - started) / seeds
    ours = vllm = order = 0
    for seed in range(seeds):
        ours += check_verifier(verifier, n=COMMON_N, seed=100 + seed, name=name, **quiet).verdict == "FAIL"
        vllm += vllm_l2_flags(verifier, case, COMMON_N, 10_000 + seed)
        order += ordering_flags(verifier, case, COMMON_N, 20_000 + seed)
    row.update(ours=ours, vllm_l2=vllm, ordering=order)
    return row


def mutant_law(mutant: Mutant, case: TokenCase) -> np.ndarray:
    return mutant.first_token_law(case.target_rows.double(), case.draft_rows.double()).numpy()


def format_table(rows: list[dict], max_n: int) -> str:
    lines = [
        f"| subject | reproduces | exact TV | n* (power .99) | specdec at n* | specdec at {COMMON_N:,} | vLLM L2 at {COMMON_N:,} | transformers ordering at {COMMON_N:,} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seeds = r["seeds"]
        n_star = "-" if not math.isfinite(r["n_star"]) else f"{int(r['n_star']):,}" + (f" (ran {MIN_N})" if r["n_star"] < MIN_N else "")
        at_star = "-" if r["ours_at_n_star"] is None else f"{r['ours_at_n_star']}/{seeds}"
        if r["ours_at_n_star"] is None and math.isfinite(r["n_star"]):
            at_star = f"not run (n* > {max_n:,})"
        lines.append(
            f"| {r['name']} | {r['source']} | {r['tv']:.4f} | {n_star} | {at_star} | "
            f"{r['ours']}/{seeds} | {r['vllm_l2']}/{seeds} | {r['ordering']}/{seeds} |"
        )
    return "\n".join(lines)


def decoder_detection_rows(seeds: int = SEEDS) -> list[dict]:
    """Decoder mutants on the tiny Llama pair (V = 8, T = 0.8, top-k 5): exact first-token TV (a lower
    bound on the sequence TV), n* from that law, and how often ``check_decoder`` (first 2 tokens,
    prompt [1, 2, 3]) fails the mutant at n* samples."""
    from fixtures.models import tiny_pair
    from fixtures.mutants import decoder_mutant_first_token_laws, decoder_mutants
    from specdec.conformance import check_decoder
    from specdec.laws import sequence_law
    from specdec.warpers import SamplingConfig

    sampling, prompt = SamplingConfig(temperature=0.8, top_k=5), [1, 2, 3]
    target, draft = tiny_pair(1, 8)
    reference = sequence_law(target, prompt, 1, sampling=sampling)
    target_law = np.zeros(8)
    for sequence, p in zip(reference.sequences, reference.probs):
        target_law[sequence[0]] = p
    laws = decoder_mutant_first_token_laws(target, draft, prompt, sampling=sampling)
    mutants = decoder_mutants(target, draft, sampling=sampling, eos_token_id=None)
    rows = []
    for name, law in laws.items():
        law = law.numpy()
        n_star = sample_size_for_alternative(law, target_law, alpha=FAMILY_ALPHA)
        caught = sum(
            check_decoder(mutants[name], target, [prompt], length=2, sampling=sampling, n=run_size(n_star), max_n=run_size(n_star), seed=seed).verdict == "FAIL"
            for seed in range(seeds)
        )
        rows.append(dict(name=name, tv=0.5 * float(np.abs(law - target_law).sum()), n_star=n_star, caught=caught, seeds=seeds))
        print(f"| {name} | {rows[-1]['tv']:.4f} | {int(n_star):,} | {caught}/{seeds} |", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decoders", action="store_true", help="decoder mutants instead of verifier mutants")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--max-n", type=float, default=2_000_000, help="largest n* run (default 2e6)")
    parser.add_argument("--device", default=None, help="where the engine samples (default: cuda when available)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.decoders:
        print("| decoder mutant | exact first-token TV | n* | check_decoder at n* |\n|---|---|---|---|")
        decoder_detection_rows(args.seeds)
        return
    case, rows = main_case(), []
    for mutant in MUTANTS:  # one row at a time, so progress shows
        rows.append(detection_row(mutant.name, mutant.source, mutant.verifier, mutant_law(mutant, case), case,
                                  seeds=args.seeds, max_n=int(args.max_n), device=args.device))
        print(f"# {mutant.name} done at {time.perf_counter() - started:.0f} s", flush=True)
    print(format_table(rows, int(args.max_n)), flush=True)
    print("\ncontrols (lossless: every flag is a false alarm):")
    controls = [
        detection_row(name, "control", fn, case.first_token_law(), case, seeds=5 if "transformers" in name else args.seeds, device=args.device)
        for name, fn in CONTROLS.items()
    ]
    print(format_table(controls, int(args.max_n)))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
