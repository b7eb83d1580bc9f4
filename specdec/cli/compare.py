"""``specdec compare``: for one (target, draft) pair, the acceptance of every verification scheme
next to its proven optimum, read from every registered scheme's record (:mod:`specdec.schemes`)."""

from __future__ import annotations

from ._args import UsageError, vector, writable

DEFAULT_TARGET = "0.5,0.3,0.2"  # docs/reference.md, the multi-draft example
DEFAULT_DRAFT = "0.2,0.3,0.5"


def compare_inputs(args):
    if args.case is not None:
        if args.target is not None or args.draft is not None:
            raise UsageError("give --case or --target/--draft, not both")
        from ..conformance.catalogue import pair, pair_names

        if args.case not in pair_names():
            raise UsageError(f"unknown --case {args.case!r}; known: {', '.join(pair_names())}")
        return pair(args.case)
    target = vector("target", args.target or DEFAULT_TARGET)
    draft = vector("draft", args.draft or DEFAULT_DRAFT)
    if target.shape != draft.shape:
        given = "--draft" if args.draft is not None else "the default --draft (the reference example's)"
        raise UsageError(f"--target has {target.shape[0]} entries but {given} has {draft.shape[0]}; give both, of one length")
    return target, draft


def format_schemes(rows: list[dict]) -> str:
    lines = [f"{'scheme':12s} {'k or K':>7s} {'accept':>8s} {'optimum':>8s} {'gap':>8s}"]
    for row in rows:
        optimum = "" if row["optimum"] is None else f"{row['optimum']:8.4f}"
        gap = "" if row["optimum"] is None else f"{row['optimum'] - row['value']:8.4f}"
        lines.append(f"{row['scheme']:12s} {row['size']:7d} {row['value']:8.4f} {optimum:>8s} {gap:>8s}")
    lines.append("accept: P(a draft is accepted) per position; for the chains, E[accepted tokens] per step.")
    lines.append("optimum: alpha*_k (F9-F10) per position; the joint-min bound for the chains.")
    return "\n".join(lines)


def compare_command(args) -> int:
    from ..schemes import MAX_TABLE_DRAFTS, chain_size_error, scheme_table  # the library's caps

    if args.max_drafts < 1:
        raise UsageError(f"--max-drafts must be >= 1, got {args.max_drafts}")
    if args.max_drafts > MAX_TABLE_DRAFTS:
        raise UsageError(f"--max-drafts must be at most {MAX_TABLE_DRAFTS} (the table's cap), got {args.max_drafts}")
    if args.draft_tokens < 0:
        raise UsageError(f"--draft-tokens must be >= 0, got {args.draft_tokens}")
    writable("--plot", args.plot)
    target, draft = compare_inputs(args)
    error = chain_size_error(target.shape[0], args.draft_tokens) if args.draft_tokens else None
    if error:
        raise UsageError(f"--draft-tokens {args.draft_tokens} {error}")
    rows = scheme_table(target, draft, max_drafts=args.max_drafts, num_draft_tokens=args.draft_tokens)
    print(format_schemes(rows))
    if args.plot:
        from ..plots import plot_schemes

        plot_schemes(target, draft, rows, args.plot)
        print(f"plot written to {args.plot}")
    return 0


def add_parser(sub) -> None:
    compare = sub.add_parser("compare", help="acceptance of each verification scheme vs its proven optimum")
    compare.add_argument("--target", help=f"target probabilities, comma-separated (default: the reference example's {DEFAULT_TARGET})")
    compare.add_argument("--draft", help=f"draft probabilities, comma-separated (default: the reference example's {DEFAULT_DRAFT})")
    compare.add_argument("--case", help="a named pair of the catalogue instead of --target/--draft")
    compare.add_argument("--max-drafts", type=int, default=3, help="largest k for the multi-draft schemes (default 3; at most the library's cap, specdec.schemes.MAX_TABLE_DRAFTS)")
    compare.add_argument("--draft-tokens", type=int, default=2, help="K for the token vs block chain rows (default 2)")
    compare.add_argument("--plot", metavar="FILE.png", help="also draw the optimal plan and the acceptance bars")
    compare.set_defaults(run=compare_command, preload=("torch",))  # see _interrupts
