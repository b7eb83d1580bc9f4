"""The fused token verifier (one Triton kernel) emits exactly the reference's tokens on the same
uniforms.  Without a GPU the kernel runs in Triton's interpreter on CPU tensors (the root conftest
sets TRITON_INTERPRET=1 before triton is imported); on CUDA it runs compiled, captured in a graph."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import specdec as sd
from specdec.strategies import verifier_inputs

fused = pytest.importorskip("specdec.verify.fused")
if fused.tl is None:
    pytest.skip("triton is not installed here (pip install triton): the fused kernel cannot run", allow_module_level=True)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def both(inputs, uniforms, dtype, device=DEVICE):
    draft = inputs["draft_probs"]
    args = (
        inputs["draft_tokens"].to(device),
        None if draft is None else draft.to(dtype).to(device),
        inputs["target_probs"].to(dtype).to(device),
        uniforms.to(device),
    )
    return sd.verify_tokens_with_uniforms(*args), fused.verify_tokens_fused_with_uniforms(*args)


@settings(max_examples=60 if DEVICE == "cpu" else 400, deadline=None)
@given(verifier_inputs(max_batch=4, max_draft=4, max_size=40), st.integers(0, 2**32 - 1), st.sampled_from([torch.float64, torch.float32]))
def test_fused_kernel_emits_the_reference_tokens(inputs, seed, dtype):
    batch, num_draft = inputs["draft_tokens"].shape
    uniforms = torch.rand(batch, num_draft + 1, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    reference, kernel = both(inputs, uniforms, dtype)
    assert torch.equal(reference.tokens, kernel.tokens), (reference.tokens, kernel.tokens)
    assert torch.equal(reference.num_accepted, kernel.num_accepted)
    assert torch.equal(reference.residual_empty, kernel.residual_empty)


@pytest.mark.parametrize("vocab", [1, 1025, 3000, 8193, 20000])
def test_large_vocabularies_and_edge_rows(vocab):
    """The kernel walks the vocabulary in blocks of up to BLOCK = 8192 entries (a power of two at
    least 128 below that): a vocabulary of one, one block of 2048 and of 4096, one entry past a full
    block (8193) and several blocks (20000) - the multi-block path runs in Triton's interpreter on a
    CPU too; E2 rows; the bonus row."""
    g = torch.Generator().manual_seed(vocab)
    target = torch.rand(6, 3, vocab, generator=g, dtype=torch.float64).softmax(-1)
    draft = torch.rand(6, 2, vocab, generator=g, dtype=torch.float64).softmax(-1)
    draft[0] = target[0, :2]  # p == q on row 0: an empty residual when rejected (E2)
    tokens = torch.multinomial(draft.reshape(-1, vocab), 1, generator=g).reshape(6, 2)
    uniforms = torch.rand(6, 3, dtype=torch.float64, generator=g)
    uniforms[1, :2] = 0.0  # row 1 accepts everything: the bonus row
    for dtype in (torch.float64, torch.float32):
        inputs = {"draft_tokens": tokens, "draft_probs": draft, "target_probs": target}
        reference, kernel = both(inputs, uniforms, dtype)
        assert torch.equal(reference.tokens, kernel.tokens) and torch.equal(reference.num_accepted, kernel.num_accepted)


def test_same_generator_same_tokens_as_the_reference():
    g = torch.Generator(device=DEVICE)
    target = torch.rand(8, 4, 50, dtype=torch.float64).softmax(-1).to(DEVICE)
    draft = torch.rand(8, 3, 50, dtype=torch.float64).softmax(-1).to(DEVICE)
    tokens = torch.multinomial(draft.reshape(-1, 50), 1).reshape(8, 3)
    reference = sd.verify_tokens(tokens, draft, target, g.manual_seed(5))
    kernel = fused.verify_tokens_fused(tokens, draft, target, g.manual_seed(5))
    assert torch.equal(reference.tokens, kernel.tokens)
    from specdec.schemes import scheme_of

    assert scheme_of(fused.verify_tokens_fused).name == "token"  # the token scheme's fused twin, by the registry


@pytest.mark.gpu
def test_fused_step_captures_in_a_cuda_graph():
    """No host synchronisation in the step: it captures in a CUDA graph and replays exactly."""
    g = torch.Generator(device="cuda").manual_seed(0)
    target = torch.rand(64, 9, 32000, device="cuda").softmax(-1)
    draft = torch.rand(64, 8, 32000, device="cuda").softmax(-1)
    tokens = torch.multinomial(draft.reshape(-1, 32000), 1, generator=g).reshape(64, 8)
    fused.verify_tokens_fused(tokens, draft, target, g, validate=False)  # compile and warm up
    graph = torch.cuda.CUDAGraph()
    graph.register_generator_state(g)
    with torch.cuda.graph(graph):
        result = fused.verify_tokens_fused(tokens, draft, target, g, validate=False)
    g.manual_seed(1)
    graph.replay()
    replayed = result.tokens.clone()
    expected = sd.verify_tokens(tokens, draft, target, g.manual_seed(1), validate=False)
    assert torch.equal(replayed, expected.tokens)
