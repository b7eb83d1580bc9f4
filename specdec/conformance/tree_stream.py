"""The driver of a tree verifier (:class:`specdec.protocols.TreeVerifier`) on a :class:`TreeCase`.

Each step builds the case's draft tree for every row where the row's context is: a node's children
are i.i.d. draws from its draft row (torch's ``multinomial``, independent of our verifier) or the
draft row's most likely tokens (distinct children), every node gets its target row, and the subject
verifies the trees; the emitted tokens are appended and the next step starts after them, until L
tokens.  Counted: the first L tokens (vs the chain law, F35, located by F36) and, at the first step,
whether a child of the root was accepted (vs the root's optimum: alpha*_m, or p(children) for
distinct children, F9-F10, F15).  Only count vectors leave the device.
"""

from __future__ import annotations

import numpy as np
import torch

from ..laws.chain import prefix_offset
from ..laws.tree import tree_shape
from ..stats.localize import prefix_decomposition
from ..verify.result import read_verification
from .cases import SEES_MULTIDRAFT_ACCEPTANCE, SEES_TREE, TreeCase, exact_law
from .checks import acceptance_check, gof_check
from .drivers import _digits
from .engine import ChunkKey, Stream, outcome_counts
from .subject import CallGuard


def _build_trees(case: TreeCase, shape, tables, sampler, start, codes, generator):
    """Per row: the tree's tokens (m, N), target rows (m, N, V), draft rows (m, N, V)."""
    vocab = case.vocab
    target_t, draft_t = tables
    m = codes.shape[0]
    node_codes = [codes]
    tokens = [torch.zeros(m, dtype=torch.long, device=codes.device)]
    order = {}  # parent -> its draft row's tokens by decreasing probability (distinct children)
    for n in range(1, shape.num_nodes):
        parent = shape.parents[n]
        index = prefix_offset(vocab, start + shape.depth[parent]) + node_codes[parent]  # (m,) the parent's row
        if case.children == "iid":
            token = torch.multinomial(sampler[index], 1, generator=generator).squeeze(-1)
        else:
            if parent not in order:
                order[parent] = torch.argsort(-sampler[index], dim=-1, stable=True)
            token = order[parent][:, shape.children[parent].index(n)]
        tokens.append(token)
        node_codes.append(node_codes[parent] * vocab + token)
    rows = [prefix_offset(vocab, start + shape.depth[n]) + node_codes[n] for n in range(shape.num_nodes)]
    index = torch.stack(rows, 1)  # (m, N)
    return torch.stack(tokens, 1), target_t[index], draft_t[index]


def tree_stream(verifier, case: TreeCase, device: torch.device, *, guard: CallGuard | None = None) -> Stream:
    guard = guard or CallGuard(None)
    shape = tree_shape(case.parents)
    vocab, length, depth = case.vocab, case.length, shape.max_depth
    tables = (case.tables("target").to(device), case.tables("draft").to(device))
    sampler = exact_law(case.tables("draft")).to(device)
    cells = vocab**length
    law = case.sequence_law()
    powers = torch.tensor([vocab ** (length - 1 - t) for t in range(length)], device=device)

    def draw(m: int, key: ChunkKey):
        g = key.generator()
        out = torch.full((m, length + depth + 1), -1, dtype=torch.long, device=device)
        size = torch.zeros(m, dtype=torch.long, device=device)
        code = torch.zeros(m, dtype=torch.long, device=device)
        rows = torch.arange(m, device=device)
        root = None
        for step in range(length):  # every step emits at least one token
            live = size < length
            start = torch.where(live, size, 0)
            codes = torch.where(live, code, 0)
            tokens, target_rows, draft_rows = _build_trees(case, shape, tables, sampler, start, codes, g)
            probs = draft_rows if case.children == "iid" else None
            describe = lambda: f"tree case {case.name} (batch {m:,}, N={shape.num_nodes}, depth {depth}, V={vocab}, {case.dtype})"  # noqa: E731
            result = guard.call(verifier, (tokens, list(shape.parents), probs, target_rows, g), describe)
            emitted, accepted = guard.read(lambda: read_verification(result, m, depth), describe)
            if step == 0:
                invalid = (accepted < 0) | (accepted > depth)
                root = torch.stack([(accepted == 0).sum(), ((accepted >= 1) & ~invalid).sum(), invalid.sum()])
            for j in range(depth + 1):
                take = live & (j <= accepted) & (size < length)
                out[rows[take], size[take]] = emitted[take, j]
                code = torch.where(take, code * vocab + emitted[:, j].clamp(0, vocab - 1), code)
                size = size + take.long()
        first = out[:, :length]
        invalid = ((first < 0) | (first >= vocab)).any(1)
        codes = (first.clamp(0, vocab - 1) * powers).sum(1)
        return [outcome_counts(torch.where(invalid, cells, codes), cells), root]

    def label(code: int) -> str:
        return "invalid" if code == cells else str(_digits(code, vocab, length))

    def evaluate(counts, alpha):
        sequences, root = counts
        check = gof_check(f"{case.name}: first {length} tokens vs chain law (F35)", "tree", SEES_TREE, sequences, law,
                          alpha=alpha, labels=label)
        observed = {_digits(c, vocab, length): int(sequences[c]) for c in np.flatnonzero(sequences[:cells])}
        check.location = prefix_decomposition(observed, case.conditional).describe()
        acceptance = acceptance_check(f"{case.name}: acceptance at the root vs optimum", SEES_MULTIDRAFT_ACCEPTANCE,
                                      int(root[1]), int(root.sum()), int(root[2]), case.root_optimum(), alpha=alpha,
                                      what="num_accepted")
        return [check, acceptance]

    per_sample = length * shape.num_nodes * (2 * vocab + 4)
    return Stream(case.name, [law], 2, per_sample, [cells + 1, 3], draw, evaluate)

