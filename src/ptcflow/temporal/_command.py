"""``ptcflow worker``: a worker process hosting ptcflow's workflows and activities."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import Any

import anyio

from ptcflow.errors import ConfigError, PtcflowError
from ptcflow.temporal._options import DEFAULT_TASK_QUEUE
from ptcflow.temporal._refs import load

__all__ = ("add_worker_command", "run_worker_command")

WORKER_HELP = "run a Temporal worker: ptcflow's workflows and activities (model calls, tools)"


def add_worker_command(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the ``worker`` subcommand to an argparse parser (``add_parser`` is its
    subparsers' ``add_parser``).

    The ``ptcflow`` command line's plumbing, with :func:`run_worker_command`: use them to
    offer ``worker`` in a command line of your own. To run a worker, run ``ptcflow worker``;
    to host one in your code, use :func:`open_worker`.
    """
    p = add_parser(
        "worker",
        help=WORKER_HELP,
        description="Poll a Temporal task queue and run ptcflow's workflows (the run cores) "
        "and activities (model calls, tools, custom directives) until interrupted. Tools "
        "are imported by the path each run gives unless --tools hosts them by name. Needs "
        "the 'temporal' extra. See docs/temporal.md.",
    )
    p.add_argument("--address", default="127.0.0.1:7233", help="the Temporal frontend host:port")
    p.add_argument("--namespace", default="default")
    p.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE, help="the queue to poll")
    p.add_argument("--llm", help="import path of the model provider (or a function making it)")
    p.add_argument("--tools", help="import path of the tools it hosts by name (a list, a map)")
    p.add_argument("--handlers", help="import path of {Directive: handler} for custom kinds")
    p.add_argument("--no-workflows", action="store_true", help="run activities only (a tool pool)")
    p.add_argument("--no-activities", action="store_true", help="run workflows only")
    p.add_argument(
        "--passthrough",
        action="append",
        default=[],
        help="a module the workflow sandbox imports once (trusted deterministic strategies)",
    )
    p.add_argument(
        "--storage",
        help="a directory shared by every worker and client: large payloads are kept there, "
        "out of history (see docs/temporal.md, Limits)",
    )
    p.add_argument("--max-concurrent-activities", type=int, default=None)
    p.add_argument(
        "--sticky-timeout",
        type=float,
        default=None,
        help="seconds before runs cached on a lost worker move to another (default 10)",
    )


def _load(path: str | None, what: str) -> Any:
    if path is None:
        return None
    try:
        obj = load(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"--{what} {path}: cannot import it: {type(exc).__name__}: {exc}"
        ) from None
    if what == "llm" and callable(obj) and not hasattr(obj, "generate"):
        obj = obj()  # a factory
    return obj


def run_worker_command(args: argparse.Namespace) -> int:
    """Run ``ptcflow worker`` with ``args`` parsed by a parser that
    :func:`add_worker_command` set up; return the exit code. Blocks until interrupted.

    The command line's plumbing: in code, use :func:`open_worker`.
    """
    try:
        llm = _load(args.llm, "llm")
        tools = _load(args.tools, "tools")
        handlers = _load(args.handlers, "handlers")
    except ConfigError as exc:
        print(f"ptcflow worker: {exc}", file=sys.stderr)
        return 2
    try:
        anyio.run(_serve, args, llm, tools, handlers)
    except KeyboardInterrupt:
        return 0
    except PtcflowError as exc:
        print(f"ptcflow worker: {exc}", file=sys.stderr)
        return 2
    return 0


async def _serve(args: argparse.Namespace, llm: Any, tools: Any, handlers: Any) -> None:
    from ptcflow.temporal._connect import connect, file_storage
    from ptcflow.temporal._worker import open_worker

    storage = None if args.storage is None else file_storage(args.storage)
    client = await connect(args.address, namespace=args.namespace, storage=storage)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as stops:
        async with open_worker(
            client,
            task_queue=args.task_queue,
            llm=llm,
            tools=tools,
            handlers=handlers,
            workflows=not args.no_workflows,
            activities=not args.no_activities,
            passthrough=tuple(args.passthrough),
            max_concurrent_activities=args.max_concurrent_activities,
            sticky_timeout=args.sticky_timeout,
            max_payload_bytes=None if storage is not None else 2_000_000,
        ):
            print(
                f"ptcflow worker on {args.address} task queue {args.task_queue!r} "
                "(Ctrl-C stops it)",
                flush=True,
            )
            async for _ in stops:  # SIGINT or SIGTERM: stop polling, let activities end
                break
