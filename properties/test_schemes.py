"""A verification scheme is one record: the registry holds every built-in one, refuses a record that
lacks a piece (naming it), and everything that reads schemes - generate, F28, the CLI's defaults,
``specdec compare`` - picks up a newly registered one without any other edit."""

import ast
from pathlib import Path

import pytest
import torch

import specdec as sd
from specdec import schemes
from specdec.adapters import flashinfer, hf, sglang
from specdec.adapters import vllm as vllm_adapter
from specdec.cli.defaults import scheme_subjects
from specdec.schemes import Scheme, SchemeError

ROOT = Path(__file__).resolve().parent.parent


def test_the_built_in_schemes_and_what_implements_them():
    assert schemes.names() == ["token", "block", "kseq", "mss", "tree"]
    assert [schemes.get(n).shape for n in schemes.names()] == ["chain", "chain", "multidraft", "multidraft", "tree"]
    assert schemes.scheme_of(sd.verify_tokens).name == "token" and schemes.scheme_of(sd.verify_tokens_with_uniforms).name == "token"
    assert schemes.scheme_of(sd.verify_block).name == "block" and schemes.scheme_of(sd.verify_mss).name == "mss"
    for adapter in (vllm_adapter.vllm_rejection_sample, flashinfer.flashinfer_chain_speculative_sampling, hf.hf_speculative_sampling,
                    sglang.sglang_chain_target_only):
        assert schemes.scheme_of(adapter).name == "token", adapter  # declared by the adapter, read from the registry
    assert schemes.scheme_of(sglang.sglang_tree_target_only).name == "tree"
    assert schemes.scheme_of(lambda *a: None) is None
    from specdec.verify import fused

    assert schemes.scheme_of(fused.verify_tokens_fused).name == "token"  # the fused twin, by its path in the record


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(moments=None), "scheme 'bad' \\(chain\\) lacks 'moments', which the engine reads for every chain scheme"),
        (dict(step_law=None), "lacks 'step_law'"),
        (dict(cases=()), "lacks 'cases'"),
        (dict(cases=("tree-iid",)), "unknown case families \\['tree-iid'\\] for a chain scheme"),
        (dict(shape="graph"), "shape must be one of"),
        (dict(name="token"), "a scheme named 'token' is already registered"),
        (dict(name="not a name"), "identifier-like"),
        (dict(fused="nowhere"), "fused must be 'module:attr'"),
    ],
)
def test_a_record_that_lacks_a_piece_is_refused_naming_it(changes, message):
    token = schemes.get("token")
    fields = dict(name="bad", shape="chain", verifier=token.verifier, step_law=token.step_law, moments=token.moments, cases=("chain",))
    fields.update(changes)
    with pytest.raises(SchemeError, match=message):
        schemes.register(Scheme(**fields))
    assert "bad" not in schemes.names()


@pytest.fixture
def copied_token_rule():
    """A new chain scheme, registered from outside the library: the token rule under another name."""

    def verify_copy(draft_tokens, draft_probs, target_probs, generator):
        return sd.verify_tokens(draft_tokens, draft_probs, target_probs, generator)

    token = schemes.get("token")
    scheme = schemes.register(Scheme(name="token_copy", shape="chain", verifier=verify_copy, summary="the token rule again",
                                     step_law=token.step_law, moments=token.moments, cases=("token", "chain"),
                                     compare=lambda t, d, m, k: [dict(scheme="token copy", size=1, value=float(torch.minimum(t, d).sum()), optimum=None)]))
    yield scheme
    schemes.unregister("token_copy")


def test_a_new_scheme_is_read_by_every_consumer_without_another_edit(copied_token_rule):
    from fixtures.models import tiny_pair
    from specdec.decoding import ModelDraft, SpeculativeDecoder

    target, draft = tiny_pair()
    out = sd.generate(target, ModelDraft(draft), [[1, 2, 3]], max_new_tokens=4, num_draft_tokens=2, seed=0, verifier="token_copy")
    assert len(out.tokens[0]) == 4
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, verifier="token_copy")
    assert decoder.acceptance_rule == "token_copy"
    report = sd.check_decoder(decoder, target, [[1, 2, 3]], length=1, n=200, max_new_tokens=3)
    assert any(c.name.startswith("tokens per step") for c in report.checks), report.format()  # F28 through its moments
    callable_decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, verifier=copied_token_rule.verifier)
    assert callable_decoder.acceptance_rule == "token_copy"
    assert any(row["scheme"] == "token copy" for row in schemes.scheme_table([0.5, 0.5], [0.4, 0.6]))
    args = type("Args", (), {"only": None})()
    assert "token_copy" in [name for name, _ in scheme_subjects(args, {}, {})]  # `specdec check`'s defaults


def test_an_unknown_rule_is_said_where_f28_would_apply():
    from fixtures.models import tiny_pair
    from specdec.decoding import ModelDraft, SpeculativeDecoder

    target, draft = tiny_pair()
    decoder = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, verifier=lambda a, b, c, g: sd.verify_tokens(a, b, c, g))
    report = sd.check_decoder(decoder, target, [[1, 2, 3]], length=1, n=100, max_new_tokens=3)
    assert any("implements no registered chain scheme" in note and "specdec.schemes.declare" in note for note in report.notes)
    with pytest.raises(ValueError, match="'tree' is not a chain scheme; registered: token, block"):
        sd.generate(target, ModelDraft(draft), [[1]], max_new_tokens=2, num_draft_tokens=1, seed=0, verifier="tree")


TREE_NAMES = ("verify_tree", "verify_tree_with_uniforms", "tree_step_law", "tree_decoder_law", "tree_step_moments", "schemes.tree")
TREE_FILES = {"specdec/verify/tree.py", "specdec/laws/tree.py", "specdec/schemes/tree.py", "specdec/schemes/__init__.py"}


def test_the_tree_scheme_is_named_only_in_its_own_files_and_its_registration():
    """What a new scheme costs: its verifier, its law, its record, one registration line (and its tests).
    The tree *shape* it introduced (the TreeVerifier Protocol, tree cases, their driver) reads only the
    topology (``laws.tree.tree_shape``), which every later tree scheme shares."""
    named = set()
    for path in (ROOT / "specdec").rglob("*.py"):
        text = path.read_text()
        names = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
        names |= {node.attr for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Attribute)}
        names |= {node.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.FunctionDef)}
        imported = {a.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ImportFrom) for a in node.names}
        if (names | imported) & set(TREE_NAMES[:-1]) or (path.parent.name == "schemes" and "tree" in imported):
            named.add(str(path.relative_to(ROOT)))
    assert named == TREE_FILES, named
