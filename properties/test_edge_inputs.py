"""Edge inputs found by the fuzzing trial of issue 23: each test failed on the code before its fix.

Integer token dtypes compared in int64, B = 0 at any V, :func:`specdec.inverse_cdf` validated,
counts totalled exactly, F22 exact near alpha = 1 and one E2 rule, 1-D only where 1-D is meant,
no hang inside a documented limit (a cap refused at once instead), float overflow as a named
ValueError, and one rule for prompts.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from fractions import Fraction

import numpy as np
import pytest
import torch

import specdec as sd
from specdec import _checks as c
from specdec.laws import block, chain, multidraft as md, schemes, speedup
from specdec.stats import goodness_of_fit, monte_carlo_gof, required_sample_size

INT_DTYPES = [getattr(torch, n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64") if hasattr(torch, n)]


def uniform_rows(*shape, dtype=torch.float64):
    return torch.full(shape, 1.0 / shape[-1], dtype=dtype)


@contextlib.contextmanager
def within(seconds: float):
    """Fail (TimeoutError) instead of hanging when the body runs past ``seconds``."""

    def expire(*_):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------ 1. every integer dtype, compared in int64


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_token_ids_of_every_integer_dtype_are_compared_in_int64(dtype):
    bits = torch.iinfo(dtype).bits
    vocab = 2**bits if bits <= 16 else 300  # V itself wraps to 0 in the ids' own dtype
    tokens = torch.tensor([[5]], dtype=dtype)
    target, draft = uniform_rows(1, 2, vocab), uniform_rows(1, 1, vocab)
    for verifier in (sd.verify_tokens, sd.verify_block):
        got = verifier(tokens, draft, target, torch.Generator().manual_seed(1))
        want = verifier(tokens.long(), draft, target, torch.Generator().manual_seed(1))
        assert torch.equal(got.tokens, want.tokens) and got.tokens.dtype == torch.int64
    assert torch.equal(sd.verify_greedy(tokens, target).tokens, sd.verify_greedy(tokens.long(), target).tokens)
    row = uniform_rows(1, vocab)
    for verifier in (sd.verify_kseq, sd.verify_mss):
        got = verifier(tokens, row, row, torch.Generator().manual_seed(2))
        assert got.token.tolist() == verifier(tokens.long(), row, row, torch.Generator().manual_seed(2)).token.tolist()
    if dtype.is_signed:
        with pytest.raises(ValueError, match=r"draft_tokens has token id -3 at index \(0, 0\), outside \[0, 300\)"):
            sd.verify_tokens(torch.tensor([[-3]], dtype=dtype), uniform_rows(1, 1, 300), uniform_rows(1, 2, 300), torch.Generator())
    with pytest.raises(ValueError, match=r"draft_tokens has token id 9 at index \(0, 0\), outside \[0, 7\)"):
        sd.verify_tokens(torch.tensor([[9]], dtype=dtype), uniform_rows(1, 1, 7), uniform_rows(1, 2, 7), torch.Generator())


# ------------------------------------------------------------------ 10. one rule for prompts (issue item 8)


PROMPTS = [[1, 2], (3,), np.array([1, 2]), np.array([4], dtype=np.uint8), torch.tensor([5, 6]), [np.int64(2)],
           [], np.array([]), [9], [1.5], np.array([1.5]), torch.tensor([[1, 2]]), "12", [True], 7, torch.tensor([1.0])]


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"{type(p).__name__}:{p!r:.20}")
def test_one_prompt_rule_for_generate_and_sequence_law(prompt, tiny_target_and_draft):
    target, draft = tiny_target_and_draft
    outcomes = []
    for call in (lambda: sd.generate(target, draft, [prompt], max_new_tokens=1, num_draft_tokens=1, seed=0),
                 lambda: sd.sequence_law(target, prompt, 1)):
        try:
            call()
            outcomes.append("ok")
        except (TypeError, ValueError) as error:
            outcomes.append(type(error).__name__)
            assert "prompt" in str(error), error
    assert outcomes[0] == outcomes[1], (prompt, outcomes)
    law = sd.sequence_law(target, prompt, 1) if outcomes[1] == "ok" else None
    if law is not None:
        plain = sd.sequence_law(target, [int(t) for t in (prompt.tolist() if hasattr(prompt, "tolist") else prompt)], 1)
        assert law.sequences == plain.sequences and np.array_equal(law.probs, plain.probs)
