"""openvino-genai 2026.4.1.0: a draft model at T > 0 changes the output law, even when the draft is the target itself.

``Sampler::validate_candidate`` (``src/cpp/src/sampling/sampler.cpp``; read at commit da1db86, after tag 2026.3.0.0)
draws a token y from the target at a drafted position and keeps the draft x iff ``r <= q(x) / p(y)``: q(x) the draft's
probability of x, p(y) the target's probability of the *fresh draw y* (not of x), r one of 101 values 0, 0.01, ..., 1.
Speculative sampling (Leviathan et al.; docs/reference.md F1) keeps x with probability min(1, p(x) / q(x)) and on a
rejection draws from the residual (p - q)+.  Here a rejection is handled one iteration late: the loop ``continue``s to
the next row of logits (the target's law *after* the rejected x), draws there, and ``get_p_prime`` cuts the sequence
back and appends that draw in x's place (openvino.genai issue #4190 reports this part).  With the draft equal to the
target, F1 keeps every draft; OpenVINO rejects some, and replaces them with tokens from the wrong position.

Run (about 30 s for part 1, 2-3 minutes for part 2 on 2 busy cores)::

    HF_HUB_OFFLINE=1 .venv-openvino/bin/python -m scripts.findings.openvino_draft_model_sampling [--ab]

1. draft = target (the IR copy of SmolLM2-135M-Instruct's Q4_1 GGUF), T = 1, the " cat"/" dog" prompt, 64 requests
   of 8 tokens, K = 4: OpenVINO's own counters report rejected drafts (F1: none).  Exits 1 when some are rejected.
2. ``--ab``: the law of the first three tokens at T = 0.7, top-p 0.8, with and without the draft (``specdec.check_ab``,
   n = 400 a side): FAIL, located at the third token after the prefix " cat dog" ([2644, 2767]; measured p = 2.8e-7,
   the smallest n tried that fails at family-wise alpha 1e-6), where the draft's run emits "." and "," more often than the
   engine without a draft.
"""

from __future__ import annotations

import sys

PROMPT = [9786, 2767, 2767, 2644, 2767, 2644, 2644, 2767, 2644, 2767, 2767, 2767, 2644, 2644, 2767, 2644, 2767, 2644]


def rejected_with_draft_equal_to_target(requests: int = 64, new_tokens: int = 8) -> tuple[int, int]:
    """(accepted, rejected) drafted tokens, by OpenVINO's counters, with the draft = the target at T = 1."""
    import numpy as np
    import openvino
    import openvino_genai

    from fixtures import openvino_subjects as ovs

    scheduler = openvino_genai.SchedulerConfig()
    scheduler.cache_size = 1
    draft = openvino_genai.draft_model(ovs.draft_dir(), "CPU", INFERENCE_NUM_THREADS=1)
    pipe = openvino_genai.ContinuousBatchingPipeline(ovs.gguf_path(), scheduler, "CPU",
                                                      {"INFERENCE_NUM_THREADS": 1, "draft_model": draft})
    configs = []
    for seed in range(requests):
        config = openvino_genai.GenerationConfig()
        config.max_new_tokens, config.ignore_eos, config.do_sample = new_tokens, True, True
        config.temperature, config.top_p, config.rng_seed, config.num_assistant_tokens = 1.0, 1.0, seed, 4
        configs.append(config)
    results = pipe.generate([openvino.Tensor(np.asarray([PROMPT], dtype=np.int64)) for _ in configs], configs)
    metrics = results[0].extended_perf_metrics  # one per generate call
    return int(metrics.get_num_accepted_tokens()), int(metrics.get_num_rejected_tokens())


def law_check():
    import specdec
    from fixtures import openvino_subjects as ovs

    plain, subject = ovs.engine(None, ovs.T07_TOP_P), ovs.engine("draft_model", ovs.T07_TOP_P)
    return specdec.check_ab(subject, plain, [PROMPT], length=3, max_new_tokens=3, n=400, tv=None, seed=5, rows_per_call=64,
                            family_alpha=1e-6, name="openvino-genai draft model (= target) K=4 vs none, T=0.7 top-p 0.8")


def main(argv) -> int:
    import openvino_genai

    print(f"openvino-genai {openvino_genai.__version__}")
    accepted, rejected = rejected_with_draft_equal_to_target()
    print(f"draft = target, T = 1: {accepted} drafted tokens accepted, {rejected} rejected (speculative sampling: 0 rejected)")
    bug = rejected > 0
    if "--ab" in argv:
        report = law_check()
        print(report.format())
        bug |= report.verdict == "FAIL"
    print("BUG: the draft model changes the output law" if bug else "no difference")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
