"""SGLang's tree speculative sampling (target-only) behind the TokenVerifier and TreeVerifier Protocols.

Written against **sgl-kernel 0.3.x** (as called by SGLang 0.5's EAGLE worker),
``sgl_kernel.tree_speculative_sampling_target_only``::

    (predicts (B*N,) int32 out, accept_index (B, S) int32 out, accept_token_num (B,) int32 out,
     candidates (B, N) int64, retrive_index (B, N) int64, retrive_next_token (B, N) int64,
     retrive_next_sibling (B, N) int64, uniform_samples (B, N) float32,
     uniform_samples_for_final_sampling (B,) float32, target_probs (B, N, V) float32,
     draft_probs (B, N, V) float32, threshold_single=1.0, threshold_acc=1.0, deterministic=True)

The tree has N nodes per row; node 0 is the last verified token, ``retrive_next_token`` is a node's
first child and ``retrive_next_sibling`` its next sibling (-1: none), ``retrive_index`` the node's
slot in the flat ``predicts``, and ``target_probs[b, i]`` the target distribution after node i.
The kernel is *target-only*: it treats drafts as deterministic, accepting the i-th sibling when
one uniform falls below the target mass of the siblings tried so far (F15's distinct children),
and draws the final token from the target with the rejected siblings removed.  So it is lossless
for point-mass drafts (``draft_probs=None``, E5) and the adapter refuses a draft distribution:
given sampled drafts the kernel would accept with p(x) instead of min(1, p(x)/q(x)).

The caller supplies the uniforms; both adapters draw them from the caller's generator.
``threshold_single`` and ``threshold_acc`` stay at 1 (below 1 the kernel accepts more, lossy L2).

* :func:`sglang_chain_target_only` - a chain of K drafts (N = K + 1, no siblings): a TokenVerifier;
* :func:`sglang_tree_target_only` - any tree of distinct deterministic children: a TreeVerifier.
"""

from __future__ import annotations

import torch

from .._validation import as_pad_id, check_generator
from ..laws.tree import tree_shape
from ..schemes import declare
from ..verify import VerifyResult
from ._common import check_adapter_inputs, import_peer

TESTED_SGL_KERNEL = "0.3.x"


def _kernel():
    return import_peer("sgl_kernel", "tree_speculative_sampling_target_only", f"sgl-kernel {TESTED_SGL_KERNEL}")


def _refuse_draft_probs(draft_probs) -> None:
    if draft_probs is not None:
        raise ValueError(
            "draft_probs must be None: SGLang's target-only tree kernel treats drafts as deterministic "
            "(point-mass, E5) and is not a verifier for sampled drafts"
        )


def _run_tree(kernel, candidates, next_token, next_sibling, target_rows, spec_steps, generator):
    """Call the kernel on B trees of N nodes; returns (predicts (B, N), accept_index (B, S), accepted (B,))."""
    batch, nodes = candidates.shape
    device = candidates.device
    slots = torch.arange(batch * nodes, dtype=torch.int64, device=device).reshape(batch, nodes)
    predicts = torch.full((batch * nodes,), -1, dtype=torch.int32, device=device)
    accept_index = torch.full((batch, spec_steps), -1, dtype=torch.int32, device=device)
    accept_token_num = torch.zeros(batch, dtype=torch.int32, device=device)
    coins = torch.rand((batch, nodes), dtype=torch.float32, device=device, generator=generator)
    final_coins = torch.rand((batch,), dtype=torch.float32, device=device, generator=generator)
    kernel(
        predicts, accept_index, accept_token_num,
        candidates.contiguous(), slots, next_token.contiguous(), next_sibling.contiguous(),
        coins, final_coins,
        target_rows.to(torch.float32).contiguous(), torch.zeros(target_rows.shape, dtype=torch.float32, device=device),
        threshold_single=1.0, threshold_acc=1.0, deterministic=True,
    )
    return predicts.reshape(batch, nodes), accept_index, accept_token_num


def sglang_chain_target_only(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    kernel=None,
    pad_id: int = -1,
    validate: bool = True,
) -> VerifyResult:
    """The kernel on a chain of K point-mass drafts, with :func:`specdec.verify_tokens`' signature and result.

    ``kernel``: the function to call (default: sgl-kernel's; a fake with its signature in tests).
    """
    pad_id = check_adapter_inputs(draft_tokens, draft_probs, target_probs, generator, pad_id, validate)
    _refuse_draft_probs(draft_probs)
    device = target_probs.device
    batch, num_draft = draft_tokens.shape
    nodes = num_draft + 1
    candidates = torch.cat([torch.zeros(batch, 1, dtype=torch.int64, device=device), draft_tokens.long()], 1)
    position = torch.arange(nodes, dtype=torch.int64, device=device)
    next_token = torch.where(position < num_draft, position + 1, -1).expand(batch, nodes)
    next_sibling = torch.full((batch, nodes), -1, dtype=torch.int64, device=device)
    predicts, accept_index, accepted = _run_tree(
        kernel or _kernel(), candidates, next_token, next_sibling, target_probs, nodes, generator
    )
    num_accepted = accepted.to(torch.int64)
    # accept_index holds the flat slots of the accepted path (node 0 first); predicts at a node's
    # slot is the token that follows it, so the emitted tokens are predicts along the path.
    path = accept_index.to(torch.int64)
    emitted = predicts.reshape(-1)[path.clamp(min=0)].to(torch.int64)
    keep = position.unsqueeze(0) <= num_accepted.unsqueeze(1)
    tokens = torch.where(keep, emitted, pad_id)
    return VerifyResult(num_accepted=num_accepted, tokens=tokens)


def sglang_tree_target_only(
    tree_tokens: torch.Tensor,
    parents,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    generator: torch.Generator,
    *,
    kernel=None,
    pad_id: int = -1,
) -> VerifyResult:
    """The kernel on a whole draft tree, at its real shape: a :class:`specdec.protocols.TreeVerifier`
    for distinct deterministic children (``draft_probs`` must be None, F15).

    ``parents`` as :func:`specdec.laws.tree.tree_shape` reads it; the adapter builds the kernel's
    first-child and next-sibling links from it and reads the emitted path back from ``accept_index``.
    """
    _refuse_draft_probs(draft_probs)
    shape = tree_shape(parents)
    if not isinstance(tree_tokens, torch.Tensor) or tree_tokens.ndim != 2 or tree_tokens.shape[1] != shape.num_nodes:
        raise ValueError(f"tree_tokens must be (B, N) with N = {shape.num_nodes}, got {getattr(tree_tokens, 'shape', type(tree_tokens).__name__)}")
    if not isinstance(target_probs, torch.Tensor) or target_probs.ndim != 3 or target_probs.shape[:2] != tree_tokens.shape:
        raise ValueError(f"target_probs must be (B, N, V) for tree_tokens {tuple(tree_tokens.shape)}, got {getattr(target_probs, 'shape', None)}")
    device = target_probs.device
    check_generator(generator, device)
    pad_id = as_pad_id(pad_id)
    batch, nodes = tree_tokens.shape
    first_child = [kids[0] if kids else -1 for kids in shape.children]
    next_sibling = [-1] * nodes
    for kids in shape.children:
        for a, b in zip(kids, kids[1:]):
            next_sibling[a] = b
    links = lambda values: torch.tensor(values, dtype=torch.int64, device=device).expand(batch, nodes)  # noqa: E731
    depth = shape.max_depth
    predicts, accept_index, accepted = _run_tree(kernel or _kernel(), tree_tokens.long(), links(first_child), links(next_sibling),
                                                 target_probs, depth + 1, generator)
    num_accepted = accepted.to(torch.int64)
    emitted = predicts.reshape(-1)[accept_index.to(torch.int64).clamp(min=0)].to(torch.int64)  # the token after each path node
    keep = torch.arange(depth + 1, device=device).unsqueeze(0) <= num_accepted.unsqueeze(1)
    return VerifyResult(num_accepted=num_accepted, tokens=torch.where(keep, emitted, pad_id))


declare(sglang_chain_target_only, "token")  # the token rule (F2-F4): F28 and the engine read it from the registry
declare(sglang_tree_target_only, "tree")  # recursive rejection over distinct children (F15)
