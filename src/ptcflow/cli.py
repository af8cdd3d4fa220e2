"""The ``ptcflow`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial

import anyio


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ptcflow`` command line and return its exit code.

    ``ptcflow demo [--agents N] [--latency-ms MS] [--customer NAME]`` runs the offline
    demo: one agent with a live view of its signals, then N agents concurrently.
    """
    parser = argparse.ArgumentParser(prog="ptcflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline demo on the scripted model")
    demo.add_argument("--agents", type=int, default=1000, help="concurrent agents (default 1000)")
    demo.add_argument(
        "--latency-ms", type=float, default=20.0, help="scripted model latency (default 20)"
    )
    demo.add_argument("--customer", default="Alice", help="whom the first agent is asked about")
    demo.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ptcflow.demo import run_demo

        if args.agents < 0 or args.latency_ms < 0:
            parser.error("--agents and --latency-ms must be >= 0")
        run = partial(
            run_demo, agents=args.agents, latency_ms=args.latency_ms, customer=args.customer
        )
        report = anyio.run(run, backend=args.backend)
        return 0 if report.ok == report.agents else 1
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
