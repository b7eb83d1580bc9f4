"""Command line: ``specdec check`` (the main job), ``specdec compare`` and ``specdec bench gate|plot``
(also ``python -m specdec``).

Thin: argparse, argument checks before any work (a bad argument is one line on stderr and exit
status 2), then calls into the library.  One module per command (check, compare, bench); heavy
modules are imported inside the commands, so ``specdec --help`` starts fast.  Exit statuses:
:mod:`specdec.cli.exit_codes`.
"""

from __future__ import annotations

import argparse
import sys

from . import bench, check, compare, exit_codes
from ._args import UsageError

__all__ = ["UsageError", "build_parser", "console_main", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specdec",
        description="speculative decoding: reference, conformance, benchmarks",
        epilog="exit status: " + "; ".join(f"{code} {meaning}" for code, meaning in exit_codes.TABLE),
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check.add_parser(sub)
    compare.add_parser(sub)
    bench.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (UsageError, ValueError, TypeError) as error:  # the library refuses a bad argument before sampling
        print(f"specdec {args.command}: error: {error}", file=sys.stderr)
        return exit_codes.USAGE


def console_main() -> None:
    """The ``specdec`` console script and ``python -m specdec``: :func:`main`, then exit.

    ``specdec check`` runs its subjects' calls in worker threads (per-call timeouts): a call abandoned
    after a timeout or an interrupt, or torch's thread pools started from those threads, can crash
    the interpreter's shutdown ("terminate called without an active exception").  After a check the
    process therefore ends at once (``os._exit``) with its exit status, its output flushed and its
    report already written."""
    import os

    argv = sys.argv[1:]
    code = main(argv)
    if argv[:1] == ["check"]:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
