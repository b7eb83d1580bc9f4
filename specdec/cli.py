"""Command line: ``specdec check`` and ``specdec plan`` (also ``python -m specdec ...``).

``specdec check`` is the main job: the conformance report (:mod:`specdec.conformance`)
on the embedded defaults - our reference verifiers (token, block) and decoder, and
Hugging Face transformers' ``_speculative_sampling`` and assisted generation through
the adapters, on the tiny Llama pairs - printed as one table per subject and written
as JSON.  Exit status 1 when any subject fails, 2 on a bad argument.

``specdec plan`` prints, for one (target, draft) pair, the acceptance of every
verification scheme next to the proven optimum and the gap to it:

* one draft per position: the token rule (F1, = the optimum 1 - TV, F5/F6);
* k i.i.d. drafts: K-SEQ (F11-F13) and SpecInfer MSS (F14) vs alpha*_k (F9-F10);
  MSS over the draft's top-k tokens as distinct children (F15) for reference
  (a different proposal, so alpha*_k does not bound it);
* a chain of gamma positions with this pair at every position: expected accepted
  tokens of token verification (F26) and block verification (F20) vs the
  joint-min bound no single-draft verifier beats.

``--plot FILE.png`` also draws the optimal plan Pi* (F6) and the acceptance bars.
Bad arguments get a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

import torch

DEFAULT_TARGET = "0.5,0.3,0.2"  # SPEC §3 example
DEFAULT_DRAFT = "0.2,0.3,0.5"
MAX_BLOCK_ENUMERATION = 50_000  # V^gamma prefixes for F20 / joint-min


class UsageError(Exception):
    """A bad argument: reported in one line, exit status 2."""


def _vector(name: str, text: str) -> torch.Tensor:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--{name} must be comma-separated numbers, got {text!r}") from None
    t = torch.tensor(values, dtype=torch.float64)
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()) or float(t.sum()) <= 0:
        raise UsageError(f"--{name} must be finite, non-negative and not all zero, got {text!r}")
    return t / t.sum()


def _case(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    try:
        from fixtures.cases import TOKEN_CASES
    except ImportError:
        raise UsageError("--case needs the repository's fixtures/ on the path (run from the repository root)") from None
    for case in TOKEN_CASES:
        if case.name == name:
            return case.target_probs, case.draft_probs
    raise UsageError(f"unknown --case {name!r}; known: {', '.join(c.name for c in TOKEN_CASES)}")


def plan_rows(target: torch.Tensor, draft: torch.Tensor, max_drafts: int, gamma: int) -> list[dict]:
    """The report as rows: scheme, k or gamma, value, optimum (None when no optimum applies)."""
    from . import block
    from .exact import acceptance_profile
    from .multidraft import distinct_children_law, kseq_acceptance, mss_acceptance
    from .transport import multidraft_optimum

    rows = []
    beta = float(torch.minimum(target, draft).sum())
    rows.append(dict(scheme="token", size=1, value=beta, optimum=multidraft_optimum(target, draft, 1)))
    for k in range(2, max_drafts + 1):
        optimum = multidraft_optimum(target, draft, k)
        rows.append(dict(scheme="K-SEQ", size=k, value=kseq_acceptance(target, draft, k), optimum=optimum))
        rows.append(dict(scheme="MSS iid", size=k, value=mss_acceptance(target, draft, k), optimum=optimum))
        if k <= target.shape[0]:
            children = draft.argsort(descending=True)[:k].tolist()
            rows.append(dict(scheme="MSS top-k", size=k, value=distinct_children_law(target, children)[1], optimum=None))
    vocab = target.shape[0]
    if gamma and vocab**gamma <= MAX_BLOCK_ENUMERATION:
        table_t, table_d = target.tolist(), draft.tolist()
        fixed_t, fixed_d = (lambda prefix: table_t), (lambda prefix: table_d)
        token = float(acceptance_profile(lambda prefix: target, lambda prefix: draft, gamma)[1:].sum())
        ideal = float(block.joint_min_ideal(fixed_t, fixed_d, gamma, vocab))
        rows.append(dict(scheme="token chain", size=gamma, value=token, optimum=ideal))
        rows.append(dict(scheme="block chain", size=gamma, value=float(block.expected_accepted_block(fixed_t, fixed_d, gamma, vocab)), optimum=ideal))
    return rows


def format_plan(rows: list[dict]) -> str:
    lines = [f"{'scheme':12s} {'k/gamma':>7s} {'accept':>8s} {'optimum':>8s} {'gap':>8s}"]
    for row in rows:
        optimum = "" if row["optimum"] is None else f"{row['optimum']:8.4f}"
        gap = "" if row["optimum"] is None else f"{row['optimum'] - row['value']:8.4f}"
        lines.append(f"{row['scheme']:12s} {row['size']:7d} {row['value']:8.4f} {optimum:>8s} {gap:>8s}")
    lines.append("accept: P(a draft is accepted) per position; for the chains, E[accepted tokens] per step.")
    lines.append("optimum: alpha*_k (F9-F10) per position; joint-min bound for the chains.")
    return "\n".join(lines)


def plot_plan(target: torch.Tensor, draft: torch.Tensor, rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .transport import optimal_plan

    plan = optimal_plan(target, draft).numpy()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    image = left.imshow(plan, cmap="viridis")
    left.set_title("optimal plan Pi* (F6)", fontsize=10)
    if plan.shape[0] <= 20:
        left.set_xticks(range(plan.shape[0]))
        left.set_yticks(range(plan.shape[0]))
    left.set_xlabel("draft token (~ draft)")
    left.set_ylabel("output token (~ target)")
    fig.colorbar(image, ax=left, fraction=0.046)
    per_position = [r for r in rows if "chain" not in r["scheme"]]
    labels = [f"{r['scheme']}\nk={r['size']}" for r in per_position]
    right.bar(range(len(per_position)), [r["value"] for r in per_position], color="tab:blue", label="scheme")
    right.scatter(
        [i for i, r in enumerate(per_position) if r["optimum"] is not None],
        [r["optimum"] for r in per_position if r["optimum"] is not None],
        color="tab:red", marker="_", s=400, label="optimum alpha*_k",
    )
    right.set_xticks(range(len(per_position)), labels, fontsize=7)
    right.set_ylim(0, 1.05)
    right.set_title("acceptance per position")
    right.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plan_command(args) -> int:
    if args.case:
        target, draft = _case(args.case)
    else:
        target, draft = _vector("target", args.target), _vector("draft", args.draft)
    if target.shape != draft.shape:
        raise UsageError(f"--target has {target.shape[0]} entries but --draft has {draft.shape[0]}")
    if args.max_drafts < 1 or args.gamma < 0:
        raise UsageError(f"--max-drafts must be >= 1 and --gamma >= 0, got {args.max_drafts}, {args.gamma}")
    rows = plan_rows(target, draft, args.max_drafts, args.gamma)
    print(format_plan(rows))
    if args.plot:
        plot_plan(target, draft, rows, args.plot)
        print(f"plot written to {args.plot}")
    return 0


def _check_command(args) -> int:
    import json

    from .conformance import check_decoder, check_verifier

    if not 0 < args.tv < 1:
        raise UsageError(f"--tv must be in (0, 1), got {args.tv}")
    if args.hf_budget <= 0:
        raise UsageError(f"--hf-budget must be > 0 seconds, got {args.hf_budget}")
    reports = []

    def run(report):
        reports.append(report)
        print(report.format(), flush=True)
        print(flush=True)

    if args.only in (None, "verifiers"):
        from .block import verify_block
        from .hf_adapter import hf_speculative_sampling
        from .verify import verify_tokens

        run(check_verifier(verify_tokens, name="specdec verify_tokens (reference)", tv=args.tv, seed=args.seed))
        run(check_verifier(verify_block, name="specdec verify_block", tv=args.tv, seed=args.seed))
        run(
            check_verifier(
                hf_speculative_sampling, name="transformers _speculative_sampling", tv=args.tv, time_budget=args.hf_budget, seed=args.seed
            )
        )
    if args.only in (None, "decoders"):
        from .drafts import ModelDraft
        from .generate import SpeculativeDecoder
        from .hf_adapter import HFAssistedDecoder
        from .models import TinyPairConfig, tiny_llama_pair

        target, draft = tiny_llama_pair(1, TinyPairConfig(vocab_size=8))
        prompts = [[1, 2, 3], [4, 5, 4, 5, 4]]
        common = dict(target=target, prompts=prompts, length=2, eos_token_id=7, seed=args.seed)
        ours = SpeculativeDecoder(target, ModelDraft(draft), num_draft_tokens=2, eos_token_id=7)
        run(check_decoder(ours, name="specdec generate (tiny Llama pair, K=2)", tv=max(args.tv, 0.02), **common))
        theirs = HFAssistedDecoder(target, eos_token_id=7, assistant=draft, num_draft_tokens=2)
        run(
            check_decoder(
                theirs, name="transformers assisted generation (tiny Llama pair, K=2)", tv=max(args.tv, 0.02), time_budget=args.hf_budget, **common
            )
        )
    with open(args.json, "w") as handle:
        json.dump([json.loads(r.to_json()) for r in reports], handle, indent=2)
    failed = [r.subject for r in reports if not r.passed]
    print(f"{len(reports)} subjects, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}; JSON written to {args.json}")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec", description="speculative decoding: reference, conformance, benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="conformance report on the embedded defaults (the main job)")
    check.add_argument("--tv", type=float, default=0.01, help="TV deviation each check must detect with power 0.99 (default 0.01)")
    check.add_argument("--hf-budget", type=float, default=60.0, help="seconds of sampling per transformers subject (default 60)")
    check.add_argument("--only", choices=["verifiers", "decoders"], help="run one level only")
    check.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    check.add_argument("--json", default="specdec-check.json", help="where to write the JSON report")
    check.set_defaults(run=_check_command)
    plan = sub.add_parser("plan", help="acceptance per verification scheme vs the proven optimum")
    plan.add_argument("--target", default=DEFAULT_TARGET, help="target probabilities, comma-separated (default: SPEC §3)")
    plan.add_argument("--draft", default=DEFAULT_DRAFT, help="draft probabilities, comma-separated")
    plan.add_argument("--case", help="a named pair from fixtures/cases.py instead of --target/--draft")
    plan.add_argument("--max-drafts", type=int, default=3, help="largest k for the multi-draft schemes (default 3)")
    plan.add_argument("--gamma", type=int, default=2, help="chain length for token vs block verification (default 2)")
    plan.add_argument("--plot", metavar="FILE.png", help="also write the plan matrix and acceptance bars")
    plan.set_defaults(run=_plan_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (UsageError, ValueError) as error:
        print(f"specdec {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
