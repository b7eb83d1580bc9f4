"""Which verifier the decoding loop calls, and what it must return.

* :func:`select_verifier` - a registered chain scheme's verifier by name (:mod:`specdec.schemes`; its
  fused twin on CUDA when it has one), or the caller's TokenVerifier;
* :func:`check_outcome` - every step, what the verifier returned against the TokenVerifier contract,
  so a third party's verifier cannot corrupt the output silently.
"""

from __future__ import annotations

import torch

from ..schemes import get as get_scheme
from ..schemes import load_fused, names
from ..verify.result import read_verification


def select_verifier(verifier, device: torch.device, fused: bool | None):
    """The verifier a registered chain scheme's name or a callable stands for; a scheme with a fused
    twin (the token rule) uses it on CUDA when asked or available."""
    if fused is not None and not isinstance(fused, bool):
        raise TypeError(f"fused must be None, True or False, got {fused!r}")
    if not isinstance(verifier, str):
        if not callable(verifier):
            raise ValueError(f"verifier must name a chain scheme ({', '.join(names('chain'))}) or be a callable, got {verifier!r}")
        return verifier
    try:
        scheme = get_scheme(verifier, shape="chain")
    except ValueError as error:
        raise ValueError(f"verifier: {error} (or pass a TokenVerifier callable)") from None
    twin = load_fused(scheme, device) if fused is not False and device.type == "cuda" else None
    if twin is not None:
        return twin
    if fused:
        raise ValueError(f"fused=True needs a scheme with a fused twin on a CUDA device with triton; "
                         f"{scheme.name!r} on {device}: {'no twin' if scheme.fused is None else 'triton or CUDA missing'}")
    return scheme.verifier


def check_outcome(result, draft_tokens: torch.Tensor, vocab: int) -> tuple[list[int], list[list[int]]]:
    """What a (possibly custom) verifier returned, checked against the TokenVerifier contract:
    the accepted counts in [0, K], the accepted tokens equal to the drafts, the last token in [0, V)."""
    batch, k = draft_tokens.shape
    tokens, accepted = read_verification(result, batch, k)
    accepted_list, emitted = accepted.tolist(), tokens.tolist()
    drafts = draft_tokens.tolist()
    for i, n in enumerate(accepted_list):
        if not 0 <= n <= k:
            raise ValueError(f"the verifier returned num_accepted[{i}] = {n!r}, outside [0, {k}]")
        block = emitted[i][: n + 1]
        if block[:n] != drafts[i][:n]:
            raise ValueError(f"the verifier's row {i} accepted {n} drafts but emitted {block[:n]}, not the drafts {drafts[i][:n]}")
        if not 0 <= block[n] < vocab:
            raise ValueError(f"the verifier emitted token {block[n]!r} in row {i}, outside the vocabulary [0, {vocab})")
    return accepted_list, emitted
