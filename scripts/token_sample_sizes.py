"""Answers needed to catch a bug: the per-token check against check_ab and the exact-law check (issue 29).

On the tiny Llama pair (V = 8, drafts of K = 2, temperature 0.8, top-k 5, prompts [1, 2, 3] and
[4, 5, 4, 5, 4]), each subject is checked three ways at one family-wise alpha, each asked for the same TV,
drawing chunks of 64 answers per prompt and stopping at its first look that rejects (P4: looks at 128, 256,
512, ... answers):

* ``check_tokens`` against the target's exact per-token law (answers of 2 tokens, as the others, and of 16);
* ``check_ab`` against specdec's autoregressive loop (two samples of the 2-token answers; answers counted on
  both sides, as a server pays for them);
* ``check_decoder`` against the exact law of the 2-token answers (F35).

Subjects: the decoder mutants B2, B3, B4 (:func:`fixtures.mutants.decoder_mutants`) and a planted lossy
acceptance that keeps 5% of the drafts the rule rejects (:func:`fixtures.mutants.keeps_rejected_drafts`).
The table gives the median answers drawn when each FAILed (over ``--seeds`` seeds) and the median wall time;
a check that did not FAIL within ``--max-answers`` shows "> max".

    python -m scripts.token_sample_sizes                 # about 10 minutes on a 2-core CPU
"""

from __future__ import annotations

import argparse
import statistics
import time

from fixtures.models import tiny_pair
from fixtures.mutants import decoder_mutants, keeps_rejected_drafts
from specdec.conformance import check_ab, check_decoder, check_tokens
from specdec.decoding import ModelDraft, SpeculativeDecoder
from specdec.laws import TargetLawOracle
from specdec.warpers import SamplingConfig

WARPED = SamplingConfig(temperature=0.8, top_k=5)
EOS = 7
PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]
FAMILY_ALPHA = 1e-6
TV = 0.01
CHUNK = 64  # answers per prompt per chunk for every check: looks at 128, 256, 512, ... answers


def subjects(target, draft) -> dict:
    out = dict(decoder_mutants(target, draft, sampling=WARPED, eos_token_id=EOS))
    out["keeps 5% of rejected drafts"] = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, sampling=WARPED,
                                                            eos_token_id=EOS, verifier=keeps_rejected_drafts(0.05))
    return out


def methods(target, max_answers: int) -> dict:
    oracle = TargetLawOracle(target, WARPED)
    reference = SpeculativeDecoder(target, None, num_draft_tokens=0, sampling=WARPED, eos_token_id=EOS)
    per_prompt = max_answers // len(PROMPTS)
    common = dict(eos_token_id=EOS, tv=TV, family_alpha=FAMILY_ALPHA, chunk_size=CHUNK)
    return {
        "per-token, 2 tokens": lambda s, seed: check_tokens(s, oracle, PROMPTS, length=2, max_n=per_prompt, seed=seed, **common),
        "per-token, 16 tokens": lambda s, seed: check_tokens(s, oracle, PROMPTS, length=16, max_n=per_prompt, seed=seed, **common),
        "check_ab (2 tokens)": lambda s, seed: check_ab(s, reference, PROMPTS, length=2, max_n=per_prompt, seed=seed, **common),
        "exact law (2 tokens)": lambda s, seed: check_decoder(s, target, PROMPTS, length=2, sampling=WARPED, max_n=per_prompt,
                                                              seed=seed, **common),
    }


def answers(report) -> int:
    """Answers drawn: check_ab counts both sides (a server answers both)."""
    return report.samples


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-answers", type=int, default=2_000_000)
    args = parser.parse_args(argv)
    target, draft = tiny_pair(1, 8)
    checks = methods(target, args.max_answers)
    print(f"plan: {len(checks)} checks x 4 subjects x {args.seeds} seeds, each stopping at its first rejecting look "
          f"(family alpha {FAMILY_ALPHA:g}, TV asked {TV}); about 10 minutes", flush=True)
    rows = []
    for name, subject in subjects(target, draft).items():
        cells = []
        for method, run in checks.items():
            drawn, seconds, verdicts = [], [], []
            for seed in range(args.seeds):
                started = time.perf_counter()
                report = run(subject, 100 + seed)
                seconds.append(time.perf_counter() - started)
                drawn.append(answers(report) if report.verdict == "FAIL" else None)
                verdicts.append(report.verdict)
            caught = [d for d in drawn if d is not None]
            median = statistics.median(caught) if len(caught) == len(drawn) else None
            cells.append((method, median, statistics.median(seconds), verdicts))
            print(f"  {name}: {method}: {verdicts}, answers {drawn}, {statistics.median(seconds):.1f} s", flush=True)
        rows.append((name, cells))
    names = list(checks)
    print("\n| subject | " + " | ".join(f"{m}: answers (s)" for m in names) + " | check_ab / per-token (answers) |")
    print("|---|" + "---|" * (len(names) + 1))
    for name, cells in rows:
        text = [f"{int(a):,} ({s:.1f} s)" if a is not None else f"> max ({s:.1f} s)" for _, a, s, _ in cells]
        per_token = min((a for m, a, _, _ in cells if m.startswith("per-token") and a is not None), default=None)
        ab = next(a for m, a, _, _ in cells if m.startswith("check_ab"))
        ratio = f"{ab / per_token:.1f}x" if per_token and ab else "-"
        print(f"| {name} | " + " | ".join(text) + f" | {ratio} |")


if __name__ == "__main__":
    main()
