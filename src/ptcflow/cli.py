"""The ``ptcflow`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import anyio

from ptcflow.errors import ConfigError
from ptcflow.temporal import add_worker_command, run_worker_command
from ptcflow.trace import add_trace_commands, run_trace_command, serve_example

DESCRIPTION = "ptcflow: run LLM agents in async services. Each command has its own --help."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ptcflow`` command line and return its exit code.

    ``ptcflow demo [--agents N] [--latency-ms MS] [--customer NAME]`` runs the offline
    demo: a SubAgent mission with its trace, one agent with a live view of its signals,
    then N agents concurrently.
    ``ptcflow model-server [--port N]`` serves the OpenAI and Anthropic wire protocols on
    127.0.0.1 until interrupted (see :func:`ptcflow.testing.open_model_server`).
    ``ptcflow trace show|export|open JOURNAL`` shows a recorded run (docs/trace.md);
    ``ptcflow serve --example`` runs the example agent service (examples/service/);
    ``ptcflow mcp serve --example`` serves the demo's agents as MCP tools over stdio.
    ``ptcflow worker --task-queue Q`` runs a Temporal worker (docs/temporal.md).
    """
    parser = argparse.ArgumentParser(prog="ptcflow", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline demo on the scripted model")
    demo.add_argument(
        "--agents", type=int, default=None, help="concurrent agents (default 1000; 0 with --model)"
    )
    demo.add_argument(
        "--latency-ms", type=float, default=20.0, help="scripted model latency (default 20)"
    )
    demo.add_argument("--customer", default="Alice", help="whom the first agent is asked about")
    demo.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    demo.add_argument(
        "--model",
        help="run on a real model instead: provider:model or an alias from ptcflow.toml "
        "(needs its API key in the environment; --agents then defaults to 0)",
    )
    server = sub.add_parser(
        "model-server",
        help="serve the OpenAI and Anthropic wire protocols locally (plausible answers)",
        description="Serve the OpenAI and Anthropic wire protocols on 127.0.0.1 until "
        "interrupted; every request gets a plausible answer. Prints the environment "
        "variables that point the SDKs (and ptcflow's ModelRegistry) at it.",
    )
    server.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    add_trace_commands(sub.add_parser)
    serve = sub.add_parser(
        "serve",
        help="run the example agent service (examples/service/): missions watched live",
        description="Serve the example agent service of examples/service/ (a checkout of the "
        "repository): each request runs a mission of nested agents on one shared Runtime and "
        "streams its signals to the live trace viewer. Needs the 'service' extra.",
    )
    serve.add_argument("--example", action="store_true", required=True, help="the example app")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--latency-ms", type=float, default=400.0, help="scripted model latency (default 400)"
    )
    serve.add_argument(
        "--data-dir",
        help="where conversations are kept (conversations.db, SQLite; default: "
        "$PTCFLOW_SERVICE_DATA, else $XDG_STATE_HOME/ptcflow/example-service)",
    )
    mcp = sub.add_parser("mcp", help="serve agents as MCP tools")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    mcp_serve = mcp_sub.add_parser(
        "serve",
        help="serve the demo's agents as MCP tools over stdio, on the scripted model",
        description="Serve the demo's two agents as MCP tools over stdio (point any MCP "
        "client at `ptcflow mcp serve --example`): analyst (a ReAct agent: a prompt in, an "
        "answer out) and revenue-analyst (a SubAgent writing PTC-Lisp: revenue per city in "
        "euros), both on the scripted model, offline. Needs the 'mcp' extra.",
    )
    mcp_serve.add_argument("--example", action="store_true", required=True, help="the demo")
    add_worker_command(sub.add_parser)
    args = parser.parse_args(argv)
    if args.command == "mcp":
        return anyio.run(_serve_mcp_example)
    if args.command == "worker":
        return run_worker_command(args)
    if args.command == "trace":
        return run_trace_command(args)
    if args.command == "serve":
        return serve_example(
            host=args.host, port=args.port, latency_ms=args.latency_ms, data_dir=args.data_dir
        )
    if args.command == "model-server":
        try:
            anyio.run(_serve_models, args.port)
        except KeyboardInterrupt:
            pass
        return 0
    if args.command == "demo":
        from ptcflow.demo import run_demo

        agents = args.agents
        if agents is None:  # a thousand paid model calls only when asked for
            agents = 1000 if args.model is None else 0
        if agents < 0 or args.latency_ms < 0:
            parser.error("--agents and --latency-ms must be >= 0")
        run = partial(run_demo, agents=agents, latency_ms=args.latency_ms, customer=args.customer)
        try:
            report = anyio.run(_with_model, run, args.model, backend=args.backend)
        except ConfigError as exc:
            print(f"ptcflow demo: {exc}", file=sys.stderr)
            return 2
        return 0 if report.ok == report.agents and report.mission_ok else 1
    return 2  # pragma: no cover - argparse rejects unknown commands


async def _with_model(run: Callable[..., Awaitable[Any]], model: str | None) -> Any:
    """Call ``run`` offline, or with a connected model registry when ``model`` is given."""
    if model is None:
        return await run()
    from ptcflow.providers import ModelRegistry

    async with ModelRegistry.from_config(default=model) as models:
        await models.connect()  # a missing key or unknown alias fails here, before any call
        return await run(llm=models)


async def _serve_mcp_example() -> int:
    """Serve the demo's agents over stdio until the client closes the connection."""
    from ptcflow.demo import (
        analyst,
        demo_agent,
        demo_tools,
        mission_turn,
        revenue_agent,
    )
    from ptcflow.runtime import LLMRequest, Runtime
    from ptcflow.serve import serve_mcp_stdio
    from ptcflow.signals import SignalBus
    from ptcflow.testing import ScriptedLLM

    def answer(request: LLMRequest) -> Any:  # the ReAct analyst calls tools natively
        return analyst(request) if request.tools else mission_turn(request)

    agents = {"analyst": demo_agent(), "revenue-analyst": revenue_agent()}
    model = ScriptedLLM(answer, model="demo-analyst")
    async with Runtime(llm=model, tools=demo_tools(), bus=SignalBus()) as rt:
        await serve_mcp_stdio(agents, rt, name="ptcflow-example")
    return 0


async def _serve_models(port: int) -> None:
    """Run the local model server until cancelled, after printing where it listens."""
    from ptcflow.testing import open_model_server

    async with open_model_server(port=port) as server:
        print(f"ptcflow model server on {server.base_url} (Ctrl-C stops it)", flush=True)
        for name, value in server.env().items():
            print(f"export {name}={value}", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    sys.exit(main())
