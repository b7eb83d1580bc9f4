import sys

try:
    from .cli import console_main
except KeyboardInterrupt:  # Ctrl-C while the command line itself is imported
    print("specdec: interrupted", file=sys.stderr)
    sys.exit(130)

console_main()
