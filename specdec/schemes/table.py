"""``specdec compare``'s table: every registered scheme's acceptance next to its proven optimum, for
one (target, draft) pair, read from the schemes' records.

* one draft per position: the token rule (F1) = the optimum 1 - TV (F5/F6);
* k i.i.d. drafts: K-SEQ (F11-F13) and SpecInfer MSS (F14) vs alpha*_k (F9-F10); MSS over the draft's
  top-k tokens as distinct children (F15) for reference (a different proposal: alpha*_k does not bound it);
* a chain of K positions with this pair at every position: expected accepted tokens of token
  verification (F26) and block verification (F20) vs the joint-min bound.
"""

from __future__ import annotations

from .._validation import as_int, as_law_pair
from ..laws import block
from ..laws.chain import MAX_ENUMERATED_DRAFT_TOKENS, MAX_ENUMERATED_PREFIXES
from .registry import get, names

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
    """Rows of {scheme, size (k or K), value, optimum (None where no optimum applies)}, scheme by scheme
    in registration order (each record's ``compare``).

    ``max_drafts`` is at most :data:`MAX_TABLE_DRAFTS`; the chain rows of ``num_draft_tokens`` K
    enumerate 1 + V + ... + V^K prefixes, refused beyond the enumeration caps (:func:`chain_size_error`).
    """
    target, draft = as_law_pair(target_probs, draft_probs, ndim=1)
    max_drafts = as_int("max_drafts", max_drafts, minimum=1, maximum=MAX_TABLE_DRAFTS)
    k_chain = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    error = chain_size_error(target.shape[0], k_chain) if k_chain else None
    if error:
        raise ValueError(f"num_draft_tokens={k_chain} {error}; use a smaller K or V")
    rows = []
    for name in names():
        scheme = get(name)
        if scheme.compare is not None:
            rows.extend(scheme.compare(target, draft, max_drafts, k_chain))
    return rows
