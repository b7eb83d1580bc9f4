// specdec's node-llama-cpp worker (specdec/adapters/nodellama): JSON lines on stdin, one answer line per request on stdout.
//
//   node server.mjs CONFIG_JSON      CONFIG: {modules, model, draftModel, speculation, draftMax, draftMin, minConfidence,
//                                             lookupPattern, lookupMax, sequences, threads, contextSize, batchSize}
//
// node-llama-cpp is imported from CONFIG.modules (the node_modules folder of `npm ci` in .peers/nodellama): an ES module
// resolves packages from its own folder, not the caller's.  The first line written is {"ready": true, "version": ...}.
// Request: {"prompts": [[ids]], "seeds": [uint32], "maxNewTokens": n, "stopTokens": [ids], "stopAtEog": bool,
//           "sampling": {temperature, topK, topP, minP, repeatPenalty: {penalty, frequencyPenalty, presencePenalty,
//           lastTokens} | null}}
// Answer:  {"tokens": [[ids]], "predictions": [{used, unused, validated, refuted, steps}]}   or   {"error": "..."}
// Laws request (specdec.adapters.nodellama.nodellama_oracle): {"laws": true, "prompts": [[ids]], "answers": [[ids]],
//           "sampling": {...}, "listAll": n, "keep": k}  ->  {"laws": [[[ids, probs, rest], ...]]}: for every position t
//           of every answer, the law the engine samples answer[t] from given prompt + answer[:t] (below, lawsOf).
// Rows run `sequences` at a time, each on its own context sequence (node-llama-cpp batches their decodes together).
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const config = JSON.parse(process.argv[2]);
const lib = await import(pathToFileURL(join(config.modules, "node-llama-cpp", "dist", "index.js")).href);
const { getLlama, LlamaLogLevel, DraftSequenceTokenPredictor, InputLookupTokenPredictor, getModuleVersion } = lib;

// gpu: false and build: "never": the prebuilt CPU binary (@node-llama-cpp/linux-x64) or an error, never a cmake build.
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false });
const model = await llama.loadModel({ modelPath: config.model, gpuLayers: 0 });
const contextOptions = { contextSize: config.contextSize, sequences: config.sequences, threads: config.threads,
                         batchSize: config.batchSize, flashAttention: false };
const context = await model.createContext(contextOptions);
let draftContext = null;
if (config.speculation === "draft") {
    const draftModel = config.draftModel === config.model ? model
        : await llama.loadModel({ modelPath: config.draftModel, gpuLayers: 0 });
    draftContext = await draftModel.createContext(contextOptions);
}

function predictor() {
    let made;
    if (config.speculation === "draft")
        made = new DraftSequenceTokenPredictor(draftContext.getSequence(), {
            minTokens: config.draftMin, maxTokens: config.draftMax, minConfidence: config.minConfidence });
    else if (config.speculation === "lookup")
        made = new InputLookupTokenPredictor({ patternLength: { min: config.lookupPattern },
                                               predictionLength: { max: config.lookupMax } });
    else
        return undefined;
    // node-llama-cpp counts predictions, not verification steps: _speculativeEvaluate asks predictTokens() once per
    // step and evaluates what it returns, so a call that returns tokens is one step with drafts.  The copy fixes the
    // step's tokens at the count (the draft predictor returns its live list, which its background run extends).
    const predictTokens = made.predictTokens.bind(made);
    made.specdecSteps = 0;
    made.predictTokens = async () => {
        const tokens = [...await predictTokens()];
        made.specdecSteps += tokens.length > 0 ? 1 : 0;
        return tokens;
    };
    return made;
}
const sequences = [];
for (let i = 0; i < config.sequences; i++)
    sequences.push(context.getSequence({ tokenPredictor: predictor() }));

function counts(sequence) {
    const p = sequence.tokenPredictions;
    return { used: p.used, unused: p.unused, validated: p.validated, refuted: p.refuted,
             steps: sequence.tokenPredictor?.specdecSteps ?? 0 };
}

async function answer(sequence, prompt, seed, request) {
    await sequence.clearHistory();
    sequence.tokenPredictor?.updateInputTokens?.(prompt.slice());  // what LlamaCompletion does with its input
    const before = counts(sequence);
    const out = [];
    const s = request.sampling;
    const options = { temperature: s.temperature, topK: s.topK, topP: s.topP, minP: s.minP, seed, yieldEogToken: true };
    if (s.repeatPenalty != null)  // the history is this answer's tokens so far, as LlamaCompletion's getPenaltyTokens
        options.repeatPenalty = { punishTokens: () => out.slice(-s.repeatPenalty.lastTokens),
                                  maxPunishTokens: s.repeatPenalty.lastTokens, penalty: s.repeatPenalty.penalty,
                                  frequencyPenalty: s.repeatPenalty.frequencyPenalty,
                                  presencePenalty: s.repeatPenalty.presencePenalty };
    const stops = new Set(request.stopTokens);
    if (request.maxNewTokens > 0) {
        const iterator = sequence.evaluate(prompt, options);
        try {
            for await (const token of iterator) {
                out.push(token);
                if (out.length >= request.maxNewTokens || stops.has(token) || (request.stopAtEog && model.isEogToken(token)))
                    break;
            }
        } finally {
            await iterator.return();
        }
    }
    const after = counts(sequence);
    const delta = {};
    for (const key of Object.keys(after))
        delta[key] = after[key] - before[key];
    return [out, delta];
}

// The engine's own law at every position of `answer` given its true prefix: evaluateWithMetadata with probabilities
// (AddonContext.cpp's SampleToken: the softmax of the candidates left by the sampler chain - penalties, top-k, top-p,
// min-p, temperature - in float32), one token at a time as without a predictor, each position's draw replaced by the
// answer's own token (the generator's replacement token), the penalty history the answer's earlier tokens (as
// `answer` above).  A law of at most `listAll` tokens is sent whole; a larger one as its `keep` most likely tokens
// (the candidates come sorted by logit) and the rest's mass, all divided by their sum.  T = 0 (the greedy sampler): the one-hot law of the
// engine's own choice.
async function lawsOf(sequence, prompt, answer, request) {
    await sequence.clearHistory();
    const laws = [];
    if (answer.length === 0)
        return laws;
    const s = request.sampling;
    const options = { temperature: s.temperature, topK: s.topK, topP: s.topP, minP: s.minP, seed: 0, yieldEogToken: true };
    if (s.repeatPenalty != null)
        options.repeatPenalty = { punishTokens: () => answer.slice(Math.max(0, laws.length - s.repeatPenalty.lastTokens), laws.length),
                                  maxPunishTokens: s.repeatPenalty.lastTokens, penalty: s.repeatPenalty.penalty,
                                  frequencyPenalty: s.repeatPenalty.frequencyPenalty,
                                  presencePenalty: s.repeatPenalty.presencePenalty };
    const iterator = sequence.evaluateWithMetadata(prompt, { probabilities: true }, options);
    try {
        let step = await iterator.next();
        while (!step.done) {
            const { token, probabilities } = step.value;
            if (s.temperature === 0)
                laws.push([[token], [1], 0]);
            else {
                const entries = [...probabilities.entries()];
                const listed = entries.length <= request.listAll ? entries : entries.slice(0, request.keep);
                let total = 0, rest = 0;  // float32 probabilities over ~50,000 tokens sum to 1 within ~2e-4: renormalised
                for (let i = 0; i < entries.length; i++) {
                    total += entries[i][1];
                    if (i >= listed.length)
                        rest += entries[i][1];
                }
                laws.push([listed.map((e) => e[0]), listed.map((e) => e[1] / total), rest / total]);
            }
            if (laws.length >= answer.length)
                break;
            step = await iterator.next(answer[laws.length - 1]);
        }
    } finally {
        await iterator.return();
    }
    if (laws.length !== answer.length)
        throw new Error(`the engine stopped after ${laws.length} of ${answer.length} positions`);
    return laws;
}

async function serve(request) {
    if (request.laws) {
        const laws = [];
        for (let i = 0; i < request.prompts.length; i++)
            laws.push(await lawsOf(sequences[0], request.prompts[i], request.answers[i], request));
        return { laws };
    }
    const tokens = new Array(request.prompts.length);
    const predictions = new Array(request.prompts.length);
    for (let start = 0; start < request.prompts.length; start += sequences.length) {
        const rows = request.prompts.slice(start, start + sequences.length);
        const results = await Promise.all(rows.map((prompt, j) =>
            answer(sequences[j], prompt, request.seeds[start + j], request)));
        results.forEach(([out, delta], j) => { tokens[start + j] = out; predictions[start + j] = delta; });
    }
    return { tokens, predictions };
}

process.stdout.on("error", () => process.exit(1));  // the parent is gone: nobody reads the answers
const write = (obj) => new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + "\n", resolve));
await write({ ready: true, version: await getModuleVersion(), buildType: llama.buildType, gpu: llama.gpu, vocab: model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? null,
              eog: [model.tokens.eos, model.tokens.eot].filter((t) => t != null) });
const lines = createInterface({ input: process.stdin, terminal: false });
for await (const line of lines) {
    if (line.trim() === "")
        continue;
    let reply;
    try {
        reply = await serve(JSON.parse(line));
    } catch (err) {
        reply = { error: String(err?.stack ?? err) };
    }
    await write(reply);
}
await context.dispose();
if (draftContext != null)
    await draftContext.dispose();
await model.dispose();
await llama.dispose();
