"""``specdec check``'s embedded defaults: every registered built-in scheme's reference verifier at its
level (:mod:`specdec.schemes`), transformers' verifier through its adapter, and two decoders on a tiny
Llama pair (ours and transformers' assisted generation).  transformers' subjects get a time budget
(``--hf-budget``); decoders are planned for TV 0.02 at the least (they sample a few thousand sequences
per second on a CPU)."""

from __future__ import annotations

DECODER_TV = 0.02
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
    from ..conformance import check_decoder, check_verifier

    common = dict(seed=args.seed, device=args.device, console=console, call_timeout=args.call_timeout or None,
                  family_alpha=args.family_alpha, **args.campaign)
    planned = dict(tv=args.tv) if args.budget is None else dict(tv=args.tv, time_budget=args.budget)
    subjects = scheme_subjects(args, common, planned)
    if args.only in (None, "verifiers"):
        from ..adapters.hf import hf_speculative_sampling

        hf = dict(tv=args.tv, time_budget=args.budget or args.hf_budget)
        hf_common = {**common, "chunk_size": args.chunk_size or 1024}
        subjects.append(("hf", lambda: check_verifier(hf_speculative_sampling, name="transformers _speculative_sampling", **hf, **hf_common)))
    if args.only in (None, "decoders"):

        def decoders(which):
            from ..adapters.hf import HFAssistedDecoder
            from ..decoding import ModelDraft, SpeculativeDecoder
            from ..decoding.models import TinyPairConfig, tiny_llama_pair

            target, draft = tiny_llama_pair(1, TinyPairConfig(vocab_size=8))
            shared = dict(prompts=[[1, 2, 3], [4, 5, 4, 5, 4]], length=2, eos_token_id=7, seed=args.seed, console=console,
                          call_timeout=args.call_timeout or None, family_alpha=args.family_alpha, **args.campaign)
            if which == "ours":
                ours = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, eos_token_id=7)
                budgeted = dict(tv=max(args.tv, DECODER_TV)) if args.budget is None else dict(tv=max(args.tv, DECODER_TV), time_budget=args.budget)
                return check_decoder(ours, target, name="specdec generate (tiny Llama pair, K=2)", **budgeted, **shared)
            theirs = HFAssistedDecoder(target, eos_token_id=7, assistant=draft, num_draft_tokens=2)
            return check_decoder(
                theirs, target, name="transformers assisted generation (tiny Llama pair, K=2)",
                tv=max(args.tv, DECODER_TV), time_budget=args.budget or args.hf_budget, **shared,
            )

        subjects += [("ours", lambda: decoders("ours")), ("hf-assisted", lambda: decoders("hf"))]
    return subjects
