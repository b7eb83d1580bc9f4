"""Calibration of the conformance engine (issue 4): under a correct verifier its p-values are
uniform (Kolmogorov-Smirnov over 200 seeded reports) and no report fails."""

import numpy as np
from scipy import stats

import specdec as sd
from specdec.conformance import check_verifier

RUNS = 200
TV = 0.1  # per-check planned deviation: small reports, so 200 of them fit in CI time
KS_ALPHA = 5e-9  # the per-check alpha of the suite's family (1e-6 over 200 checks)


def test_pvalues_are_uniform_and_no_report_fails():
    pvalues, failed = {}, []
    for seed in range(RUNS):
        report = check_verifier(sd.verify_tokens, tv=TV, seed=seed, name=f"seed {seed}")
        if not report.passed:
            failed.append(report.format())
        for check in report.checks:
            if check.detectable_tv is not None:  # goodness-of-fit checks (the acceptance test is discrete)
                pvalues.setdefault(check.name, []).append(check.pvalue)
    assert not failed, failed[0]
    pooled = np.concatenate([np.asarray(v) for v in pvalues.values()])
    ks = stats.kstest(pooled, "uniform")
    print(f"\ncalibration: {len(pooled)} p-values from {RUNS} reports, KS D={ks.statistic:.4f}, p={ks.pvalue:.3g}; "
          f"fraction below 0.01: {(pooled < 0.01).mean():.4f}, below 0.05: {(pooled < 0.05).mean():.4f}")
    assert ks.pvalue > KS_ALPHA, f"p-values are not uniform: KS D={ks.statistic:.4f}, p={ks.pvalue:.3g}, n={len(pooled)}"
    for name, values in pvalues.items():
        per_check = stats.kstest(values, "uniform")
        assert per_check.pvalue > KS_ALPHA, f"{name}: KS D={per_check.statistic:.4f}, p={per_check.pvalue:.3g}"
