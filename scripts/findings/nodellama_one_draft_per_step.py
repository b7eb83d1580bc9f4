"""node-llama-cpp 3.21.1: a verification step keeps at most one predicted token; the others are refuted even when right.

``LlamaContextSequence._speculativeEvaluate`` (``dist/evaluator/LlamaContext/LlamaContext.js``) decodes the step's
input and the predicted tokens in one batch, samples the target at every position, then walks the positions: a
prediction is validated when it equals the token sampled at the position before it, read as ``nextToken`` for the
first prediction and as ``validatedTokens.at(-1)?.[1]`` for the others.  ``validatedTokens`` is a ``const []`` that
nothing ever pushes to (validated predictions go to ``this._loadedTokenPredictions``), so from the second prediction
on the comparison is with ``undefined``: the prediction is counted "refuted" and the rest of the batch is erased from
the context.  Each target pass therefore emits at most two tokens (one kept prediction and the token after it),
whatever the predictor's quality - lossless (the kept tokens are the target's own draws), but it caps the speed-up.

The reproducer: greedy decoding (T = 0) of a chat prompt with ``DraftSequenceTokenPredictor`` whose draft is the target
itself (the same GGUF; ``minTokens`` = ``maxTokens`` = 4, ``minConfidence`` 0), so every prediction should be the
target's own choice.  It logs each step's predictions and compares them with the answer: predictions equal to the
answer's token at their position but refuted are the bug.  Seen on this machine (2026-11-27): 48 tokens, 15 predictions
validated (never more than one in a step), 21 predictions equal to the answer's token refuted, in the 11 steps that were
offered two or more right ones.  (Some steps also get predictions for the wrong positions - the draft runs in the
background and its list can lag the answer - which costs speed only: the target's draws decide.)  Run::

    .venv-llama/bin/python -m scripts.findings.nodellama_one_draft_per_step

It exits 1 when no step kept more than one prediction although some step offered two or more that equal the answer
(the bug is present), 0 otherwise.  Needs node and ``make .peers/nodellama/.installed``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / ".peers" / "nodellama" / "node_modules"
TOKENS = 48

SCRIPT = r"""
const lib = await import(process.argv[2]);
const { getLlama, LlamaLogLevel, DraftSequenceTokenPredictor, getModuleVersion } = lib;
const [modelPath, count] = [process.argv[3], Number(process.argv[4])];
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 512, threads: 1 });
const draftContext = await model.createContext({ contextSize: 512, threads: 1 });
const predictor = new DraftSequenceTokenPredictor(draftContext.getSequence(), { minTokens: 4, maxTokens: 4, minConfidence: 0 });
const out = [];
const steps = [];  // [answer length when the target asked, the predictions it got, validated count before the step]
const predictTokens = predictor.predictTokens.bind(predictor);
const sequence = context.getSequence({ tokenPredictor: predictor });
predictor.predictTokens = async () => {
    const predicted = [...await predictTokens()];
    steps.push([out.length, predicted, sequence.tokenPredictions.validated]);
    return predicted;
};
const prompt = model.tokenize("<|im_start|>user\nWrite a short story about a cat and a dog.<|im_end|>\n<|im_start|>assistant\n", true);
for await (const token of sequence.evaluate(prompt, { temperature: 0, seed: 1, yieldEogToken: true })) {
    out.push(token);
    if (out.length >= count) break;
}
steps.push([out.length, [], sequence.tokenPredictions.validated]);
console.log(JSON.stringify({ version: await getModuleVersion(), out, steps, predictions: sequence.tokenPredictions }));
process.exit(0);
"""


def main() -> int:
    from specdec.decoding.models import GGUF_FILE, _gguf_dir

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "repro.mjs"
        script.write_text(SCRIPT)
        entry = (MODULES / "node-llama-cpp" / "dist" / "index.js").as_uri()
        run = subprocess.run([shutil.which("node") or "node", str(script), entry, str(_gguf_dir() / GGUF_FILE), str(TOKENS)],
                             capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    out, steps = result["out"], result["steps"]
    most_kept, right_but_refuted, offered_two_right = 0, 0, 0
    for (start, predicted, validated_before), (_, _, validated_after) in zip(steps, steps[1:]):
        right = next((j for j, t in enumerate(predicted) if start + j >= len(out) or out[start + j] != t), len(predicted))
        kept = validated_after - validated_before
        most_kept = max(most_kept, kept)
        right_but_refuted += max(right - kept, 0)
        offered_two_right += right >= 2
        print(f"answer length {start:3d}: predicted {predicted}, {right} equal to the answer, {kept} validated")
    print(f"node-llama-cpp {result['version']}: {len(out)} tokens, tokenPredictions {result['predictions']}; "
          f"{offered_two_right} steps offered two or more right predictions; {right_but_refuted} right predictions were "
          f"refuted; the most validated in one step: {most_kept}")
    bug = most_kept <= 1 and offered_two_right > 0
    print("BUG: at most one prediction is kept per step" if bug else "no bug seen: a step kept two or more predictions")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
