"""Agents as MCP tools: any agent, or a set of them, served with the ``mcp`` SDK's server.

Each agent is one tool: its signature is the tool's input and output JSON Schema (an
output that is not a map is wrapped as ``{"result": ...}``, as the SDK does for
functions); a call checks the arguments against the signature (arguments that do not fit
are an MCP tool error naming each path at fault), runs the agent on the Runtime, and
answers its value as structured content (and as JSON text). While the run goes on, its
signals become progress notifications (when the client asked for progress); a client
that cancels the request cancels the run. Needs ``pip install 'ptcflow[mcp]'`` (the SDK is
imported on first use).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import anyio

from ptcflow.agent import CompiledAgent, SubAgent
from ptcflow.errors import ConfigError, UsageError
from ptcflow.runtime import Runtime, Step
from ptcflow.signals import (
    LLM_RESPONSE,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    Signal,
    SignalBus,
    Subscription,
    new_id,
    sanitize,
)
from ptcflow.signature import Signature, parse

__all__ = ("AgentTool", "agent_tool", "mcp_http_app", "mcp_server", "serve_mcp_stdio")

_STRATEGY_SIGNATURE = "(prompt :string) -> :any"


def _import_mcp() -> Any:
    try:
        import mcp.server
        import mcp.types
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "serving agents over MCP needs the 'mcp' package: pip install 'ptcflow[mcp]'"
        ) from None
    return mcp


def _wrap(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """An MCP output schema (an object) for ``schema``, and whether it was wrapped."""
    if schema.get("type") == "object":
        return schema, False
    wrapped = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
        "additionalProperties": False,
    }
    return wrapped, True


class AgentTool:
    """One agent as an MCP tool: its name, description, signature and how to run it.

    Build it with :func:`agent_tool`.
    """

    def __init__(
        self,
        agent: Any,
        *,
        name: str,
        description: str,
        signature: Signature,
        compiled: bool,
    ) -> None:
        self.agent = agent
        self.name = name
        self.description = description
        self.signature = signature
        self.compiled = compiled
        self.input_schema = signature.input_schema()
        self.output_schema, self.wrapped = _wrap(signature.output_schema(view="parent"))

    def __repr__(self) -> str:
        return f"<AgentTool {self.name} {self.signature}>"

    def check(self, arguments: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
        """The arguments coerced to the signature, or ``None`` and why they do not fit."""
        result = self.signature.validate_input(dict(arguments or {}))
        if result.ok:
            return dict(result.value), ""
        problems = "; ".join(result.errors)
        return None, (
            f"the arguments of {self.name} do not fit its signature {self.signature}: {problems}"
        )

    def start(self, rt: Runtime, arguments: dict[str, Any], run_id: str) -> Any:
        """Start the agent's run on ``rt`` (not for a compiled agent)."""
        if isinstance(self.agent, SubAgent):
            return rt.start(self.agent, context=arguments, run_id=run_id)
        return rt.start(self.agent, arguments["prompt"], run_id=run_id, name=self.name)


def agent_tool(agent: Any, *, name: str | None = None, description: str | None = None) -> AgentTool:
    """An agent as an MCP tool: a :class:`~ptcflow.SubAgent` (its signature), a
    :class:`~ptcflow.agent.CompiledAgent` (its signature; runs without a model), or a
    strategy such as ``ReAct()`` (``(prompt :string) -> :any``).

    Raises:
        UsageError: ``agent`` is none of those.
    """
    if isinstance(agent, AgentTool):
        return agent
    if isinstance(agent, SubAgent | CompiledAgent):
        sig = parse(agent.signature or "() -> :any")
        return AgentTool(
            agent,
            name=name or agent.name,
            description=description if description is not None else agent.description,
            signature=sig,
            compiled=isinstance(agent, CompiledAgent),
        )
    if callable(getattr(agent, "init", None)) and callable(getattr(agent, "handle", None)):
        label = name or getattr(agent, "name", None) or type(agent).__name__.lower()
        return AgentTool(
            agent,
            name=label,
            description=description if description is not None else f"The {label} agent.",
            signature=parse(_STRATEGY_SIGNATURE),
            compiled=False,
        )
    raise UsageError(f"an MCP tool needs a SubAgent, a CompiledAgent or a strategy, got {agent!r}")


def _tools(agents: Any) -> dict[str, AgentTool]:
    items: Iterable[AgentTool]
    if isinstance(agents, Mapping):
        items = [agent_tool(a, name=n) for n, a in agents.items()]
    elif isinstance(agents, Iterable):
        items = [agent_tool(a) for a in agents]
    else:
        items = [agent_tool(agents)]
    tools: dict[str, AgentTool] = {}
    for tool in items:
        if tool.name in tools:
            raise UsageError(
                f"two agents are named {tool.name!r}; give them names: mcp_server({{'a': ..., 'b': ...}})"
            )
        tools[tool.name] = tool
    return tools


def _progress_text(signal: Signal) -> str | None:
    """What a progress notification says for one signal (``None``: nothing to report)."""
    data: Any = signal.data
    where = "" if "/" not in (signal.run_id or "") else " (a sub-agent)"
    if signal.type == REQUEST_STARTED and where:
        return f"agent {data.agent or '?'} started{where}"
    if signal.type == LLM_RESPONSE:
        return f"turn {signal.iteration}: the model answered{where}"
    if signal.type == TOOL_STARTED:
        return f"calling {data.tool_name}{where}"
    if signal.type == TOOL_RESULT:
        return f"{data.tool_name} answered{where}"
    return None


async def _report(
    signals: Subscription, run_id: str, report: Callable[[float, str], Awaitable[None]]
) -> None:
    """Send a progress notification per step of run ``run_id`` (and its child runs)."""
    prefix = run_id + "/"
    count = 0
    async with signals:
        async for signal in signals:
            run = signal.run_id or ""
            if run != run_id and not run.startswith(prefix):
                continue
            text = _progress_text(signal)
            if text is not None:
                count += 1
                await report(count, text)


def _answer(tool: AgentTool, step: Step) -> Any:
    mcp = _import_mcp()
    types = mcp.types
    if not step.ok:
        fail = step.fail
        if fail is not None:
            text = f"{tool.name} failed ({fail.reason}): {fail.message}"
        elif step.error is not None:
            text = f"{tool.name} failed ({step.error.type}): {step.error.message}"
        else:
            text = f"{tool.name} failed ({step.reason})"
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    value = sanitize(step.value)
    structured = {"result": value} if tool.wrapped else value
    text = json.dumps(value, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured
    )


def _error(text: str) -> Any:
    types = _import_mcp().types
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def mcp_server(
    agents: Any,
    runtime: Runtime | Callable[[], Runtime],
    *,
    name: str = "ptcflow-agents",
    instructions: str | None = None,
) -> Any:
    """An MCP server (the SDK's low-level ``mcp.server.Server``) whose tools are ``agents``.

    Args:
        agents: one agent, a list of agents (named by their ``name``), or a mapping
            ``{tool name: agent}``; each a SubAgent, a CompiledAgent or a strategy.
        runtime: the open :class:`~ptcflow.runtime.Runtime` the runs start on (its bus a
            ``SignalBus`` for progress notifications), or a function returning it.
        name: the server's name.
        instructions: what the server tells clients it is for.

    Serve it over stdio (:func:`serve_mcp_stdio`) or streamable HTTP
    (:func:`mcp_http_app`).
    """
    mcp = _import_mcp()
    types = mcp.types
    tools = _tools(agents)

    def _rt() -> Runtime:
        return runtime if isinstance(runtime, Runtime) else runtime()

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description or None,
                    input_schema=t.input_schema,
                    output_schema=t.output_schema,
                )
                for t in tools.values()
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = tools.get(params.name)
        if tool is None:
            return _error(f"no tool {params.name!r}; this server has {sorted(tools)}")
        arguments, problem = tool.check(params.arguments)
        if arguments is None:
            return _error(problem)

        async def report(count: float, text: str) -> None:
            await ctx.session.report_progress(count, None, text)

        if tool.compiled:
            step = await tool.agent.execute(arguments)
            return _answer(tool, step)
        rt = _rt()
        run_id = new_id("mcp_")
        signals = rt.bus.subscribe("**", buffer=1024) if isinstance(rt.bus, SignalBus) else None
        async with anyio.create_task_group() as tg:
            if signals is not None:  # subscribed before the run starts: no signal is missed
                tg.start_soon(_report, signals, run_id, report)
            handle = tool.start(rt, arguments, run_id)
            try:
                step = await handle.wait()
            finally:
                if not handle.done:  # the client cancelled the request
                    handle.cancel(f"the MCP client cancelled its call of {tool.name}")
                    with anyio.move_on_after(30, shield=True):
                        await handle.wait()
                if signals is not None:
                    signals.close()  # the reporter sends what is buffered, then ends
        return _answer(tool, step)

    return mcp.server.Server(
        name, instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool
    )


async def serve_mcp_stdio(agents: Any, runtime: Runtime, *, name: str = "ptcflow-agents") -> None:
    """Serve ``agents`` over stdio until the client closes the connection (runs on the
    open ``runtime``)."""
    _import_mcp()
    from mcp.server.stdio import stdio_server

    server = mcp_server(agents, runtime, name=name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def mcp_http_app(
    agents: Any,
    runtime: Runtime | Callable[[], Runtime],
    *,
    name: str = "ptcflow-agents",
    path: str = "/mcp",
) -> Any:
    """A Starlette app serving ``agents`` over MCP's streamable HTTP at ``path`` (serve it
    with uvicorn on the loop the Runtime runs on)."""
    return mcp_server(agents, runtime, name=name).streamable_http_app(streamable_http_path=path)
