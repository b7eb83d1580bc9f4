"""The stream of a tree verifier (:class:`specdec.protocols.TreeVerifier`) on a :class:`TreeCase`.

Each step builds the case's draft tree for every row where the row's context is: a node's children
are i.i.d. draws from its draft row (torch's ``multinomial``, independent of our verifier) or the
draft row's most likely tokens (distinct children), every node gets its target row, and the subject
verifies the trees; the emitted tokens are appended and the next step starts after them, until L
tokens.  Counted: the first L tokens (vs the chain law, F35, located by F36) and, at the first step,
whether a child of the root was accepted (vs the root's optimum: alpha*_m, or p(children) for
distinct children, F9-F10, F15).  Only count vectors leave the device.
"""

from __future__ import annotations

import torch

from ...laws.chain import prefix_offset
from ...laws.tree import tree_shape
from ...verify.result import read_verification
from ..calls import CallGuard
from ..cases import SEES_MULTIDRAFT_ACCEPTANCE, SEES_TREE, TreeCase, exact_law
from ..checks import acceptance_check
from ..engine import ChunkKey, Stream, count_stream
from .chains import Emission, sequence_check


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
    law = case.sequence_law()

    def draw(m: int, key: ChunkKey):
        g = key.generator()
        emission = Emission(m, length, depth, vocab, device)
        root = None
        for step in range(length):  # every step emits at least one token
            start, codes = emission.contexts()
            tokens, target_rows, draft_rows = _build_trees(case, shape, tables, sampler, start, codes, g)
            probs = draft_rows if case.children == "iid" else None
            describe = lambda: f"tree case {case.name} (batch {m:,}, N={shape.num_nodes}, depth {depth}, V={vocab}, {case.dtype})"  # noqa: E731
            result = guard.call(verifier, (tokens, list(shape.parents), probs, target_rows, g), describe)
            emitted, accepted = guard.read(lambda: read_verification(result, m, depth), describe)
            if step == 0:
                invalid = (accepted < 0) | (accepted > depth)
                root = torch.stack([(accepted == 0).sum(), ((accepted >= 1) & ~invalid).sum(), invalid.sum()])
            emission.add(emitted, accepted)
        return [emission.counts(), root]

    def evaluate(counts, alpha):
        sequences, root = counts
        check = sequence_check(case, "tree", SEES_TREE, sequences, law, alpha)
        acceptance = acceptance_check(f"{case.name}: acceptance at the root vs optimum", SEES_MULTIDRAFT_ACCEPTANCE,
                                      int(root[1]), int(root.sum()), int(root[2]), case.root_optimum(), alpha=alpha,
                                      what="num_accepted")
        return [check, acceptance]

    per_sample = length * shape.num_nodes * (2 * vocab + 4)
    return count_stream(case.name, [law], 2, per_sample, [vocab**length + 1, 3], draw, evaluate)

