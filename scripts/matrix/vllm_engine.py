"""vLLM 0.32's in-process engine (``vllm.LLM``) in the matrix: speculation in this process against vLLM's OpenAI
server without it (the same engine core, in its own process), every setting of :mod:`.settings`.  Run in the peers
environment, one method per process (vLLM builds one engine per process)::

    HF_HUB_OFFLINE=1 .venv-peers/bin/python -m scripts.matrix.vllm_engine --method ngram [--n 800] [--only SETTING ...] [--append]

Methods: ``ngram`` (K = 4, with the #55005 workaround), ``draft_model`` (SmolLM2 drafting for itself, K = 2, with
the workaround), ``ngram_shipped`` (as shipped, every setting: B15 where rows are sampled).  The in-process engine
is :class:`specdec.adapters.vllm.offline.VLLMDecoder`, built once and asked with each setting
(:meth:`~specdec.adapters.vllm.offline.VLLMDecoder.with_settings`); it submits a call's rows to ``LLM.generate`` at
once, so they share the engine's batches.  The plain server is pinned to core 0, this process's engine to core 1.
An engine that crashes (B16) ends the run: the later cells are not run and the table shows what was.
"""

from __future__ import annotations

import os

from fixtures import vllm_faults, vllm_subjects
from specdec.adapters.vllm.offline import VLLMDecoder
from specdec.conformance.matrix import run_cell
from specdec.decoding.models import smollm2_dir

from . import runner, vllm_server
from .settings import SETTINGS, check_of, eos_of, length_of, logits_processor_setting

ENGINE = "vLLM 0.32 in process"
# name: (speculative config, #55005 workaround, the method's name in the table)
METHODS = {"ngram": (lambda: vllm_subjects.NGRAM, True, "n-gram K=4 (#55005 workaround)"),
           "draft_model": (vllm_subjects.draft_model_config, True, "draft model K=2 (#55005 workaround)"),
           "ngram_shipped": (lambda: vllm_subjects.NGRAM, False, "n-gram K=4 (as shipped)")}
PROCESSOR = "user logits processor"  # refused by the adapter: V1 has no per-request processors
# The settings each method runs by default (None: all); as shipped, a few: B15 fails every sampled one alike.
ONLY = {"draft_model": ["base", "presence penalty", "frequency penalty", "bad words", "stop token", "allowed token ids", "min-p",
                        "greedy", "one sample per request", "unseeded", "minimum new tokens"],
        "ngram_shipped": ["base", "presence penalty", "bad words", "greedy", "greedy, frequency penalty"]}
SECONDS_PER_CELL = 120


def engine(method: str) -> VLLMDecoder:
    spec, fixed, _ = METHODS[method]
    return VLLMDecoder(smollm2_dir(), settings=SETTINGS["base"], speculative_config=spec(), engine_args=vllm_subjects.ENGINE,
                       setup=[vllm_faults.fix_cpu_expand] if fixed else [], name=f"vLLM in process ({method})")


def one_method(args) -> str:
    """The one ``--method`` of ``args`` (vLLM builds one engine per process), with the in-process engine's environment
    set where the caller did not: core 1, 1 GiB of KV cache, tokenizers without threads."""
    if len(args.method) != 1:
        raise SystemExit("one --method per process: vLLM builds one engine per process")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's default asks for most of the machine's memory
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return args.method[0]


def main(argv=None) -> int:
    names = list(SETTINGS) + [PROCESSOR]
    args = runner.arguments(__doc__, 800, list(METHODS), names, argv)
    method = one_method(args)
    from transformers import AutoTokenizer

    decode = AutoTokenizer.from_pretrained(smollm2_dir()).decode
    all_settings = {**SETTINGS, PROCESSOR: logits_processor_setting()}
    subject = engine(method)
    plain = vllm_server.start("plain")
    try:
        plain.wait_ready()

        def build(settings):
            return (subject.with_settings(settings, name=f"vLLM in process ({method})"),
                    vllm_server.client(plain, settings, decode, "vLLM server (plain)"))

        def cell_of(number, method_name, name, budget):
            chosen = all_settings[name]
            return run_cell(ENGINE, METHODS[method_name][2], name, chosen, build, check_of(chosen), prompts=[vllm_subjects.PROMPT],
                            length=length_of(name), max_new_tokens=length_of(name), n=args.n, tv=None, seed=3000 + number,
                            budget=budget, keep=runner.keeper(ENGINE, method_name, name), eos_token_id=eos_of(chosen),
                            name=f"{ENGINE}, {METHODS[method_name][2]}, {name}")

        plan = [(method, name) for name in (args.only or ONLY.get(method) or names)]
        runner.run(plan, cell_of, file="vllm-engine.json", engine="vLLM", n=args.n, append=args.append, resume=args.resume,
                   seconds_per_cell=SECONDS_PER_CELL, out=args.out, label=lambda m: METHODS[m][2])
    finally:
        plain.stop(keep_log=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
