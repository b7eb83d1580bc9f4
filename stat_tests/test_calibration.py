"""Calibration of the conformance engine: under a correct verifier its p-values are uniform and no
report fails.  The whole test spends two checks of the run's budget: the Kolmogorov-Smirnov test of
the pooled p-values at one check's level, and the RUNS reports together at another (each report runs
at that level / RUNS, so "no report fails" is one check)."""

import numpy as np
from scipy import stats

import specdec as sd
from specdec.conformance import check_verifier

RUNS = 25  # 200 took 65 s on an AVX2 machine, 100 took 33 s, 50 took 16 s alone and 45 s beside CI's builds (2026-11-29)
TV = 0.1  # small reports, so 25 of them fit in CI time


def test_pvalues_are_uniform_and_no_report_fails(specdec_budget):
    entry = specdec_budget.allot(2, f"calibration: KS of p-values; no report of {RUNS} fails")
    check_alpha = entry.alpha / 2
    pvalues, failed = {}, []
    for seed in range(RUNS):
        report = check_verifier(sd.verify_tokens, tv=TV, seed=seed, family_alpha=check_alpha / RUNS, device="cpu", name=f"seed {seed}")
        if report.verdict == "FAIL":
            failed.append(report.format())
        for check in report.checks:
            if check.kind in ("first token", "chain") and check.cells and check.cells > 1:  # continuous GOF p-values
                pvalues.setdefault(check.name, []).append(check.pvalue)
    pooled = np.concatenate([np.asarray(v) for v in pvalues.values()])
    ks = stats.kstest(pooled, "uniform")
    print(f"\ncalibration: {len(pooled)} p-values from {RUNS} reports, KS D={ks.statistic:.4f}, p={ks.pvalue:.3g}; "
          f"fraction below 0.01: {(pooled < 0.01).mean():.4f}, below 0.05: {(pooled < 0.05).mean():.4f}")
    assert not failed, failed[0]
    assert ks.pvalue > check_alpha, f"p-values are not uniform: KS D={ks.statistic:.4f}, p={ks.pvalue:.3g}, n={len(pooled)}, alpha={check_alpha:.1e}"
