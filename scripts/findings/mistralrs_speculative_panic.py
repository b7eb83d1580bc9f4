"""mistral.rs 0.6.0: a speculative Runner panics when a Runner without a draft answers between its requests.

Seen in ``specdec bench run specdec.adapters.mistralrs.bench_mistralrs:draft_model --kinds qa`` (twice), whose calls
alternate between the twin (no draft) and the speculative Runner, one request at a time, each waited for.  With this
order of requests on the qa prompt (greedy, SmolLM2-135M-Instruct Q4_1 as target and draft, gamma 4, CPU):

    twin 2 tokens, speculative 2, twin 24, twin 1, speculative 1, speculative 24

the last request panics in the engine thread at ``mistralrs-core/src/pipeline/speculative.rs:360``, ``assertion
left == right failed, left: 3, right: 1`` - in the index's copy of that file (commit 0006289, not the tag) the
assertion ``assert_eq!(input_seqs.len(), 1)`` of ``SpeculativePipeline::step``: the scheduler handed the speculative
step 3 sequences, while the client had one request in flight (3 is the number of requests that Runner had
received).  The Python call then panics too (``mistralrs-pyo3/src/lib.rs:1208``, ``Option::unwrap()`` on None), which the
adapter raises as a RuntimeError.  The speculative Runner's three requests alone (2, 1, 24 tokens) did not panic, nor
did 2, 24, 1, 24 after the twin had answered four requests.  Related, on one speculative Runner alone: the time of
identical 8-token requests grew with the requests served (18.5, 14.0, 18.6, 23.2, 27.3, 28.7, 30.5, 31.3 s; the Runner
without a draft 1.5-1.8 s each), as if finished sequences stayed in the engine; not shown.

Run::

    HF_HUB_OFFLINE=1 .venv-mistralrs/bin/python -m scripts.findings.mistralrs_speculative_panic

It prints each request's length and time and exits 1 when a request panics (the bug is present), 0 otherwise.  About
1.5 minutes on a 2-core machine.  Not found on the tracker (searched: speculative slower with each request, cache grows
between requests).
"""

from __future__ import annotations

import sys
import time

ORDER = ("t2", "s2", "t24", "t1", "s1", "s24")  # side (t: twin, s: speculative) and max_tokens, in order


def main() -> int:
    from transformers import AutoTokenizer

    from specdec.adapters.mistralrs.bench_mistralrs import draft_model
    from specdec.decoding.models import smollm2_dir
    from specdec.workload.prompts import prompt_ids

    prompt = prompt_ids(AutoTokenizer.from_pretrained(smollm2_dir()), "qa", 1)
    decoders = {"t": draft_model(0), "s": draft_model(4)}  # both kept alive (0.6.0: a Runner built after a drop dies)
    for step in ORDER:
        started = time.perf_counter()
        try:
            out = decoders[step[0]](prompt, int(step[1:]), 0)
        except RuntimeError as error:
            print(f"{step}: {error} -> the bug is present")
            return 1
        print(f"{step}: {len(out[0])} tokens, {time.perf_counter() - started:.1f} s")
    print("no request panicked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
