"""llama.cpp's ``llama-speculative`` example (commit 0c1e570, as vendored in llama-cpp-python 0.3.36), CPU: tree drafts
(``-np 2``) abort at temperature > 0 as soon as a draft branch splits.

``main`` (examples/speculative/speculative.cpp) splits a branch when the draft's next candidate holds more than
``--spec-draft-p-split`` (default 0.1) and then evaluates the target on one batch whose tokens belong to both
sequences.  With the default KV cache (``kv_unified`` off) ``llama_decode`` refuses that batch ("split_equal:
sequential split is not supported when there are coupled sequences in the input batch (you may need to use the -kvu
flag)", then "decode: failed to find a memory slot"); the example ignores the failure and the next
``common_sampler_sample`` aborts on ``GGML_ASSERT(logits != nullptr)`` (common/sampling.cpp).  ``-kvu`` is not among
this example's options (common/arg.cpp: ``--kv-unified`` is set for the server, perplexity, batched, bench and
parallel examples), and ``LLAMA_ARG_KV_UNIFIED=1`` does not reach it either.  At T = 0 no branch splits (the draft's
law is a point mass) and the run completes.

Run (the binary of ``make llama-speculative``; a few seconds)::

    .venv-llama/bin/python -m scripts.findings.llama_speculative_tree_abort

It runs ``-np 2 --spec-draft-n-max 4 --temp 1`` (draft = target = SmolLM2-135M-Instruct Q4_1) and the same at
``--temp 0``, prints each exit status and the decode error, and exits 1 when the T = 1 run aborts (the bug).
"""

from __future__ import annotations

import subprocess
import sys

PROMPT_TEXT = "cat dog dog cat dog cat cat dog cat dog dog dog cat cat dog cat dog cat"


def run(temperature: float, seed: int = 1) -> tuple[int, str]:
    from fixtures.llama_subjects import gguf_path
    from specdec.adapters.llama_cpp.speculative_example import DEFAULT_BINARY

    model = gguf_path()
    argv = [str(DEFAULT_BINARY), "-m", model, "-md", model, "-p", PROMPT_TEXT, "-n", "16", "-s", str(seed), "-np", "2",
            "--spec-draft-n-max", "4", "--temp", str(temperature), "--top-k", "0", "--top-p", "1", "--min-p", "0", "-t", "1",
            "-c", "512"]
    done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=300)
    error = next((line for line in done.stderr.splitlines() if "split_equal" in line or "GGML_ASSERT" in line), "")
    return done.returncode, error


def main() -> int:
    aborted = False
    for temperature in (1.0, 0.0):
        code, error = run(temperature)
        print(f"-np 2 --temp {temperature:g}: exit status {code}" + (f"; {error.strip()}" if error else ""))
        aborted |= temperature > 0 and code != 0
    print("BUG: tree drafts abort at T > 0" if aborted else "no abort")
    return 1 if aborted else 0


if __name__ == "__main__":
    sys.exit(main())
