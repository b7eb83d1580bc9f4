"""node-llama-cpp 3.21.1 under truncating samplers: the per-token cells FAILed on 2026-12-08 (TV 0.1 cells of
``scripts.matrix.nodellama_tokens``, judged by the engine's own law, :class:`specdec.adapters.nodellama.NodeLlamaOracle`):
the draft model at top-k (T = 0.7, top_k = 2, top_p = 0.8) after 16 answers with 5 of 512 emitted tokens of probability
0 in the law of node-llama-cpp without a predictor, input lookup at min-p (T = 0.7, top_p = 0.8, min_p = 0.2) after 16
with 4 of 512, each after its control PASSed at 0.1.  The question llama-server's draft model and llama-cpp-python's
prompt lookup raised before (:mod:`scripts.findings.llama_server_draft_truncation_support`,
:mod:`scripts.findings.llama_cpp_lookup_truncation_support`): ``_speculativeEvaluate`` decodes the step's input and the
predicted tokens in one batch and samples every position of it (a coupling, lossless in exact arithmetic) - does the
batch's arithmetic move a located token across the truncation's boundary?

For each located (prompt, answer prefix, token), node-llama-cpp alone (a Node script on its public API, no specdec code
in the engine's path): the prompt in one batch, the prefix one token at a time, and the new position's law under the
cell's own sampling options (``controlledEvaluate`` with ``generateNext.probabilities``) - the oracle's calls; then the
same with the prefix's last m - 1 tokens and a placeholder in one batch of m (m = 2..5; a K = 4 step has up to 5 rows),
the law read at the prefix's last row.  Printed: whether the token is kept (in the law), and its rank and probability
in the untruncated law (T = 1) of the same rows::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.findings.nodellama_truncation_support

Seen on this machine (AVX-512, 2026-12-08, 90 s beside two matrix lanes): every located token sits at a near-tie of its
boundary one token at a time (top-k: rank 3 at 0.53-0.79 of the top token's probability and 0.09-0.16 logits below
rank 2; min-p: 0.175, 0.181 and 0.196 of the top one, where min_p = 0.2 cuts), and batches of 3-5 rows move it (batches
of 2 round as one token does): min-p's token 387 after a 20-token prefix goes from 0.1961 of the top (cut) to 0.2293
(kept) - the mechanism reproduced; top-k's token 28 from 0.79 to 0.92 of the top, min-p's token 284 from 0.175 to 0.189,
nearer the boundary without crossing it (the probe writes only the last rows in a batch; the engine's whole history was
written in its steps' batches).  The acceptance rule is not the cause (the coupling of
:mod:`specdec.adapters.nodellama.nodellama_decoder`): in exact arithmetic these cells would PASS, as llama.cpp's
maintainers call batch-size-dependent logits expected (ggml-org/llama.cpp#23335).  Exits 1 when a verification-shaped
batch keeps a located token that one token at a time cuts (the mechanism reproduced), 0 otherwise.  Needs node and
``make .peers/nodellama/.installed``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.matrix.settings import SETTINGS
from scripts.matrix.token_prompts import token_prompts
from specdec.adapters.nodellama.worker_sampling import sampling_object

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / ".peers" / "nodellama" / "node_modules"
CASES = [  # (setting, prompt index as the report counts, answer prefix, the emitted token of probability 0)
    ("top-k", 0, [504, 12064, 335, 2591, 359, 2952, 411, 260, 2591, 506, 34309, 8591, 1130, 260, 5430, 30], 669),
    ("top-k", 1, [5056, 4445, 367, 2618, 4445, 25782, 303, 23, 1185], 28),
    ("top-k", 2, [504, 8572, 1278, 335, 14801, 288, 2523, 260, 6050, 327, 260, 725, 4971, 28, 990, 253, 986, 4572, 28], 288),
    ("min-p", 1, [7026, 4445, 25782, 2618, 2399, 85, 25782, 303, 23], 2284),
    ("min-p", 1, [7026, 4445, 25782, 2618, 2399, 85, 25782, 303, 23, 2284, 92, 2052, 1264, 303, 16739, 25782, 303, 23, 2284,
                  92], 387),
    ("min-p", 2, [504, 8572, 1278, 335, 14801, 288, 2523, 260, 6050, 327, 260, 725, 4971], 284),
]

SCRIPT = r"""
const lib = await import(process.argv[2]);
const { getLlama, LlamaLogLevel } = lib;
const [modelPath, jobs] = [process.argv[3], JSON.parse(process.argv[4])];
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const context = await model.createContext({ contextSize: 1024, sequences: 1, threads: 1, batchSize: 512, flashAttention: false });
const sequence = context.getSequence();
const out = [];
for (const { prompt, prefix, batch, options, token } of jobs) {
    await sequence.clearHistory();
    const tokens = [...prompt, ...prefix];
    const start = tokens.length - (batch - 1);  // one token at a time up to here, then the rest and a placeholder
    await sequence.controlledEvaluate(tokens.slice(0, prompt.length));  // the prompt in one batch
    let law = null;
    const ask = { generateNext: { probabilities: true, options: { ...options, seed: 0 } } };
    for (let i = prompt.length; i < start; i++) {
        const result = await sequence.controlledEvaluate([batch === 1 && i === start - 1 ? [tokens[i], ask] : tokens[i]]);
        if (batch === 1 && i === start - 1)
            law = result[0].next.probabilities;
    }
    if (batch > 1) {  // the prefix's last row second to last, as a step's row of a kept token is followed by a draft's
        const items = [...tokens.slice(start).map((t, j) => (j === batch - 2 ? [t, ask] : t)), 0];
        const result = await sequence.controlledEvaluate(items);
        law = result[batch - 2].next.probabilities;
    }
    const p = law.get(token) ?? 0;
    const sorted = [...law.entries()].sort((a, b) => b[1] - a[1]);
    out.push({ kept: law.has(token), p, rank: 1 + sorted.filter(([, q]) => q > p).length, top: sorted.slice(0, 3) });
}
await new Promise((resolve) => process.stdout.write(JSON.stringify(out) + "\n", resolve));
process.exit(0);
"""


def run(model: str, jobs: list[dict]) -> list[dict]:
    """Each job's law at the new position, as {kept, p, rank, top}: whether ``token`` is in it, its probability and rank
    there, the three most likely (token, probability) pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "probe.mjs"
        script.write_text(SCRIPT)
        entry = (MODULES / "node-llama-cpp" / "dist" / "index.js").as_uri()
        result = subprocess.run([shutil.which("node") or "node", str(script), entry, model, json.dumps(jobs)],
                                capture_output=True, text=True, timeout=1200, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    from specdec.decoding.models import GGUF_FILE, _gguf_dir

    prompts = token_prompts()
    untruncated = sampling_object(SETTINGS["untruncated"])
    jobs = []
    for setting, index, prefix, token in CASES:
        options = {k: v for k, v in sampling_object(SETTINGS[setting]).items() if k != "repeatPenalty"}
        for batch in range(1, 6):
            for asked in (options, {k: v for k, v in untruncated.items() if k != "repeatPenalty"}):
                jobs.append({"prompt": list(prompts[index]), "prefix": prefix, "batch": batch, "options": asked,
                             "token": token})
    laws = iter(run(str(_gguf_dir() / GGUF_FILE), jobs))
    reproduced = 0
    for setting, index, prefix, token in CASES:
        print(f"{setting}: prompt {index} (len {len(prompts[index])}), answer prefix of {len(prefix)} tokens, emitted {token}:")
        for batch in range(1, 6):
            cell_law, whole = next(laws), next(laws)
            kept = cell_law["kept"]
            top = ", ".join(f"{t}: {p:.4f}" for t, p in whole["top"])
            label = "one token at a time" if batch == 1 else f"last {batch - 1} + 1 in one batch of {batch}"
            print(f"  {label:32s} {'kept' if kept else 'cut '}  untruncated: rank {whole['rank']}, p {whole['p']:.4f}, "
                  f"{whole['p'] / whole['top'][0][1]:.4f} of the top   top 3: {top}")
            if batch == 1:
                alone = kept
            reproduced += not alone and kept
    print("kept: in node-llama-cpp's law under the cell's options (top-k 2 or min-p 0.2 after top-p 0.8 on the "
          "untempered law, then T = 0.7)")
    return 1 if reproduced else 0


if __name__ == "__main__":
    sys.exit(main())
