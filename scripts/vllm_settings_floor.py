"""The floor of :class:`specdec.adapters.vllm.settings_oracle.VLLMSettingsOracle`: vLLM's own raw rows against the float32
rows the oracle computes with transformers, on the positions of answers vLLM sampled (issue 38).

Starts vLLM 0.32's OpenAI server without speculation on the float32 SmolLM2 copy (``vllm_server_argv``, plus
``--max-logprobs -1``), samples answers at temperature 1 on three prompts (the cat/dog prompt, the copy task and a
chat-templated question), asks the whole raw row of every answer position (``prompt_logprobs: -1`` on prompt + answer,
~49k entries per position), and compares each with ``log_softmax`` of the oracle model's float32 logits at the same
prefix (:meth:`VLLMSettingsOracle.raw_logits`: the prompt's forward, then the answer's over its cache): the largest absolute log-probability difference (over every token) and the TV of the two laws, per position.
Runs in ``.venv-peers``::

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv-peers/bin/python scripts/vllm_settings_floor.py --answers 3 --length 32

Prints one JSON line (also written to ``.peers/vllm-settings-floor.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2"


def _post(base_url: str, body: dict) -> dict:
    request = urllib.request.Request(base_url + "/v1/completions", data=json.dumps({"model": MODEL, **body}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=900) as answer:
        return json.loads(answer.read())


def prompts() -> dict:
    from fixtures import vllm_subjects
    from fixtures.models import COPY_INSTRUCTION, COPY_PASSAGE, smollm2_chat_prompt
    from specdec.decoding.models import load_smollm2

    _, tokenizer = load_smollm2()
    return {"cat/dog": list(vllm_subjects.PROMPT),
            "copy": tokenizer.encode(COPY_INSTRUCTION + COPY_PASSAGE, add_special_tokens=False),
            "chat": smollm2_chat_prompt("Name three rivers in Europe and say which sea each one flows into.")}


def measure(base_url: str, answers: int, length: int, seed: int = 700) -> dict:
    from specdec.adapters.vllm.settings_oracle import VLLMSettingsOracle
    from specdec.decoding.models import load_smollm2

    oracle = VLLMSettingsOracle(load_smollm2()[0])
    worst, tvs, positions = 0.0, [], 0
    started = time.perf_counter()
    for name, prompt in prompts().items():
        sampled = _post(base_url, {"prompt": prompt, "max_tokens": length, "n": answers, "seed": seed, "temperature": 1.0,
                                   "ignore_eos": True, "return_token_ids": True})
        for choice in sampled["choices"]:
            answer = choice["token_ids"]
            ids = prompt + answer
            rows = _post(base_url, {"prompt": ids, "max_tokens": 1, "prompt_logprobs": -1})["choices"][0]["prompt_logprobs"]
            logits = oracle.raw_logits(prompt, torch.tensor([answer]))[0]  # the oracle's own rows
            ours = torch.log_softmax(logits, dim=-1).double().numpy()  # (len(answer), V)
            for t, row in enumerate(rows[len(prompt):]):
                theirs = np.full(ours.shape[1], -np.inf)
                for token, entry in row.items():
                    theirs[int(token)] = float(entry["logprob"])
                if not np.isfinite(theirs).all():
                    raise SystemExit(f"{name}: position {t} has {int((~np.isfinite(theirs)).sum())} tokens without a log-probability")
                worst = max(worst, float(np.max(np.abs(theirs - ours[t]))))
                tvs.append(0.5 * float(np.abs(np.exp(theirs) - np.exp(ours[t])).sum()))
                positions += 1
    return {"positions": positions, "max_abs_logprob_diff": worst, "mean_tv": float(np.mean(tvs)), "max_tv": float(np.max(tvs)),
            "seconds": time.perf_counter() - started, "answers_per_prompt": answers, "length": length}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=3, help="answers per prompt. Default: %(default)r")
    parser.add_argument("--length", type=int, default=32, help="tokens per answer. Default: %(default)r")
    args = parser.parse_args(argv)
    from specdec.adapters.openai.process import ServerProcess, free_port
    from specdec.adapters.vllm.server import server_env, vllm_server_argv
    from specdec.decoding.models import smollm2_dir

    port = free_port()
    argv = vllm_server_argv(smollm2_dir(), port, python=sys.executable, served_model_name=MODEL, max_model_len=512,
                            extra=["--max-logprobs", "-1"])
    (ROOT / ".peers").mkdir(exist_ok=True)
    server = ServerProcess(argv, port=port, env={**server_env(1), "PYTHONPATH": str(ROOT)}, startup_timeout=600,
                           log_path=ROOT / ".peers" / "vllm-settings-floor.log")
    try:
        server.start()
        server.wait_ready()
        figures = measure(server.base_url, args.answers, args.length)
    finally:
        server.stop(keep_log=True)
    import vllm
    import transformers

    figures.update(vllm=vllm.__version__, transformers=transformers.__version__, torch=torch.__version__)
    (ROOT / ".peers" / "vllm-settings-floor.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
