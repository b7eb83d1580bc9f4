"""``specdec check``'s embedded defaults: every registered built-in scheme's reference verifier at its
level (:mod:`specdec.schemes`), and three decoders on a tiny Llama pair: ours (whole sequences against the exact
law, F35), transformers' ``_speculative_sampling`` driving our loop and transformers' assisted generation (every
emitted token against the target's exact law, P1-P4 and P7: one transformers row or step at a time is too slow
for whole-sequence cells at this TV, not for per-token ones).  Decoders are planned for TV 0.02 at the least,
transformers' assisted generation for a per-token TV of 0.03 (it decodes one row at a time, about 0.1 s an answer of
16 tokens on a 2-core CPU: 0.02 took it 289 s of make check's 449, 0.03 about 130 s - the per-token TV the matrix
judges engines at, docs/matrix.md); ``--hf-budget`` puts transformers' subjects under a time budget instead (then a
verdict may be INCONCLUSIVE).
transformers' verifier alone over the catalogue's cases: ``specdec check specdec.adapters.hf:hf_speculative_sampling``
(about 1,500 samples/s: TV 0.2 in a minute)."""

from __future__ import annotations

import functools

DECODER_TV = 0.02
ASSISTED_TV = 0.03  # transformers' assisted generation, one row at a time (module docstring)
TOKEN_LENGTH = 16  # tokens per answer of the per-token subjects: every one is an observation
LEVELS = {"chain": "verifiers", "tree": "trees", "multidraft": "multidraft"}


def _children(scheme, prefix: str) -> tuple[str, ...]:
    return tuple(case.split("-", 1)[1] for case in scheme.cases if case.startswith(prefix))


def scheme_subjects(args, common: dict, planned: dict) -> list:
    """(name, run) for every registered scheme whose level ``--only`` selects, in registration order."""
    from ..conformance import check_multidraft, check_tree, check_verifier
    from ..schemes import get, names

    subjects = []
    for name in names():
        scheme = get(name)
        if args.only not in (None, LEVELS[scheme.shape]):
            continue
        label = f"specdec {scheme.verifier.__name__} ({scheme.name}: {scheme.summary})"
        if scheme.shape == "chain":
            run = lambda s=scheme, label=label: check_verifier(s.verifier, name=label, **planned, **common)  # noqa: E731
        elif scheme.shape == "multidraft":
            run = lambda s=scheme, label=label: check_multidraft(s.verifier, children=_children(s, "multidraft-"), name=label, **planned, **common)  # noqa: E731
        else:
            run = lambda s=scheme, label=label: check_tree(s.verifier, children=_children(s, "tree-"), name=label, **planned, **common)  # noqa: E731
        subjects.append((name, run))
    return subjects


def default_subjects(args, console) -> list:
    """(name, callable returning a Report) for the embedded defaults, in order."""
    common = dict(seed=args.seed, device=args.device, console=console, call_timeout=args.call_timeout or None,
                  family_alpha=args.family_alpha, **args.campaign)
    planned = dict(tv=args.tv) if args.budget is None else dict(tv=args.tv, time_budget=args.budget)
    subjects = scheme_subjects(args, common, planned)
    if args.only in (None, "decoders"):
        subjects += [(name, functools.partial(_decoder_subject, name, args, console)) for name in DECODERS]
    return subjects


DECODERS = ("ours", "hf-in-loop", "hf-assisted")
PROMPTS = [[1, 2, 3], [4, 5, 4, 5, 4]]
EOS = 7


def _decoder_subject(which: str, args, console):
    """One decoder subject on the tiny Llama pair: our loop against the exact sequence law (F35, F28); transformers'
    ``_speculative_sampling`` driving our loop, and transformers' assisted generation, token by token against the
    target's exact law (P1-P4, P7: every emitted token counts, so they reach their TV in about a minute where whole
    sequences took several)."""
    from ..adapters.hf import HFAssistedDecoder, hf_speculative_sampling_in_loop
    from ..conformance import check_decoder, check_tokens
    from ..decoding import ModelDraft, SpeculativeDecoder
    from ..decoding.models import TinyPairConfig, tiny_llama_pair
    from ..laws import TargetLawOracle

    target, draft = tiny_llama_pair(1, TinyPairConfig(vocab_size=8))
    shared = dict(seed=args.seed, console=console, call_timeout=args.call_timeout or None, family_alpha=args.family_alpha,
                  **args.campaign)
    planned = dict(tv=max(args.tv, ASSISTED_TV if which == "hf-assisted" else DECODER_TV))
    if args.budget is not None or (which != "ours" and args.hf_budget is not None):
        planned["time_budget"] = args.budget if args.budget is not None else args.hf_budget
    if which == "ours":
        ours = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, eos_token_id=EOS)
        return check_decoder(ours, target, PROMPTS, length=2, eos_token_id=EOS, name="specdec generate (tiny Llama pair, K=2)",
                             **planned, **shared)
    if which == "hf-in-loop":
        subject = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, eos_token_id=EOS,
                                     verifier=hf_speculative_sampling_in_loop)
        name = "transformers _speculative_sampling in specdec's loop (tiny Llama pair, K=2), per token"
    else:
        subject = HFAssistedDecoder(target, assistant=draft, num_draft_tokens=2)
        name = "transformers assisted generation (tiny Llama pair, K=2), per token"
    return check_tokens(subject, TargetLawOracle(target), PROMPTS, length=TOKEN_LENGTH, eos_token_id=subject.eos_token_id,
                        name=name, **planned, **shared)
