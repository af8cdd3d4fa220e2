"""The ``ptcflow`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ptcflow`` command line and return its exit code."""
    parser = argparse.ArgumentParser(prog="ptcflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the offline demo on the scripted model")
    args = parser.parse_args(argv)
    if args.command == "demo":
        print("demo: not built yet")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
