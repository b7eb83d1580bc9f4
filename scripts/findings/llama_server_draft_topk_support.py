"""llama-server's draft-simple cell at top-k (T = 0.7, top_k = 2, top_p = 0.8) FAILed per token on 2026-11-29: 5 of
512 emitted tokens have probability 0 in the law of the server without a draft (:class:`LlamaCppOracle`, one token at
a time, whose control PASSed at 0.03 on 18,304 tokens).  Is the cause the verification batch's arithmetic - the
target evaluates the last accepted token and the K = 4 drafts in one batch, whose logits are not the one-token ones
(llama.cpp's AVX2 build: 0.023 TV a position on average, ``scripts/llama_build_floor.py``) - moving a token across
the top-2 boundary?  For each reported (prompt, answer prefix, token): the last position's logits evaluated one token
at a time, and with the prefix's last m - 1 tokens and a placeholder in one batch of m (m = 2..5, the shapes of a
verification batch), each with the emitted token's rank and the top-3 logits::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.findings.llama_server_draft_topk_support

Seen on this machine (AMD EPYC, AVX2 build, 2026-11-29, 20 s): the three located tokens sit at near-ties of the
truncation boundary.  Token 386 after the 23-token prefix is rank 3 one token at a time (logits 12.894, 12.888,
12.811: top_k = 2 excludes it) and rank 1 when the last 3 or 4 tokens and the new position are one batch (12.697,
12.681, 12.662): the verification batch's arithmetic alone moves it into the top 2.  Token 303 (16-token prefix) is
rank 3 at 0.05 below rank 2 either way, token 11390 (13-token prefix) rank 2 but cut by top_p = 0.8 either way; the
server's whole KV history was written in such batches (this probe writes only the last few), so those two are not
reproduced here.  The acceptance rule is not the cause: ``common_sampler_sample_and_accept_n``
(``common/sampling.cpp``) samples the whole chain at every position and keeps a draft only when it equals the sample,
lossless in exact arithmetic.  llama.cpp's maintainers call batch-size-dependent results expected ("we use different
kernels for different batch sizes", ggml-org/llama.cpp#23335; #25618 open for greedy): what this adds is that under a
truncating sampler the difference is not a tie broken the other way but a token the engine without speculation never
emits at that prefix.  Exits 1 when a verification-shaped batch puts a reported token into the top 2 that one token
at a time leaves out (the mechanism reproduced), 0 otherwise.
"""

from __future__ import annotations

import numpy as np

from fixtures import llama_subjects
from scripts.matrix.token_prompts import token_prompts

PROMPT = 1  # "prompt 1 (len 48)" of the report: the prompts' 0-based index
CASES = [  # (answer prefix, the emitted token of probability 0), from the cell's report
    ([5056, 4445, 367, 2618, 635, 3806, 25782, 303, 23, 11204, 546, 28, 425], 11390),
    ([5056, 216, 33, 34, 32, 3487, 25782, 2618, 4445, 25782, 303, 23, 1185, 773, 28, 16718, 393, 271, 4049, 90, 17476, 367, 2618], 386),
    ([5056, 4445, 18244, 303, 23, 447, 301, 367, 379, 437, 85, 25782, 2618, 6496, 290, 367], 303),
]


def _last_logits(llm, prompt: list[int], prefix: list[int], batch: int) -> np.ndarray:
    """Logits after ``prefix``: one token at a time up to its last ``batch`` tokens, those in one batch."""
    llm.reset()
    llm.eval(prompt)
    head, tail = prefix[: len(prefix) - batch], prefix[len(prefix) - batch :]
    for token in head:
        llm.eval([token])
    if batch == 1:
        llm.eval(tail)
        return np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
    llm.eval(tail + [0])  # the position after the prefix is the batch's second to last row; a placeholder after it
    return np.array(llm.scores[llm.n_tokens - 2], dtype=np.float32)


def main() -> int:
    from llama_cpp import Llama

    prompt = list(token_prompts()[PROMPT])
    assert len(prompt) == 48, len(prompt)
    llm = Llama(model_path=str(llama_subjects.gguf_path()), n_ctx=512, n_batch=512, logits_all=True, verbose=False, n_threads=1)
    reproduced = 0
    for prefix, token in CASES:
        print(f"answer prefix of {len(prefix)} tokens, emitted {token}:")
        for batch in (1, 2, 3, 4, 5):
            logits = _last_logits(llm, prompt, prefix, batch)
            order = np.argsort(-logits)
            rank = int(np.where(order == token)[0][0]) + 1
            top = ", ".join(f"{int(t)}: {logits[t]:.4f}" for t in order[:3])
            label = "one token at a time" if batch == 1 else f"last {batch - 1} + 1 in one batch of {batch}"
            print(f"  {label:32s} rank of {token}: {rank}   top 3: {top}")
            if batch == 1:
                alone = rank
            reproduced += alone > 2 >= rank
    return 1 if reproduced else 0


if __name__ == "__main__":
    raise SystemExit(main())
