"""A static batch waits for its slowest row (docs/reference.md §6, "Static batches", P5-P6).

F23 counts a row's decoding steps as N / E[T]: right for one row, and for a batch whose rows leave as soon as
they have their N tokens.  A static batch (our loop's ``generate`` on B prompts, a closed-loop benchmark call)
runs until its last row has its N tokens, so it pays E[max_b S_b] steps, S_b the steps row b needs.  With
i.i.d. acceptance (F22's model) S has an exact law (P5), and the batch's steps follow from it (P6).  At
alpha = 0 or 1 every row needs the same steps (the factor is 1); between them the slowest of 8 rows of 24 tokens
costs up to 40% more steps than the mean (factor 0.72 at K = 8; the synthetic sweep, docs/bench.md).

Exact in float64: a dynamic programme over the tokens a row has emitted (N + 1 states, N steps at most).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_int, as_probability

MAX_NEW_TOKENS = 20_000  # O(N min(N, K)) vector operations of length N: a few seconds at the cap, K = 8


def step_tokens_law(alpha, num_draft_tokens) -> np.ndarray:
    """(F22's model) P(T = t), t = 0..K+1, for the tokens one step emits: alpha^(t-1) (1 - alpha) for
    t = 1..K, alpha^K for t = K + 1 (every draft kept, plus the bonus token); P(T = 0) = 0."""
    alpha = as_probability("alpha", alpha)
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0, maximum=MAX_NEW_TOKENS)
    law = np.zeros(k + 2)
    kept = alpha ** np.arange(k + 1, dtype=np.float64)  # P(the first t - 1 drafts kept), t = 1..K+1
    law[1:k + 1] = kept[:k] * (1.0 - alpha)
    law[k + 1] = kept[k]
    return law


def steps_law(alpha, num_draft_tokens, new_tokens) -> np.ndarray:
    """(P5) P(S <= s), s = 0..N, for S the steps one row needs to emit ``new_tokens`` = N tokens when each
    step emits T tokens by :func:`step_tokens_law` (a step that would pass N stops at N: capping the last
    step's drafts at the tokens still owed leaves the chance of reaching N unchanged).  S <= N always."""
    law = step_tokens_law(alpha, num_draft_tokens)
    n = as_int("new_tokens", new_tokens, minimum=0, maximum=MAX_NEW_TOKENS)
    if law.size > n + 1:  # a step of N tokens or more finishes the row whatever its exact length
        law = np.concatenate([law[:n], [law[n:].sum()]])
    emitted = np.zeros(n + 1)  # P(min(tokens so far, N) = j)
    emitted[0] = 1.0
    done = np.empty(n + 1)
    done[0] = emitted[n]
    for s in range(1, n + 1):
        moved = np.zeros(n + 1)
        moved[n] = emitted[n]
        for t in range(1, law.size):  # the rows not yet done advance by t tokens, stopping at N
            moved[t:n] += law[t] * emitted[:n - t]
            moved[n] += law[t] * emitted[n - t:n].sum()
        emitted = moved
        done[s] = min(emitted[n], 1.0)
    return done


def expected_batch_steps(alpha, num_draft_tokens, new_tokens, batch) -> float:
    """(P6) E[max_b S_b] = sum_{s=0}^{N-1} (1 - P(S <= s)^B) for B rows with independent S_b (P5)."""
    b = as_int("batch", batch, minimum=1, maximum=2**31 - 1)
    done = steps_law(alpha, num_draft_tokens, new_tokens)
    return float(np.sum(1.0 - done[:-1] ** b))


def static_batch_factor(alpha, num_draft_tokens, new_tokens, batch) -> float:
    """(P6) E[S] / E[max_b S_b]: the share of F23's per-row speedup a static batch of B rows keeps (1 at B = 1,
    at alpha = 0 or 1, and for N = 0).  Multiply a per-row prediction by it to predict a static batch."""
    slowest = expected_batch_steps(alpha, num_draft_tokens, new_tokens, batch)
    mean = expected_batch_steps(alpha, num_draft_tokens, new_tokens, 1)
    return 1.0 if slowest == 0.0 else mean / slowest
