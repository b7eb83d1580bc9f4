"""Acceptance of every verification scheme next to its proven optimum, for one (target, draft) pair.

* one draft per position: the token rule (F1) = the optimum 1 - TV (F5/F6);
* k i.i.d. drafts: K-SEQ (F11-F13) and SpecInfer MSS (F14) vs alpha*_k (F9-F10); MSS over
  the draft's top-k tokens as distinct children (F15) for reference (a different
  proposal, so alpha*_k does not bound it);
* a chain of K positions with this pair at every position: expected accepted tokens of
  token verification (F26) and block verification (F20) vs the joint-min bound.
"""

from __future__ import annotations

import torch

from .._checks import as_int, as_law_pair
from . import block
from .chain import MAX_ENUMERATED_DRAFT_TOKENS, MAX_ENUMERATED_PREFIXES, acceptance_profile
from .multidraft import distinct_children_law, kseq_acceptance, mss_acceptance
from .transport import multidraft_optimum

# k = 2..max_drafts, four rows each: about 3 s at the cap for the catalogue's largest pair (V = 8193)
# on a 2-core CPU.  `specdec compare --max-drafts` refuses more, before any work.
MAX_TABLE_DRAFTS = 64


def chain_size_error(vocab: int, num_draft_tokens: int) -> str | None:
    """Why the chain rows cannot be enumerated for V and K within the caps of F26 and F20
    (:data:`specdec.laws.chain.MAX_ENUMERATED_PREFIXES`, :data:`specdec.laws.block.MAX_ENUMERATION`), or None."""
    limit = min(MAX_ENUMERATED_PREFIXES, block.MAX_ENUMERATION // vocab)
    prefixes, level = 0, 1
    for _ in range(num_draft_tokens + 1):  # 1 + V + ... + V^K, stopped at the limit
        prefixes, level = prefixes + level, level * vocab
        if prefixes > limit or num_draft_tokens > MAX_ENUMERATED_DRAFT_TOKENS:
            return f"needs V^K = {vocab}^{num_draft_tokens} prefixes (at most {limit:,} in all for V = {vocab})"
    return None


def scheme_table(target_probs, draft_probs, *, max_drafts: int = 3, num_draft_tokens: int = 2) -> list[dict]:
    """Rows of {scheme, size (k or K), value, optimum (None where no optimum applies)}.

    ``max_drafts`` is at most :data:`MAX_TABLE_DRAFTS`; the chain rows of ``num_draft_tokens`` K
    enumerate 1 + V + ... + V^K prefixes, refused beyond the enumeration caps (:func:`chain_size_error`).
    """
    target, draft = as_law_pair(target_probs, draft_probs, ndim=1)
    max_drafts = as_int("max_drafts", max_drafts, minimum=1, maximum=MAX_TABLE_DRAFTS)
    k_chain = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    vocab = target.shape[0]
    error = chain_size_error(vocab, k_chain) if k_chain else None
    if error:
        raise ValueError(f"num_draft_tokens={k_chain} {error}; use a smaller K or V")
    rows = [dict(scheme="token", size=1, value=float(torch.minimum(target, draft).sum()), optimum=multidraft_optimum(target, draft, 1))]
    for k in range(2, max_drafts + 1):
        optimum = multidraft_optimum(target, draft, k)
        rows.append(dict(scheme="K-SEQ", size=k, value=kseq_acceptance(target, draft, k), optimum=optimum))
        rows.append(dict(scheme="MSS iid", size=k, value=mss_acceptance(target, draft, k), optimum=optimum))
        if k <= vocab:
            children = draft.argsort(descending=True, stable=True)[:k].tolist()
            rows.append(dict(scheme="MSS top-k", size=k, value=distinct_children_law(target, children)[1], optimum=None))
    if k_chain:
        rows_t, rows_d = target.tolist(), draft.tolist()
        same_t, same_d = (lambda prefix: rows_t), (lambda prefix: rows_d)
        ideal = float(block.joint_min_ideal(same_t, same_d, k_chain, vocab))
        token = float(acceptance_profile(same_t, same_d, k_chain)[1:].sum())
        rows.append(dict(scheme="token chain", size=k_chain, value=token, optimum=ideal))
        rows.append(dict(scheme="block chain", size=k_chain, value=float(block.expected_accepted_block(same_t, same_d, k_chain, vocab)), optimum=ideal))
    return rows

