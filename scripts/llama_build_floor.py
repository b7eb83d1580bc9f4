"""How far another build of llama.cpp moves :class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle`'s laws, and
how much faster it evaluates an answer in one batch: the measurement behind the oracle docstring's paragraph on a
build without llamafile's kernels.

The default build (llama-cpp-python 0.3.36 in ``.venv-llama``) evaluating one token at a time is the reference (how
the engine decodes without a draft).  On the matrix's prompts (:mod:`scripts.matrix.token_prompts`) and answers the
reference itself draws (seeded, at ``--temperature``), each of (default build, other build) x (one token at a time,
the answer in one batch) gives every position's raw logits, in a process of its own (llama-cpp-python loads its
library once, from ``LLAMA_CPP_LIB_PATH`` when set); printed: the largest logit difference, rows bitwise equal, the
mean and largest TV of the tempered laws, and milliseconds a position.  Build the other library first, e.g. without
llamafile's sgemm kernels (about 20 minutes on 2 cores)::

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_LLAMAFILE=OFF" \\
        .venv-llama/bin/python -m pip install --no-deps --no-cache-dir --target /tmp/oraclelib llama-cpp-python==0.3.36
    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.llama_build_floor --lib /tmp/oraclelib/llama_cpp/lib

Measured 2026-11-28 (16 answers of 32 tokens, T = 0.7; two matrix servers on the same 2 cores): see the oracle
docstring.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LENGTH = 32  # tokens per answer, as the matrix's


def _oracle(batch: bool):
    from fixtures import llama_subjects
    from specdec.adapters.llama_cpp.oracle import LlamaCppOracle

    return LlamaCppOracle(llama_subjects.gguf_path(), n_ctx=512, batch=batch)


def _tempered(logits: np.ndarray, temperature: float) -> np.ndarray:
    x = logits.astype(np.float64) / temperature
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _sample(out: Path, per_prompt: int, temperature: float, seed: int) -> None:
    """Answers the default build draws one token at a time, ``per_prompt`` to each matrix prompt, to ``out`` (JSON)."""
    from scripts.matrix.token_prompts import token_prompts

    oracle, rng, answers = _oracle(False), np.random.default_rng(seed), []
    for i, prompt in enumerate(token_prompts()):
        for _ in range(per_prompt):
            answer: list[int] = []
            for _ in range(LENGTH):
                law = _tempered(oracle.logits(prompt, [*answer, 0])[-1], temperature)
                answer.append(int(rng.choice(law.size, p=law)))
            answers.append([i, answer])
    out.write_text(json.dumps(answers))


def _rows(answers_file: Path, out: Path, batch: bool) -> None:
    """Every position's logits of the answers in ``answers_file``, to ``out`` (npz), and the seconds it took."""
    import llama_cpp

    from scripts.matrix.token_prompts import token_prompts

    prompts, answers = token_prompts(), json.loads(answers_file.read_text())
    oracle = _oracle(batch)
    for prompt in prompts:
        oracle.logits(prompt, [0])  # the prompts evaluated before the clock starts
    start, rows = time.perf_counter(), {}
    for k, (i, answer) in enumerate(answers):
        oracle.logits(prompts[i], [0])  # no prefix shared with the previous answer: every position evaluated
        rows[f"a{k}"] = oracle.logits(prompts[i], answer)
    seconds = time.perf_counter() - start
    info = llama_cpp.llama_print_system_info().decode()
    np.savez(out, seconds=seconds, llamafile="LLAMAFILE = 1" in info, **rows)


def _worker(mode: str, lib: str | None, *args: str) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if lib:
        env["LLAMA_CPP_LIB_PATH"] = lib
    subprocess.run([sys.executable, "-m", "scripts.llama_build_floor", "--worker", mode, *args], env=env, check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", help="the other build's library folder (LLAMA_CPP_LIB_PATH)")
    parser.add_argument("--answers", type=int, default=4, help="answers a prompt (default 4)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        mode, *rest = args.worker
        if mode == "sample":
            _sample(Path(rest[0]), args.answers, args.temperature, args.seed)
        else:
            _rows(Path(rest[0]), Path(rest[1]), mode == "batch")
        return 0
    if not args.lib:
        parser.error("--lib is required")
    print(f"plan: {args.answers} answers of {LENGTH} tokens to each matrix prompt, drawn by the default build at T = "
          f"{args.temperature:g}; then 4 evaluations of them (about a minute)", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        _worker("sample", None, str(tmp / "answers.json"), "--answers", str(args.answers),
                "--temperature", str(args.temperature), "--seed", str(args.seed))
        runs = {}
        for build, lib in (("default", None), ("other", args.lib)):
            for mode in ("single", "batch"):
                _worker(mode, lib, str(tmp / "answers.json"), str(tmp / f"{build}-{mode}.npz"))
                runs[build, mode] = dict(np.load(tmp / f"{build}-{mode}.npz"))
        reference = runs["default", "single"]
        keys = [k for k in reference if k.startswith("a")]
        positions = sum(len(reference[k]) for k in keys)
        for (build, mode), run in runs.items():
            tvs = np.concatenate([0.5 * np.abs(_tempered(reference[k], args.temperature)
                                               - _tempered(run[k], args.temperature)).sum(-1) for k in keys])
            equal = sum(int((reference[k] == run[k]).all(-1).sum()) for k in keys)
            logit = max(float(np.abs(reference[k] - run[k]).max()) for k in keys)
            print(f"{build} build (llamafile {'on' if run['llamafile'] else 'off'}), {mode}: largest logit difference "
                  f"{logit:.3g}, rows bitwise equal {equal}/{positions}, TV mean {tvs.mean():.4f} largest {tvs.max():.4f}, "
                  f"{1000 * float(run['seconds']) / positions:.2f} ms a position")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
