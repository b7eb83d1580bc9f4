"""Token-tree verification: recursive rejection sampling over siblings (docs/reference.md §3, F14-F15).

A draft tree (SpecInfer, EAGLE, Medusa trees) is given by ``parents`` (N,): node 0 is the root
(the current context, ``parents[0] == -1``) and every other node n has a parent p < n, so nodes come
in topological order; the children of a node are its nodes in increasing index order.  Per batch row:

* ``tree_tokens`` (B, N): the token of every node (node 0's is ignored);
* ``draft_probs`` (B, N, V): row n is the law the children of node n were drawn from, i.i.d. (F14);
  or None: the children of every node are distinct deterministic tokens (point masses, F15), e.g.
  the top-k of a draft;
* ``target_probs`` (B, N, V): row n is p(. | context, path to n), what the target emits after node n.

From the root, at each node with children c_1..c_m and r <- p_node: child s is accepted iff
u_s * q(x_s) < r(x_s) (q the node's draft row; the point mass on x_s for distinct children) and the
walk descends into it; otherwise r <- norm((r - q)+) (E2: the rows' own precision decides when that
is empty; then r keeps its value, as every verifier's fallback to the target row).  If every child is
rejected, one token is drawn from r and the step ends; at a leaf, one token is drawn from its target
row (the bonus).  The emitted tokens follow the target (lossless: ``laws.tree``).

A chain is a tree of width 1 (the token rule, F2-F4) and one node's children a tree of depth 1 (MSS):
with uniforms in this layout - the s-th child tested at depth d uses column ``d * W + s``, the final
draw the last column - the tree verifier emits the same tokens as :func:`verify_tokens_with_uniforms`
and :func:`verify_mss` (``properties/test_tree.py``).  Batched over rows, vectorised; the loops run
over the tree's depth and width, never over rows, and nothing synchronises with the host.
"""

from __future__ import annotations

import torch

from .. import _validation as c
from ..laws.token import residual_is_empty
from ..laws.tree import TreeShape, tree_shape
from ..sampling import inverse_cdf
from .result import VerifyResult


def _check(tree_tokens, draft_probs, target_probs, shape: TreeShape, validate: bool) -> torch.Tensor:
    c.check_tensor("target_probs", target_probs, dtypes=c.PROB_DTYPES, ndim=3)
    c.check_tensor("tree_tokens", tree_tokens, dtypes=c.TOKEN_DTYPES, ndim=2)
    batch, vocab = tree_tokens.shape[0], target_probs.shape[-1]
    c.check_vocabulary("target_probs", vocab)
    c.check_shape("tree_tokens", tree_tokens, (batch, shape.num_nodes), "B, N")
    c.check_shape("target_probs", target_probs, (batch, shape.num_nodes, vocab), "B, N, V")
    if draft_probs is not None:
        c.check_tensor("draft_probs", draft_probs, dtypes=(target_probs.dtype,), ndim=3)
        c.check_shape("draft_probs", draft_probs, (batch, shape.num_nodes, vocab), "B, N, V")
    c.check_same_device(tree_tokens=tree_tokens, draft_probs=draft_probs, target_probs=target_probs)
    tokens = tree_tokens.long()
    if validate and shape.num_nodes > 1:
        checks = c.DeferredChecks()
        tol = c.sum_tolerance(target_probs.dtype)
        c.add_token_range_check(checks, "tree_tokens", tokens[:, 1:], vocab)
        c.add_probability_checks(checks, "target_probs", target_probs, tol)
        parent = torch.tensor(shape.parents[1:], device=tokens.device)
        if draft_probs is not None:
            c.add_probability_checks(checks, "draft_probs", draft_probs[:, [n for n in range(shape.num_nodes) if shape.children[n]]], tol)
            proposal = draft_probs[:, parent].gather(-1, tokens[:, 1:].clamp(0, vocab - 1).unsqueeze(-1)).squeeze(-1)
            c.add_proposal_check(checks, tokens[:, 1:], proposal)
        else:
            for node, kids in enumerate(shape.children):
                if len(kids) > 1:
                    ordered = tokens[:, list(kids)].sort(-1).values
                    checks.add((ordered[:, 1:] != ordered[:, :-1]).all(),
                               lambda node=node: f"the children of node {node} must be distinct tokens in every row (F15: draft_probs None)")
        checks.raise_if_failed()
    return tokens


def tree_step(tree_tokens, draft_probs, target_probs, uniforms, shape: TreeShape, pad_id: int) -> VerifyResult:
    """The algorithm (see the module docstring).  tree_tokens (B, N) int64; uniforms (B, D*W + 1) float64.

    r is kept unnormalised, with its mass beside it (1 while r is still p): child s is accepted iff
    u_s * q(x_s) * mass < r(x_s), and the last token is drawn from r itself - on a chain this is the
    token rule's arithmetic, step for step."""
    batch, vocab = tree_tokens.shape[0], target_probs.shape[-1]
    device, dtype = target_probs.device, target_probs.dtype
    rows = torch.arange(batch, device=device)
    kids_of = shape.child_table(device)  # (N, W)
    width, depth = max(shape.width, 1), shape.max_depth
    node = torch.zeros(batch, dtype=torch.int64, device=device)  # where each row's walk is
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    num_accepted = torch.zeros(batch, dtype=torch.int64, device=device)
    tokens = torch.full((batch, depth + 1), pad_id, dtype=torch.int64, device=device)
    final_rows = torch.zeros((batch, vocab), dtype=dtype, device=device)  # the row each row's last token is drawn from
    empty_flag = torch.zeros(batch, dtype=torch.bool, device=device)
    for d in range(depth + 1):
        r = target_probs[rows, node]  # (B, V): r <- p at the current node
        mass = torch.ones(batch, dtype=torch.float64, device=device)
        q = None if draft_probs is None else draft_probs[rows, node]
        kids = kids_of[node]  # (B, W)
        leaf = (kids < 0).all(-1)
        chosen = torch.full((batch,), -1, dtype=torch.int64, device=device)
        for s in range(width if d < depth else 0):
            kid = kids[:, s]
            testing = ~done & ~leaf & (kid >= 0) & (chosen < 0)
            x = tree_tokens.gather(1, kid.clamp_min(0).unsqueeze(-1))  # (B, 1)
            q_row = torch.zeros_like(r).scatter_(1, x, 1.0) if q is None else q  # F15: the point mass on x_s
            q_x = q_row.gather(1, x).squeeze(-1).double()
            r_x = r.gather(1, x).squeeze(-1).double()
            accept = testing & (uniforms[:, d * width + s] * q_x * mass < r_x)  # (F14/F15), strict (E3)
            chosen = torch.where(accept, kid, chosen)
            residual = (r - q_row * mass.to(dtype).unsqueeze(-1)).clamp_min(0)  # (r - mass q)+: r is unnormalised
            total = residual.sum(-1)
            empty = residual_is_empty(total / mass.to(dtype), dtype)  # E2: rounding noise of the rows' dtype
            update = testing & ~accept & ~empty
            empty_flag = empty_flag | (testing & ~accept & empty)
            r = torch.where(update.unsqueeze(-1), residual, r)
            mass = torch.where(update, total.double(), mass)
        stop = ~done & (chosen < 0)  # a leaf (the bonus row) or every child rejected: draw from r
        final_rows = torch.where(stop.unsqueeze(-1), r, final_rows)
        num_accepted = torch.where(stop, d, num_accepted)
        moved = ~done & (chosen >= 0)
        token = tree_tokens.gather(1, chosen.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        tokens[:, d] = torch.where(moved, token, tokens[:, d])
        node = torch.where(moved, chosen, node)
        done = done | stop
    drawn = inverse_cdf(final_rows, uniforms[:, -1], validate=False)  # (F4) the step's last token
    tokens = tokens.scatter(1, num_accepted.unsqueeze(-1), drawn.unsqueeze(-1))
    return VerifyResult(num_accepted=num_accepted, tokens=tokens, residual_empty=empty_flag)


def verify_tree_with_uniforms(tree_tokens, parents, draft_probs, target_probs, uniforms, *, pad_id: int = -1,
                              validate: bool = True) -> VerifyResult:
    """:func:`verify_tree` on explicit uniforms (B, D*W + 1) float64 in [0, 1) (layout in the module docstring)."""
    shape = tree_shape(parents)
    tokens = _check(tree_tokens, draft_probs, target_probs, shape, validate)
    columns = shape.max_depth * max(shape.width, 1) + 1
    c.check_tensor("uniforms", uniforms, dtypes=(torch.float64,), ndim=2)
    c.check_shape("uniforms", uniforms, (tokens.shape[0], columns), "B, D*W + 1")
    return tree_step(tokens, draft_probs, target_probs, uniforms, shape, c.as_pad_id(pad_id))


def verify_tree(tree_tokens: torch.Tensor, parents, draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                generator: torch.Generator, *, pad_id: int = -1, validate: bool = True) -> VerifyResult:
    """Verify a batch of draft trees (the module docstring): ``tokens`` (B, D+1) are the accepted path's
    tokens, then one token drawn from the last residual (or a leaf's target row), then ``pad_id``;
    ``num_accepted`` (B,) the accepted path's length.  All randomness from ``generator``."""
    shape = tree_shape(parents)
    tokens = _check(tree_tokens, draft_probs, target_probs, shape, validate)
    c.check_generator(generator, target_probs.device)
    columns = shape.max_depth * max(shape.width, 1) + 1
    uniforms = torch.rand((tokens.shape[0], columns), dtype=torch.float64, device=target_probs.device, generator=generator)
    return tree_step(tokens, draft_probs, target_probs, uniforms, shape, c.as_pad_id(pad_id))
