"""The engine where the subject lives, measured: throughput, the default campaign at a small TV, the
bf16 mutant (B11) caught, peers' kernels, and the detection frontier per time budget.

    python -m scripts.frontier --device cuda --out /tmp/gpu          # on a GPU machine (minutes)
    python -m scripts.frontier --device cpu --sections frontier --seconds 60

Sections (``--sections``, default all):

* ``throughput`` - samples per second of one first-token check (peaked_v16, V = 16) for the
  reference and the fused kernel, at a fixed large n;
* ``campaign`` - the whole default campaign (token cases and chains) at TV 0.0005 (``--campaign-tv``);
* ``peers`` - FlashInfer's chain_speculative_sampling and our fused kernel at TV 0.01 and 0.003;
* ``b11`` - the bf16 mutant (exact TV 0.0004 on peaked_v16) and the reference, both at n = 1.5e8;
* ``frontier`` - every mutant of fixtures/mutants.py (transformers' one-row verifier excepted) under
  a time budget of ``--seconds``: the TV reached, whether it was caught, samples per second, and
  the TV a minute of that device reaches at that rate.

Everything is written to ``--out``/frontier.json and printed as tables.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

import specdec as sd
from fixtures.mutants import MUTANTS
from scripts.detection import CHECKS_PER_REPORT, FAMILY_ALPHA, main_case, mutant_law
from specdec.conformance import Console, check_verifier
from specdec.conformance.checks import detectable
from specdec.stats import sample_size_for_alternative

SKIP_ON_DEVICE = {"transformers_diverse_0.5"}  # transformers' verifier runs one row per call on the host


def _row(report, **extra) -> dict:
    return dict(subject=report.subject, verdict=report.verdict, summary=report.summary(), seconds=report.seconds,
                samples=report.samples, samples_per_second=report.samples / max(report.seconds, 1e-9),
                reached_tv=report.reached_tv, device=report.device, min_p=min((c.pvalue for c in report.checks), default=1.0), **extra)


def throughput(device, n: int) -> list[dict]:
    from specdec.verify.fused import available, verify_tokens_fused

    rows = []
    subjects = [("reference verify_tokens", sd.verify_tokens)]
    if available(device) and torch.device(device).type == "cuda":
        subjects.append(("fused verify_tokens_fused", verify_tokens_fused))
    for name, verifier in subjects:
        report = check_verifier(verifier, cases=[main_case()], chains=[], n=n, max_n=n, device=device, name=name)
        rows.append(_row(report, samples_per_minute=60 * report.samples / report.seconds))
    return rows


def campaign(device, tv: float) -> list[dict]:
    report = check_verifier(sd.verify_tokens, tv=tv, max_n=2_000_000_000, device=device, console=Console(sys.stdout, None),
                            name=f"default campaign at TV {tv:g}")
    print(report.format())
    return [_row(report)]


def peers(device) -> list[dict]:
    rows = []
    subjects = []
    if torch.device(device).type == "cuda":
        from specdec.verify.fused import verify_tokens_fused

        subjects.append(("specdec fused kernel (Triton)", verify_tokens_fused))
        try:
            from specdec.adapters.flashinfer import TESTED_FLASHINFER, _sampling_module, flashinfer_chain_speculative_sampling

            _sampling_module()
            subjects.append((f"FlashInfer {TESTED_FLASHINFER} chain_speculative_sampling", flashinfer_chain_speculative_sampling))
        except ImportError as error:
            print(f"FlashInfer not importable: {error}")
    for name, verifier in subjects:
        for tv in (0.01, 0.003):
            report = check_verifier(verifier, tv=tv, max_n=2_000_000_000, device=device, name=name)
            print(report.format())
            rows.append(_row(report, tv=tv))
    return rows


def b11(device, n: int) -> list[dict]:
    mutant = next(m for m in MUTANTS if m.name == "bf16_draft_probs")
    case = main_case()
    law = mutant_law(mutant, case)
    n_star = sample_size_for_alternative(law, case.first_token_law(), alpha=FAMILY_ALPHA / CHECKS_PER_REPORT)
    rows = []
    for name, verifier in (("bf16_draft_probs (B11)", mutant.verifier), ("reference verify_tokens", sd.verify_tokens)):
        report = check_verifier(verifier, cases=[case], chains=[], n=n, max_n=n, device=device, name=name)
        print(report.format())
        rows.append(_row(report, n_star=n_star, exact_tv=0.5 * float(abs(law - case.first_token_law()).sum()) if "B11" in name else 0.0))
    return rows


def frontier(device, seconds: float) -> list[dict]:
    case = main_case()
    target = case.first_token_law()
    rows = []
    for mutant in MUTANTS:
        if mutant.name in SKIP_ON_DEVICE and torch.device(device).type == "cuda":
            continue
        law = mutant_law(mutant, case)
        started = time.perf_counter()
        report = check_verifier(mutant.verifier, cases=[case], chains=[], tv=None, time_budget=seconds, max_n=2_000_000_000,
                                device=device, name=mutant.name)
        rate = report.samples / max(report.seconds, 1e-9)
        per_minute = detectable(target, max(1, int(rate * 60 / 1)), FAMILY_ALPHA / CHECKS_PER_REPORT)[0]
        rows.append(_row(report, exact_tv=0.5 * float(abs(law - target).sum()), caught=report.verdict == "FAIL",
                         wall=time.perf_counter() - started, tv_per_device_minute=per_minute))
        print(f"{mutant.name:26s} exact TV {rows[-1]['exact_tv']:.4f}  reached TV {report.reached_tv:.4f} in {report.seconds:5.1f} s "
              f"({rate / 1e6:6.2f} M samples/s; a minute reaches TV {per_minute:.5f}): {report.verdict}", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sections", default="throughput,campaign,peers,b11,frontier")
    parser.add_argument("--seconds", type=float, default=10.0, help="time budget per mutant in the frontier (default 10)")
    parser.add_argument("--campaign-tv", type=float, default=0.0005)
    parser.add_argument("--throughput-n", type=float, default=5e8)
    parser.add_argument("--b11-n", type=float, default=1.5e8)
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"device": args.device, "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
               "torch": torch.__version__, "seconds_per_mutant": args.seconds}
    runs = {
        "throughput": lambda: throughput(args.device, int(args.throughput_n)),
        "campaign": lambda: campaign(args.device, args.campaign_tv),
        "peers": lambda: peers(args.device),
        "b11": lambda: b11(args.device, int(args.b11_n)),
        "frontier": lambda: frontier(args.device, args.seconds),
    }
    for section in args.sections.split(","):
        started = time.perf_counter()
        print(f"== {section}", flush=True)
        results[section] = runs[section]()
        print(f"== {section} done in {time.perf_counter() - started:.1f} s", flush=True)
        (out / "frontier.json").write_text(json.dumps(results, indent=2, default=lambda x: None if isinstance(x, float) and math.isnan(x) else str(x)))
    for section in ("throughput", "campaign", "peers", "b11"):
        for row in results.get(section, []):
            print(f"{section:10s} {row['subject'][:48]:48s} {row['verdict']:12s} {row['samples']:>13,} samples {row['seconds']:7.1f} s "
                  f"{row['samples_per_second'] / 1e6:8.2f} M/s  reached TV {row['reached_tv'] or float('nan'):.5f}  min p {row['min_p']:.3g}")


if __name__ == "__main__":
    main()
