"""Connect to an MCP server and expose its tools as ptcflow :class:`~ptcflow.tools.Tool` s."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ptcflow.errors import ConfigError, UsageError
from ptcflow.signals import Err
from ptcflow.tools import Tool

from ._convert import call_failure, error_result, result_value, tool_name, unwrap_output_schema
from ._startup import (
    MCPConnectionError as MCPConnectionError,
    connection_errors_only as _connection_errors_only,
    is_url as _is_url,
    single as _single,
    startup_failure,
)

__all__ = ("MCPConnectionError", "MCPToolSource", "from_mcp_server")

_STDERR_TAIL = 2_000


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigError("MCP tools need the 'mcp' package: pip install 'ptcflow[mcp]'") from None
    return mcp


def _label(target: str | Sequence[str]) -> str:
    if isinstance(target, str) and _is_url(target):
        parts = urlsplit(target)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    argv = shlex.split(target) if isinstance(target, str) else list(target)
    return f"stdio:{os.path.basename(argv[0]) if argv else '?'}"


class MCPToolSource:
    """The tools of one MCP server, connected for the duration of ``async with``.

    Build it with :func:`from_mcp_server`. Entering it starts the server process (stdio)
    or opens the HTTP session, lists the tools, and turns each one into a
    :class:`~ptcflow.tools.Tool` with ``pass_input=True`` (the input map is sent as the
    server expects), whose signature comes from the tool's input and output JSON Schema.
    Leaving it closes the session and stops the process: nothing outlives the block.

    It is a :class:`~ptcflow.tools.ToolSource`: pass it to ``Runtime(tools=[...])`` or
    ``for_agent`` while it is open. Tool calls can come from any task.
    """

    def __init__(
        self,
        target: str | Sequence[str],
        *,
        name: str | None = None,
        prefix: str = "",
        include: Iterable[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        call_timeout: float | None = None,
        timeout_ms: int | None = None,
        max_retries: int | None = None,
    ) -> None:
        if isinstance(target, str) and not target.strip():
            raise UsageError("from_mcp_server needs a URL or a command, got an empty string")
        if not isinstance(target, str) and not list(target):
            raise UsageError("from_mcp_server needs a URL or a command, got an empty argv")
        self.target = target
        self.name = name or _label(target)
        self.prefix = prefix
        self._include = set(include) if include is not None else None
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._call_timeout = call_timeout
        self._timeout_ms = timeout_ms
        self._max_retries = max_retries
        self._tg: TaskGroup | None = None
        self._stop = anyio.Event()
        self._client: Any = None
        self._stderr: Any = None
        self._startup_stderr = ""
        self._tools: tuple[Tool, ...] = ()
        self._closed = False

    def __repr__(self) -> str:
        state = "open" if self._client is not None else ("closed" if self._closed else "new")
        return f"<MCPToolSource {self.name!r} {state} tools={len(self._tools)}>"

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The server's tools (empty until the source is entered)."""
        return self._tools

    def ptcflow_tools(self) -> tuple[Tool, ...]:
        """Return the tools (the :class:`~ptcflow.tools.ToolSource` protocol).

        Raises:
            UsageError: the source is not open (use ``async with from_mcp_server(...)``).
        """
        if self._client is None:
            raise UsageError(
                f"MCP server {self.name} is not connected: open it first with "
                "`async with from_mcp_server(...) as tools:` and pass `tools` inside the block"
            )
        return self._tools

    def _transport(self, mcp: Any) -> Any:
        if _is_url(self.target):
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(str(self.target))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv = self._argv()
        params = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env=self._env,
            cwd=os.fspath(self._cwd) if self._cwd is not None else None,
        )
        # closed by the exit stack of _serve, after the process has exited
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115
        return stdio_client(params, errlog=self._stderr)

    async def __aenter__(self) -> MCPToolSource:
        if self._tg is not None or self._closed:
            raise UsageError(f"{self!r} can be entered once; call from_mcp_server(...) again")
        mcp = _import_mcp()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        try:
            client, listed = await tg.start(self._serve, mcp)
        except BaseException as exc:
            self._closed = True
            self._tg = None
            self._stop.set()
            await tg.__aexit__(None, None, None)  # the serving task has ended already
            raise startup_failure(
                _single(exc),
                target=self.target,
                name=self.name,
                argv=None if _is_url(self.target) else self._argv(),
                stderr=self._startup_stderr,
            ) from None
        self._client = client
        self._tools = tuple(self._tool(t) for t in listed)
        return self

    async def _serve(self, mcp: Any, *, task_status: TaskStatus[tuple[Any, list[Any]]]) -> None:
        """Own the SDK client in a task of its own.

        The SDK's transports cancel their host task when the connection breaks (a crashed
        server): hosting the client here keeps that away from the caller's task.
        """
        started = False
        try:
            async with AsyncExitStack() as stack:
                transport = self._transport(mcp)
                if self._stderr is not None:
                    stack.callback(self._close_stderr)
                client = await stack.enter_async_context(
                    mcp.Client(transport, read_timeout_seconds=self._call_timeout)
                )
                listed = await self._list(client)
                task_status.started((client, listed))
                started = True
                await self._stop.wait()
        except Exception as exc:
            # A server that died leaves its transport to fail on the way out (a pending
            # request's "server disconnected", a refused session DELETE): the session is
            # closed either way. Startup failures and anything else propagate.
            if not started or not _connection_errors_only(exc):
                raise

    def _close_stderr(self) -> None:
        """Keep the tail of a stdio server's stderr (for a startup failure), then close it."""
        self._startup_stderr = self._stderr_since(0)
        self._stderr.close()

    def _argv(self) -> list[str]:
        argv = shlex.split(self.target) if isinstance(self.target, str) else list(self.target)
        if argv and argv[0] == "python":
            argv[0] = sys.executable
        return argv

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session and stop the server process (idempotent; blocks until the
        process has exited or the HTTP session is closed)."""
        tg, self._tg = self._tg, None
        self._client = None
        self._closed = True
        self._stop.set()
        if tg is not None:
            await tg.__aexit__(None, None, None)

    async def _list(self, client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        if self._include is not None:
            missing = self._include - {t.name for t in tools}
            if missing:
                raise UsageError(
                    f"MCP server {self.name} has no tool(s) {sorted(missing)}; "
                    f"it offers {sorted(t.name for t in tools)}"
                )
            tools = [t for t in tools if t.name in self._include]
        return tools

    def _stderr_size(self) -> int:
        if self._stderr is None or self._stderr.closed:
            return 0
        try:
            return int(os.fstat(self._stderr.fileno()).st_size)
        except (OSError, ValueError):
            return 0

    def _stderr_since(self, offset: int) -> str:
        """What a stdio server wrote on stderr since ``offset`` (its last characters)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        try:  # pread leaves the file offset, shared with the server process, alone
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            start = max(offset, size - 4 * _STDERR_TAIL)
            raw = os.pread(fd, size - start, start)
        except (OSError, ValueError):
            return ""
        return raw.decode("utf-8", "replace")[-_STDERR_TAIL:]

    def _tool(self, listed: Any) -> Tool:
        remote = str(listed.name)
        output_schema = getattr(listed, "output_schema", None)
        server = self.name

        async def call(arguments: dict[str, Any]) -> Any:
            client = self._client
            if client is None:
                raise UsageError(f"MCP server {server} is closed; tool {remote!r} cannot run")
            offset = self._stderr_size()
            try:
                result = await client.call_tool(remote, arguments)
            except Exception as exc:
                tail = self._stderr_since(offset)
                failure = call_failure(exc, server=server, tool=remote, stderr_tail=tail)
                if failure is None:
                    raise
                raise failure from exc
            if getattr(result, "is_error", False):
                return Err(error=error_result(result, server=server, tool=remote))
            return result_value(result, output_schema)

        call.__name__ = call.__qualname__ = tool_name(remote, self.prefix)
        call.__dict__["gen_ai_tool_type"] = "extension"  # served by another system (spans)
        return Tool(
            tool_name(remote, self.prefix),
            call,
            description=str(getattr(listed, "description", None) or ""),
            input_schema=dict(listed.input_schema or {"type": "object", "properties": {}}),
            output_schema=unwrap_output_schema(output_schema),
            pass_input=True,
            timeout_ms=self._timeout_ms,
            max_retries=self._max_retries,
        )


def from_mcp_server(
    target: str | Sequence[str],
    *,
    name: str | None = None,
    prefix: str = "",
    include: Iterable[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    call_timeout: float | None = None,
    timeout_ms: int | None = None,
    max_retries: int | None = None,
) -> MCPToolSource:
    """Tools from an MCP server, over streamable HTTP or stdio (``ptcflow[mcp]``).

    Nothing happens until the result is entered with ``async with``, which connects, lists
    the tools and converts them; leaving the block closes the session and stops the
    server process. Does not block.

    Args:
        target: an ``http(s)://`` URL (streamable HTTP), or a command that starts a stdio
            server, as one string (split like a shell would) or an argv list. A leading
            ``python`` means the current interpreter.
        name: how errors and details name the server (default: the URL or command).
        prefix: prepended to every tool name (``"fs_"``); names are then made valid
            ptcflow tool names (``text.echo`` becomes ``text_echo``).
        include: only these tools (by their server-side names); a missing one is an error.
        env: environment of a stdio server (default: the SDK's safe minimal environment).
        cwd: working directory of a stdio server.
        call_timeout: seconds the SDK waits for each tool call (``timeout`` error).
        timeout_ms: per-attempt deadline the executor applies to each tool call.
        max_retries: retries the executor allows for retryable tool failures.

    Returns:
        An :class:`MCPToolSource` (an async context manager and a ``ToolSource``).

    Example:
        >>> source = from_mcp_server("python -m my_mcp_server", prefix="fs_")
        >>> source
        <MCPToolSource 'stdio:python' new tools=0>
    """
    return MCPToolSource(
        target,
        name=name,
        prefix=prefix,
        include=include,
        env=env,
        cwd=cwd,
        call_timeout=call_timeout,
        timeout_ms=timeout_ms,
        max_retries=max_retries,
    )
