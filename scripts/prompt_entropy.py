"""Compute the answer entropy of every prompt of the benchmark set (:mod:`specdec.workload.entropy`) with SmolLM2 and
write ``specdec/workload/entropy_data.py``::

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.prompt_entropy [--new-tokens 24]

About 2 minutes on 2 cores (66 prompts, one greedy answer each).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "specdec" / "workload" / "entropy_data.py"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: every CPU this process may use)")
    args = parser.parse_args(argv)
    from specdec.bench.clock import pin_threads

    pin_threads(args.threads)
    from fixtures.models import smollm2
    from specdec.bench.environment import git_commit
    from specdec.workload.entropy import bucket_of, answer_entropy
    from specdec.workload.prompts import KINDS, PROMPTS, prompt_ids

    model, tokenizer = smollm2()
    total = sum(len(PROMPTS[k]) for k in KINDS)
    print(f"answer entropy of {total} prompts, {args.new_tokens} greedy tokens each: about 2 minutes", flush=True)
    values: dict[str, list[float]] = {}
    started = time.perf_counter()
    for kind in KINDS:
        values[kind] = [round(answer_entropy(model, p, args.new_tokens)["mean"], 4) for p in prompt_ids(tokenizer, kind, len(PROMPTS[kind]))]
        print(f"{kind:14s} " + " ".join(f"{v:.2f}({bucket_of(v)[0]})" for v in values[kind]), flush=True)
    lines = [f'"""Answer entropies of the prompt set (nats, mean over the greedy answer of {args.new_tokens} tokens; :mod:`.entropy`), '
             f"computed with SmolLM2-135M-Instruct (float32) at commit {git_commit(str(ROOT))[:12]} by ``python -m scripts.prompt_entropy``.\"\"\"",
             "", "ENTROPY: dict[str, list[float]] = {"]
    lines += [f"    {kind!r}: {values[kind]!r}," for kind in KINDS] + ["}", ""]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
