"""llama-server's draft-simple cells under truncating samplers FAILed per token on 2026-11-29: at top-k (T = 0.7,
top_k = 2, top_p = 0.8) 5 of 512 emitted tokens, at min-p (T = 0.7, top_p = 0.8, min_p = 0.2) 10 of 2,048, have
probability 0 in the law of the server without a draft (:class:`LlamaCppOracle`, one token at a time, whose controls
PASSed at 0.03 on 18,304 and 30,336 tokens).  Is the cause the verification batch's arithmetic - the target evaluates
the last accepted token and the K = 4 drafts in one batch, whose logits are not the one-token ones (llama.cpp's AVX2
build: 0.023 TV a position on average, ``scripts/llama_build_floor.py``) - moving a token across the truncation's
boundary (top-2; min-p's ln 5 = 1.609 logits below the top one)?  For each located (prompt, answer prefix, token): the
last position's logits evaluated one token at a time, and with the prefix's last m - 1 tokens and the new position in
one batch of m (m = 2..5; a K = 4 verification batch has 5 rows): the token's rank, its gap below the top logit and the
top-3 logits::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.findings.llama_server_draft_truncation_support

Seen on this machine (AMD EPYC, AVX2 build, 2026-11-29, 30 s): every located token sits at a near-tie of its
boundary.  top-k: token 386 after a 23-token prefix is rank 3 one token at a time (logits 12.894, 12.888, 12.811)
and rank 1 in a batch of 5, a K = 4 verification's shape.  min-p: token 32648 after a 15-token prefix is 1.675 logits
below the top one token at a time (cut) and 1.576 below it in a batch of 5 (kept); token 1038 (emitted 3 times in 64
answers at the same 6-token prefix) is 1.613 below the top one token at a time, 0.004 outside.  The other located
tokens are near-ties this probe does not flip: the server's whole KV history was written in such batches, the probe
writes only the last few tokens so.  The acceptance rule is not the cause: ``common_sampler_sample_and_accept_n``
(``common/sampling.cpp``) samples the whole chain at every position and keeps a draft only when it equals the
sample, lossless in exact arithmetic.  llama.cpp's maintainers call batch-size-dependent results expected ("we use
different kernels for different batch sizes", ggml-org/llama.cpp#23335; #25618 open for greedy): what this adds is
that under a truncating sampler the difference is not a tie broken the other way but a token the engine without
speculation never emits at that prefix.  Exits 1 when a verification-shaped batch keeps a located token that one
token at a time cuts (the mechanism reproduced), 0 otherwise.
"""

from __future__ import annotations

import numpy as np

from fixtures import llama_subjects
from specdec.adapters.llama_cpp.sampler_chain import ChainSettings, chain_law
from scripts.matrix.settings import SETTINGS
from scripts.matrix.token_prompts import token_prompts

MIN_P_GAP = float(np.log(1 / 0.2))  # min_p = 0.2 keeps a token within this many logits of the top one
CASES = [  # (setting, prompt index as the report counts, answer prefix, the emitted token of probability 0)
    ("top-k", 1, [5056, 4445, 367, 2618, 635, 3806, 25782, 303, 23, 11204, 546, 28, 425], 11390),
    ("top-k", 1, [5056, 216, 33, 34, 32, 3487, 25782, 2618, 4445, 25782, 303, 23, 1185, 773, 28, 16718, 393, 271, 4049, 90, 17476, 367, 2618], 386),
    ("top-k", 1, [5056, 4445, 18244, 303, 23, 447, 301, 367, 379, 437, 85, 25782, 2618, 6496, 290, 367], 303),
    ("min-p", 0, [504, 2591, 506, 12064, 335, 624], 1038),  # emitted 3 times in 64 answers
    ("min-p", 1, [46719, 393, 271, 694, 42623, 367, 2618, 4445, 25782, 2618, 2399, 85, 28, 613, 397], 32648),
]


CHAINS = {name: ChainSettings.from_settings(SETTINGS[name]) for name in ("top-k", "min-p")}  # the cells' own samplers


def _kept(setting: str, logits: np.ndarray, token: int) -> bool:
    """Whether the setting's chain (top-k, top-p, min-p on the untempered law, then the temperature) gives ``token``
    a positive probability on these logits."""
    return bool(chain_law(logits, [], CHAINS[setting])[token] > 0)


def _last_logits(llm, prompt: list[int], prefix: list[int], batch: int) -> np.ndarray:
    """Logits after ``prefix`` from a batch of ``batch`` rows: the prefix one token at a time up to its last
    ``batch - 1`` tokens, then those and a placeholder in one batch, the prefix's last row second to last (as a
    verification batch's row of its last accepted token or a draft is followed by the next draft); ``batch`` = 1: the
    whole prefix one token at a time.  The one-token rows are evaluated once per prefix (``batch`` = 1 first) and kept:
    ``llm.n_tokens`` rewinds the cache to them, as :class:`LlamaCppOracle` does."""
    sequence = prompt + prefix
    start = len(sequence) - (batch - 1)
    if batch == 1:
        llm.reset()
        llm.eval(prompt)
        for token in prefix:
            llm.eval([token])
        return np.array(llm.scores[start - 1], dtype=np.float32)
    llm.n_tokens = start  # the KV cache past the kept one-token rows is dropped by the next eval
    llm.eval(sequence[start:] + [0])  # the prompt's last tokens too when the prefix is shorter than batch - 1
    return np.array(llm.scores[llm.n_tokens - 2], dtype=np.float32)


def probe(cases) -> int:
    """Print, for every (setting, prompt index, answer prefix, token) of ``cases``, the token's rank and gap one token at
    a time and in batches of 2-5; 1 when some verification-shaped batch keeps a token one token at a time cuts."""
    from llama_cpp import Llama

    prompts = token_prompts()
    llm = Llama(model_path=str(llama_subjects.gguf_path()), n_ctx=512, n_batch=512, logits_all=True, verbose=False, n_threads=1)
    reproduced = 0
    for setting, index, prefix, token in cases:
        print(f"{setting}: prompt {index} (len {len(prompts[index])}), answer prefix of {len(prefix)} tokens, emitted {token}:")
        for batch in (1, 2, 3, 4, 5):
            logits = _last_logits(llm, list(prompts[index]), prefix, batch)
            order = np.argsort(-logits)
            rank, gap = int(np.where(order == token)[0][0]) + 1, float(logits[order[0]] - logits[token])
            top = ", ".join(f"{int(t)}: {logits[t]:.4f}" for t in order[:3])
            label = "one token at a time" if batch == 1 else f"last {batch - 1} + 1 in one batch of {batch}"
            kept = _kept(setting, logits, token)
            print(f"  {label:32s} rank {rank}, {gap:.3f} below the top, {'kept' if kept else 'cut '}   top 3: {top}")
            if batch == 1:
                alone = kept
            reproduced += not alone and kept
    print(f"kept: a positive probability in llama.cpp's chain (min-p keeps at most {MIN_P_GAP:.3f} logits below the top "
          "one, top-k = 2 the first two; top-p 0.8 on the untempered law before both cuts further)")
    return 1 if reproduced else 0


def main() -> int:
    return probe(CASES)


if __name__ == "__main__":
    raise SystemExit(main())
