"""Why an MCP server could not be started or reached, said in terms of what was tried."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from ptcflow.errors import PtcflowError
from ptcflow.signals import redact_url

__all__ = ("MCPConnectionError", "connection_errors_only", "is_url", "single", "startup_failure")


class MCPConnectionError(PtcflowError, ConnectionError):
    """An MCP server could not be started or reached when its source was entered.

    The message names the command (stdio) or the URL and says what to check; for a stdio
    server that exited, it ends with the last lines the server wrote on stderr.

    Attributes:
        target: the URL or the argv that was tried.
        stderr: the tail of the server's stderr (stdio; ``""`` otherwise).
    """

    def __init__(self, message: str, *, target: str | Sequence[str], stderr: str = "") -> None:
        super().__init__(message)
        self.target = target
        self.stderr = stderr


def connection_errors_only(exc: BaseException) -> bool:
    """True when ``exc`` (every member of a group) is an error of the connection: the
    network, the process pipes, or the SDK's transport."""
    if isinstance(exc, BaseExceptionGroup):
        return all(connection_errors_only(e) for e in exc.exceptions)
    module = type(exc).__module__
    return isinstance(exc, ConnectionError | OSError) or module.startswith(
        ("httpx", "httpcore", "anyio", "mcp.")
    )


def single(exc: BaseException) -> BaseException:
    """The one error inside nested single-member exception groups (the SDK's task groups
    wrap a startup failure such as a missing tool in two of them)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def is_url(target: Any) -> bool:
    """True for an ``http(s)://`` target (streamable HTTP), False for a command (stdio)."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def startup_failure(
    exc: BaseException,
    *,
    target: str | Sequence[str],
    name: str,
    argv: list[str] | None,
    stderr: str,
) -> BaseException:
    """What to raise when entering a source failed with ``exc``.

    Cancellations, ptcflow's own errors and bugs come back as they are; a server that
    could not be started or reached becomes an :class:`MCPConnectionError` naming the
    command (``argv``, with the tail of its ``stderr``) or the URL (``argv`` is ``None``).
    """
    if not isinstance(exc, Exception) or isinstance(exc, PtcflowError):
        return exc
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if argv is None:
        if not connection_errors_only(exc):
            return exc
        return MCPConnectionError(
            f"MCP server at {redact_url(str(target))} did not answer ({reason}); check that "
            "it is running and that the URL (host, port and path, often /mcp) is right",
            target=target,
        )
    command = shlex.join(argv)
    tail = stderr.strip()
    if isinstance(exc, FileNotFoundError | PermissionError) and not tail:
        verb = "was not found" if isinstance(exc, FileNotFoundError) else "cannot be run"
        return MCPConnectionError(
            f"MCP server {name} could not start: the command {argv[0]!r} {verb} "
            f"(command line: {command}); check the command, or give its full path",
            target=target,
        )
    if not connection_errors_only(exc):
        return exc
    shown = "\n".join(f"    {line}" for line in tail.splitlines()[-12:])
    said = f"; its stderr ends with:\n{shown}" if tail else " (it wrote nothing on stderr)"
    return MCPConnectionError(
        f"MCP server {name} exited before answering (command line: {command}){said}",
        target=target,
        stderr=tail,
    )
