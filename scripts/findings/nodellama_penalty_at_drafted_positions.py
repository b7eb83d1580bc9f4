"""node-llama-cpp 3.21.1: with a token predictor, a repetition penalty is not applied to the kept drafts of a step.

``LlamaContextSequence._speculativeEvaluate`` (``dist/evaluator/LlamaContext/LlamaContext.js``) decodes a step's input
and the predicted tokens in one batch and samples the target at every position; each position's sampler config is
resolved by ``_resolveSamplerConfig``, which reads ``repeatPenalty.punishTokens()`` - the caller's history.  Every
caller builds that history from the tokens *yielded* so far (``LlamaCompletion``'s and ``LlamaChat``'s
``getPenaltyTokens`` read ``res``), and no token of the batch has been yielded when its positions are sampled.  So at
a drafted position the history lacks the step's earlier tokens; ``AddonSampler::ApplyConfig``
(``llama/addon/AddonSampler.cpp``) sees a list that is not its own history (which had the sampled tokens accepted) and
rebuilds the penalty sampler from the stale list.  A token drawn after a kept draft is therefore not penalised for it:
the law with a predictor differs from the law without one whenever a penalty is set.

The reproducer uses node-llama-cpp's own ``LlamaCompletion`` (no specdec code in the engine's path): the prompt
"cat dog dog cat ..." (every bigram repeats, so ``InputLookupTokenPredictor`` drafts at every step), T = 0.7, top-p 0.8,
``repeatPenalty`` 1.5 over the answer (``penalizeNewLine``), two new tokens, 200 seeded requests each way.  Without
the predictor the second token never repeats the first (the penalty); with it, it does whenever the first token was a
kept draft.  Seen on this machine (2026-11-27): 0 of 200 without, 36 of 200 with (and 23-33 of 200 through specdec's worker).  Run::

    .venv-llama/bin/python -m scripts.findings.nodellama_penalty_at_drafted_positions

It exits 1 when the answers repeat their first token with the predictor at least 10 times more often than without
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
ROWS = 200

SCRIPT = r"""
const lib = await import(process.argv[2]);
const { getLlama, LlamaLogLevel, LlamaCompletion, InputLookupTokenPredictor, getModuleVersion } = lib;
const [modelPath, rows, withPredictor] = [process.argv[3], Number(process.argv[4]), process.argv[5] === "1"];
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 256, threads: 1 });
const sequence = context.getSequence(withPredictor ? { tokenPredictor: new InputLookupTokenPredictor() } : {});
const completion = new LlamaCompletion({ contextSequence: sequence });
const prompt = "cat dog dog cat dog cat cat dog cat dog dog dog cat cat dog cat dog cat";
const answers = [];
for (let seed = 1; seed <= rows; seed++) {
    await sequence.clearHistory();
    const tokens = [];
    await completion.generateCompletion(prompt, { maxTokens: 2, temperature: 0.7, topP: 0.8, topK: 0, seed,
        repeatPenalty: { penalty: 1.5, lastTokens: 64, penalizeNewLine: true }, onToken: (t) => tokens.push(...t) });
    answers.push(tokens);
}
console.log(JSON.stringify({ version: await getModuleVersion(), answers, predictions: sequence.tokenPredictions }));
process.exit(0);
"""


def run(model: str, with_predictor: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "repro.mjs"
        script.write_text(SCRIPT)
        entry = (MODULES / "node-llama-cpp" / "dist" / "index.js").as_uri()
        out = subprocess.run([shutil.which("node") or "node", str(script), entry, model, str(ROWS), "1" if with_predictor else "0"],
                             capture_output=True, text=True, timeout=1200, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    from specdec.decoding.models import GGUF_FILE, _gguf_dir

    model = str(_gguf_dir() / GGUF_FILE)
    repeats = {}
    for with_predictor in (False, True):
        result = run(model, with_predictor)
        answers = [a for a in result["answers"] if len(a) == 2]
        repeats[with_predictor] = sum(a[0] == a[1] for a in answers)
        label = "InputLookupTokenPredictor" if with_predictor else "no predictor"
        print(f"node-llama-cpp {result['version']}, {label}: the second token repeats the first in {repeats[with_predictor]} "
              f"of {len(answers)} answers (T=0.7, top-p 0.8, repeatPenalty 1.5); tokenPredictions {result['predictions']}")
    bug = repeats[True] >= 10 * max(repeats[False], 1)
    print("BUG: the penalty is not applied after a kept draft" if bug else "no bug seen: the penalty holds with the predictor")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
