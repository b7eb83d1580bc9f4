"""Exact law of block verification (SPEC §4, F16-F20; docs/reference.md) on a chain of tables.

Plain Python arithmetic, so ``Fraction`` rows give exact rationals: the SPEC §4
worked example's 11/9 (block), 10/9 (token) and 12/9 (joint-min bound) come out
exactly.  The verifier itself is :func:`specdec.verify.verify_block`.

``target_fn(prefix)`` / ``draft_fn(prefix)`` return the rows after a drafted
prefix (sequences of numbers: floats or Fractions).
"""

from __future__ import annotations

import itertools

from .._checks import as_int


def _rows(fn, name: str, prefix: tuple, vocab: int) -> list:
    if not callable(fn):
        raise TypeError(f"{name} must be callable (prefix -> probabilities), got {type(fn).__name__}")
    row = list(fn(prefix))
    if len(row) != vocab:
        raise ValueError(f"{name}({prefix}) must return {vocab} probabilities, got {len(row)}")
    if any(isinstance(x, complex) or not x >= 0 for x in row) or abs(float(sum(row)) - 1) > 1e-9:
        raise ValueError(f"{name}({prefix}) must return non-negative probabilities summing to 1, got {row}")
    return row


MAX_ENUMERATION = 1_000_000  # V^K drafts enumerated at most


def _sizes(num_draft_tokens, vocab) -> tuple[int, int]:
    k, v = as_int("num_draft_tokens", num_draft_tokens, minimum=0, maximum=64), as_int("vocab", vocab, minimum=1)
    if v**k > MAX_ENUMERATION:
        raise ValueError(f"num_draft_tokens={k} with vocab={v} means {v}^{k} drafts to enumerate (at most {MAX_ENUMERATION:,})")
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
    """Exact law of the emitted block of block verification (F16-F19); enumerates the V^K drafts."""
    num_draft, vocab = _sizes(num_draft_tokens, vocab)
    law: dict[tuple[int, ...], object] = {}
    for draft in itertools.product(range(vocab), repeat=num_draft):
        target_rows = [_rows(target_fn, "target_fn", draft[:i], vocab) for i in range(num_draft + 1)]
        draft_rows = [_rows(draft_fn, "draft_fn", draft[:i], vocab) for i in range(num_draft)]
        mass = 1
        for i, token in enumerate(draft):
            mass *= draft_rows[i][token]
        if mass == 0:
            continue
        b, h = block_weights(target_rows, draft_rows, draft)
        for tau in range(num_draft + 1):
            p_tau = h[tau]
            for j in range(tau + 1, num_draft + 1):
                p_tau *= 1 - h[j]
            if p_tau == 0:
                continue
            if tau == num_draft:
                weights = target_rows[tau]
            else:
                weights = [max(b[tau] * pv - qv, 0) for pv, qv in zip(target_rows[tau], draft_rows[tau])]
            total = sum(weights)
            for y, w in enumerate(weights):
                if w:
                    key = draft[:tau] + (y,)
                    law[key] = law.get(key, 0) + mass * p_tau * w / total
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
