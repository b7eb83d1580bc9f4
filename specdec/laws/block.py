"""Exact law of block verification (docs/reference.md §4, F16-F20; docs/reference.md) on a chain of tables.

Plain Python arithmetic, so ``Fraction`` rows give exact rationals: the docs/reference.md §4
worked example's 11/9 (block), 10/9 (token) and 12/9 (joint-min bound) come out
exactly.  The verifier itself is :func:`specdec.verify.verify_block`.

``target_fn(prefix)`` / ``draft_fn(prefix)`` return the rows after a drafted
prefix (sequences of numbers: floats or Fractions).
"""

from __future__ import annotations

import itertools

from .._validation import as_int


def _rows(fn, name: str, prefix: tuple, vocab: int) -> list:
    if not callable(fn):
        raise TypeError(f"{name} must be callable (prefix -> probabilities), got {type(fn).__name__}")
    row = list(fn(prefix))
    if len(row) != vocab:
        raise ValueError(f"{name}({prefix}) must return {vocab} probabilities, got {len(row)}")
    if any(isinstance(x, complex) or not x >= 0 for x in row) or abs(float(sum(row)) - 1) > 1e-9:
        raise ValueError(f"{name}({prefix}) must return non-negative probabilities summing to 1, got {row}")
    return row


MAX_ENUMERATION = 200_000  # table entries read: V * (1 + V + ... + V^K), a few seconds at most on a 2-core CPU


def _sizes(num_draft_tokens, vocab) -> tuple[int, int]:
    """(K, V), refused when the walk over the V^i drafted prefixes (i <= K) would read more than
    :data:`MAX_ENUMERATION` table entries (each prefix reads a row of V)."""
    k, v = as_int("num_draft_tokens", num_draft_tokens, minimum=0, maximum=64), as_int("vocab", vocab, minimum=1)
    cells, level = 0, v
    for _ in range(k + 1):
        cells += level
        if cells > MAX_ENUMERATION:
            raise ValueError(
                f"num_draft_tokens={k} with vocab={v} means {v}^{k} drafts, over {MAX_ENUMERATION:,} table entries "
                "to enumerate (the cap); use a smaller K or V"
            )
        level *= v
    return k, v


def block_weights(target_rows, draft_rows, draft):
    """b_0..b_g and h_0..h_g of (F16, F18) for one draft; rows are lists of numbers."""
    gamma = len(draft)
    b = [1]
    for i, token in enumerate(draft):
        b.append(min(1, b[-1] * target_rows[i][token] / draft_rows[i][token]) if target_rows[i][token] else 0)
    h = []
    for i in range(gamma):
        z = sum(max(b[i] * pv - qv, 0) for pv, qv in zip(target_rows[i], draft_rows[i]))
        h.append(1 if z + 1 - b[i] == 0 else z / (z + 1 - b[i]))
    h.append(b[gamma])
    return b, h


def block_law(target_fn, draft_fn, num_draft_tokens: int, vocab: int) -> dict[tuple[int, ...], object]:
    """Exact law of the emitted block of block verification (F16-F19), by one walk of the draft tree.

    At a drafted prefix u = x_1..x_i of draft mass Q(u): b_i (F16), z_i and h_i (F17-F18).  The step
    stops at tau = i with probability h_i prod_{j>i} (1 - h_j), which depends on the drafts after u
    only through R_i(u) = sum_x q_{i+1}(x) (1 - h_{i+1}(u x)) R_{i+1}(u x), R_K = 1; so
    P(x_1..x_i, y) = Q(u) h_i(u) R_i(u) w(y) / sum w, with w = (b_i p_{i+1} - q_{i+1})+ for i < K
    (p_{i+1} when that is empty, E2) and p_{K+1} for i = K.  Each row is read once per prefix:
    V (1 + V + ... + V^K) entries, at most :data:`MAX_ENUMERATION`.
    """
    num_draft, vocab = _sizes(num_draft_tokens, vocab)
    law: dict[tuple[int, ...], object] = {}

    def visit(prefix: tuple, mass, b):
        """Adds the blocks that stop at ``prefix`` to the law; returns (h_i, R_i) there."""
        target_row = _rows(target_fn, "target_fn", prefix, vocab)
        if len(prefix) == num_draft:
            h, rest, weights = b, 1, target_row
        else:
            draft_row = _rows(draft_fn, "draft_fn", prefix, vocab)
            weights = [max(b * pv - qv, 0) for pv, qv in zip(target_row, draft_row)]  # (F17)
            z = sum(weights)
            h = 1 if z + 1 - b == 0 else z / (z + 1 - b)  # (F18), 0/0 := 1
            rest = 0
            for x, qx in enumerate(draft_row):
                if qx:  # a draft of mass 0 is never proposed
                    b_next = min(1, b * target_row[x] / qx) if target_row[x] else 0  # (F16)
                    h_next, rest_next = visit(prefix + (x,), mass * qx, b_next)
                    rest += qx * (1 - h_next) * rest_next
        stop = mass * h * rest  # P(x_1..x_i = prefix, tau = i)  (F19)
        if stop:
            total = sum(weights)
            if not total:
                weights, total = target_row, sum(target_row)
            for y, w in enumerate(weights):
                if w:
                    law[prefix + (y,)] = law.get(prefix + (y,), 0) + stop * w / total
        return h, rest

    visit((), 1, 1)
    return law


def expected_accepted_block(target_fn, draft_fn, num_draft_tokens: int, vocab: int):
    """(F20) E[tau_block] = sum_i sum_{x_1..i} min_{0<=j<=i} prod_{k<=j} q_k(x_k) prod_{j<k<=i} p_k(x_k)."""
    num_draft, vocab = _sizes(num_draft_tokens, vocab)
    total = 0
    for i in range(1, num_draft + 1):
        for prefix in itertools.product(range(vocab), repeat=i):
            q = [draft_fn(prefix[:k])[prefix[k]] for k in range(i)]
            p = [target_fn(prefix[:k])[prefix[k]] for k in range(i)]
            terms = []
            for j in range(i + 1):
                term = 1
                for k in range(j):
                    term *= q[k]
                for k in range(j, i):
                    term *= p[k]
                terms.append(term)
            total += min(terms)
    return total


def joint_min_ideal(target_fn, draft_fn, num_draft_tokens: int, vocab: int):
    """sum_i sum_{x_<=i} min(Q(x_<=i), P(x_<=i)): the bound no verifier of one draft can beat."""
    num_draft, vocab = _sizes(num_draft_tokens, vocab)
    total = 0
    for i in range(1, num_draft + 1):
        for prefix in itertools.product(range(vocab), repeat=i):
            q = p = 1
            for k in range(i):
                q *= draft_fn(prefix[:k])[prefix[k]]
                p *= target_fn(prefix[:k])[prefix[k]]
            total += min(q, p)
    return total


def accepted_count_law(law: dict[tuple[int, ...], object], num_draft_tokens: int) -> list:
    """P(tau = i), i = 0..K, from an emitted-block law (a block of length i + 1 accepted i drafts)."""
    counts = [0] * (as_int("num_draft_tokens", num_draft_tokens, minimum=0, maximum=64) + 1)
    for block, mass in law.items():
        counts[len(block) - 1] += mass
    return counts
