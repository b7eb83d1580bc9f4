"""Does the plain llama-server's batch of slots put tokens outside the oracle's support?  The question of the top-k
control's FAIL (docs/matrix.md, llama-server per token): at top-k 2 (T = 0.7, top-p 0.8) the plain server with 4 slots
drew 29 of 8,192 tokens at positions 17-32 that :class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle` (one-token
calls, as llama.cpp decodes one sequence) gives probability 0.

The same plain server, the same setting, prompts (:mod:`.token_prompts`) and flash attention off, run twice side by
side: with 4 slots (4 completions a request, 4 requests in flight: the matrix's batch) and with 1 slot (one request at a
time: every decode a single token, the oracle's calls).  Per position band, the tokens the oracle gives probability 0.
If they vanish with one slot, the control's FAIL is the floor's (batch-shape rounding), not the engine's sampler::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.matrix.llama_server_slots [--answers 64] [--setting top-k]

Writes ``.peers/matrix/llama-server-slots.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

from fixtures import llama_subjects
from specdec.adapters.llama_cpp.llama_server import LlamaServerDecoder
from specdec.adapters.llama_cpp.oracle import LlamaCppOracle
from specdec.conformance.reported_logprobs import _oracle_logprob

from . import runner
from .llama_server import start
from .llama_server_tokens import FLASH_ATTENTION, N_CTX
from .settings import SETTINGS
from .token_prompts import LENGTH, token_prompts

BANDS = [(0, 1), (1, 2), (2, 4), (4, 8), (8, 16), (16, 32)]  # positions 1, 2, 3-4, 5-8, 9-16, 17-32 (the check's strata)


def outside_support(oracle, prompts, answers) -> list[int]:
    """Per band of :data:`BANDS`, the answers' tokens the oracle gives probability 0."""
    counts = [0] * len(BANDS)
    for answer, laws in zip(answers, oracle.token_laws(prompts, answers)):
        for t, (token, law) in enumerate(zip(answer, laws)):
            if _oracle_logprob(law, int(token)) == -math.inf:  # probability 0: outside the law's support
                counts[next(b for b, (lo, hi) in enumerate(BANDS) if lo <= t < hi)] += 1
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=64, help="answers per prompt and server (default 64)")
    parser.add_argument("--setting", default="top-k", choices=sorted(SETTINGS), help="the matrix setting (default top-k)")
    args = parser.parse_args(argv)
    if args.answers < 1:
        raise SystemExit(f"--answers must be >= 1, got {args.answers}")
    settings = SETTINGS[args.setting]
    prompts = [list(p) for p in token_prompts()]
    rows = [p for _ in range(args.answers) for p in prompts]
    print(f"{len(rows)} answers of {LENGTH} tokens from the plain server with 4 slots, then with 1 (about "
          f"{len(rows) * LENGTH / 90 + len(rows) * LENGTH / 23:.0f} s), then the oracle on both (about {2 * len(rows) * LENGTH / 55:.0f} s)",
          flush=True)
    result = {"setting": args.setting, "answers_per_prompt": args.answers, "bands": [f"{lo + 1}-{hi}" for lo, hi in BANDS]}
    answers = {}
    for slots, in_flight in ((4, 4), (1, 1)):
        server = start(None, FLASH_ATTENTION + ("-np", str(slots)))
        try:
            server.wait_ready()
            decoder = LlamaServerDecoder(server.base_url, settings=settings, samples_per_request=in_flight, max_in_flight=in_flight,
                                         request_timeout=600, name=f"llama-server, {slots} slot(s)")
            started = time.perf_counter()
            answers[slots] = [[int(t) for t in a] for a in decoder(rows, LENGTH, 8800)]
            result[f"seconds_{slots}"] = time.perf_counter() - started
        finally:
            server.stop(keep_log=True)
    oracle = LlamaCppOracle(llama_subjects.gguf_path(), settings=settings, n_ctx=N_CTX, prompt_accepted=True, eog_banned=True)
    try:
        for slots, got in answers.items():
            counts = outside_support(oracle, rows, got)
            result[f"outside_{slots}"] = counts
            result[f"tokens_{slots}"] = sum(map(len, got))
            print(f"{slots} slot(s): {result[f'tokens_{slots}']:,} tokens, outside the oracle's support by band "
                  f"{dict(zip(result['bands'], counts))} ({result[f'seconds_{slots}']:.0f} s)", flush=True)
    finally:
        oracle.close()
    runner.OUT.mkdir(parents=True, exist_ok=True)
    (runner.OUT / "llama-server-slots.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
