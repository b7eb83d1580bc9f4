"""Command line: ``specdec check`` (the main job), ``specdec compare`` and ``specdec bench run|gate|plot``
(also ``python -m specdec``).

Thin: argparse, argument checks before any work (a bad argument is one line on stderr and exit
status 2), then calls into the library.  One module per command (check, compare, bench); every module
is imported only when it is needed - the commands' own modules by :func:`build_parser`, the heavy
library inside the commands - so ``specdec --help`` starts fast and a Ctrl-C in the first second is an
interruption like any other (exit 130, no traceback; held while torch is imported:
:mod:`specdec.cli._interrupts`).  Exit statuses: :mod:`specdec.cli.exit_codes`.
"""

from __future__ import annotations

import sys

from ..errors import UsageError
from . import exit_codes
from ._interrupts import import_holding_interrupts

__all__ = ["UsageError", "build_parser", "console_main", "main"]


def build_parser():
    import argparse

    from . import bench, check, compare

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
    import_holding_interrupts(getattr(args, "preload", ()))  # torch aborts on a Ctrl-C inside its import
    try:
        return args.run(args)
    except (UsageError, ValueError, TypeError) as error:  # the library refuses a bad argument before sampling
        print(f"specdec {args.command}: error: {error}", file=sys.stderr)
        return exit_codes.USAGE


def console_main() -> None:
    """The ``specdec`` console script and ``python -m specdec``: :func:`main`, then exit.

    A Ctrl-C (or SIGTERM, which ``check`` turns into one) that reaches this far - while the library is
    imported, before a command's own handling starts, or while the final report is renamed into place
    (the file stays whole: :func:`specdec._io.atomic_write_text`) - ends the run with exit status 130
    and one line, never a traceback.  ``specdec check`` runs its subjects' calls in worker threads
    (per-call timeouts): a call abandoned after a timeout or an interrupt, or torch's thread pools
    started from those threads, can crash the interpreter's shutdown ("terminate called without an
    active exception").  After a check the process therefore ends at once (``os._exit``) with its exit
    status, its output flushed and its report already written."""
    import os

    argv = sys.argv[1:]
    try:
        code = main(argv)
    except KeyboardInterrupt:
        print(f"specdec {' '.join(argv[:1])}: interrupted".replace("  ", " "), file=sys.stderr)
        code = exit_codes.INTERRUPTED
    if argv[:1] == ["check"]:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
