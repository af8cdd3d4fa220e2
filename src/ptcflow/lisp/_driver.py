"""The driver side of a run: answering a program's requests (tool calls, yields, batches).

Every tool call gets its ``index`` in issue order when the driver receives it (a ``pmap``
batch is numbered in program order before any of its calls starts), so the numbering is the
same on every run and every backend. A call is answered by the caller's router (``call=``),
by the tools given to ``run``, or from a record of an earlier run (``replay=``).
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import anyio
import anyio.lowlevel
import msgspec

from ptcflow.errors import UsageError
from ptcflow.lisp._runtime import YIELD, Batch, Outcome, ToolRequest
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.limits import Budget

__all__ = (
    "SUSPEND",
    "Driver",
    "ProgramSuspended",
    "ReplayMismatch",
    "Tool",
    "ToolCallRecord",
    "ToolRouter",
    "WaitClock",
)

Tool = Callable[[dict[str, Any]], Awaitable[Any] | Any]


class ToolRouter(Protocol):
    """``await call(name, args, index)``: performs one tool call of a program for the caller.

    It returns what a tool returns (plain data, or an error envelope), or a
    :class:`ptcflow.signals.Ok` / :class:`ptcflow.signals.Err` (read by their ``ok``,
    ``payload`` and ``error`` attributes); an exception it raises is the tool's failure.
    """

    def __call__(self, name: str, args: dict[str, Any], index: int, /) -> Awaitable[Any]:
        """Perform the call."""
        ...


class ReplayMismatch(UsageError):
    """A program asked for a tool call that its record does not hold (``run(replay=...)``).

    The record belongs to another program, another context or another memory, or the
    program is not deterministic (a ptcflow bug). The message names the call.
    """


class _Suspend:
    __slots__ = ()

    def __repr__(self) -> str:
        return "SUSPEND"


SUSPEND: Final = _Suspend()
"""What a router returns for a call that cannot be answered now (it waits for a person):
the program stops once the calls issued with it (a ``pmap`` batch) have ended, and
:func:`~ptcflow.lisp.run` raises :class:`ProgramSuspended`. Run it again later with the
record of the calls that completed (``replay=``, ``resume=True``): nothing runs twice."""


class ProgramSuspended(Exception):
    """A program stopped at calls its router could not answer now (:data:`SUSPEND`).

    Attributes:
        indexes: the suspended calls' indexes.
        records: the calls that completed in this run (a record to resume from).
    """

    def __init__(self, indexes: tuple[int, ...], records: tuple[ToolCallRecord, ...]) -> None:
        super().__init__(f"the program waits for tool calls {list(indexes)}")
        self.indexes = indexes
        self.records = records


class ToolCallRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call a program made.

    Args:
        name: the tool's name.
        args: the arguments as plain Python data (string keys).
        result: what the tool returned (``None`` when it failed).
        duration_ms: how long the call took.
        error: the error message when the tool failed, else ``None``.
        index: the call's position in issue order (0, 1, ...), the same on every run of
            the same program with the same tool results, ``pmap`` included.
    """

    name: str
    args: dict[str, Any]
    result: Any = None
    duration_ms: float = 0.0
    error: str | None = None
    index: int = 0


class _Numbered:
    """A tool request with its issue index (numbered before anything runs)."""

    __slots__ = ("index", "request")

    def __init__(self, index: int, request: ToolRequest) -> None:
        self.index = index
        self.request = request


class Driver:
    """Answers a program's requests in the event loop."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        records: list[ToolCallRecord],
        call: ToolRouter | None = None,
        replay: Sequence[ToolCallRecord] | None = None,
        resume: bool = False,
    ) -> None:
        self.tools = tools
        self.records = records
        self.call = call
        self.replay = None if replay is None else {r.index: r for r in replay}
        self.resume = resume
        self.next_index = 0
        self.suspended: list[int] = []
        """Calls the router answered with :data:`SUSPEND` (the program stops after them)."""

    async def answer(self, request: Any) -> Any:
        return await self._answer(self._number(request))

    def _number(self, request: Any) -> Any:
        """Give every tool request its index, depth first in program order."""
        if type(request) is ToolRequest:
            index = self.next_index
            self.next_index += 1
            return _Numbered(index, request)
        if type(request) is Batch:
            return [self._number(r) for r in request.requests]
        return request

    async def _answer(self, item: Any) -> Any:
        if item is YIELD:
            await anyio.lowlevel.checkpoint()
            return None
        if type(item) is _Numbered:
            return await self.call_tool(item.request, item.index)
        if type(item) is list:
            answers: list[Any] = [None] * len(item)

            async def one(i: int, r: Any) -> None:
                answers[i] = await self._answer(r)

            async with anyio.create_task_group() as tg:
                for i, r in enumerate(item):
                    tg.start_soon(one, i, r)
            return answers
        raise AssertionError(f"unknown request {item!r}")  # pragma: no cover

    async def call_tool(self, req: ToolRequest, index: int) -> Outcome:
        if self.replay is not None:
            recorded = self.replay.get(index)
            if recorded is not None or not self.resume:
                return self._replayed(req, index, recorded)
        tool = self.tools.get(req.name)
        if tool is None and self.call is None:
            available = ", ".join(sorted(self.tools)) or "none"
            err = LispError("unknown_tool", f'unknown tool "{req.name}"; available: {available}')
            return Outcome(error=err)
        start = time.perf_counter()
        error: str | None = None
        result: Any = None
        try:
            if self.call is not None:
                result = await self.call(req.name, req.args, index)
            else:
                assert tool is not None
                result = tool(req.args)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:  # the tool's failure becomes a value the program sees
            error = str(exc) or type(exc).__name__
        if result is SUSPEND and error is None:
            self.suspended.append(index)
            return Outcome(None)  # never read: the program stops when this request ends
        if error is None:
            result, error = _unwrap(result)
        ms = (time.perf_counter() - start) * 1000
        record = ToolCallRecord(
            name=req.name, args=req.args, result=result, duration_ms=ms, error=error, index=index
        )
        self.records.append(record)
        return _outcome(record)

    def _replayed(self, req: ToolRequest, index: int, recorded: ToolCallRecord | None) -> Outcome:
        """Answer call ``index`` from the record (no tool runs)."""
        if recorded is None:
            raise ReplayMismatch(
                f'the program asked for tool call #{index} "{req.name}" {req.args!r}, but the '
                f"record holds only calls {sorted(self.replay or ())}; replay a program with "
                "the record of its own run (same source, ctx, memory and functions)"
            )
        if recorded.name != req.name or recorded.args != req.args:
            raise ReplayMismatch(
                f'tool call #{index} is "{req.name}" {req.args!r} in this run but '
                f'"{recorded.name}" {recorded.args!r} in the record; replay a program with '
                "the record of its own run (same source, ctx, memory and functions)"
            )
        record = msgspec.structs.replace(recorded, duration_ms=0.0)
        self.records.append(record)
        return _outcome(record)


def _outcome(record: ToolCallRecord) -> Outcome:
    """What the program sees of a finished call."""
    if record.error is not None:
        return Outcome(
            error=LispError("tool_error", f'tool "{record.name}" failed: {record.error}')
        )
    return Outcome(record.result)  # converted in the program's greenlet (RunState.call_tool)


def _unwrap(result: Any) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, error message)`` for what a tool or a router returned.

    Reads ``Ok`` / ``Err`` envelopes by their attributes (``ok`` with ``payload`` or
    ``error``), so this leaf package needs no import of ``ptcflow.signals``.
    """
    ok = getattr(result, "ok", None)
    if ok is True and hasattr(result, "payload") and not isinstance(result, dict):
        return result.payload, None
    if ok is False and hasattr(result, "error") and not isinstance(result, dict):
        err = result.error
        kind, msg = getattr(err, "type", None), getattr(err, "message", err)
        return None, f"{kind}: {msg}" if kind else str(msg)
    error = _envelope_error(result)
    return (None, error) if error is not None else (result, None)


def _envelope_error(result: Any) -> str | None:
    """The message of an error envelope (``{"ok": False, "error": {...}}`` or an object with
    ``type``/``message``/``retryable``), else ``None``."""
    if type(result) is dict and result.get("ok") is False and "error" in result:
        err = result["error"]
        if isinstance(err, dict):
            kind = err.get("type")
            msg = err.get("message", err)
            return f"{kind}: {msg}" if kind else str(msg)
        return str(err)
    if all(hasattr(result, a) for a in ("type", "message", "retryable")) and not isinstance(
        result, dict | list | str
    ):
        return f"{result.type}: {result.message}"
    return None


class WaitClock:
    """Stops a program's time limit while it waits on calls of ``untimed`` tools only.

    ``run(untimed_tools=...)`` names tools whose calls bound themselves (agents used as
    tools: their runs have limits of their own), so an orchestrator that waits seconds for
    its agents is not cut by its own time limit. A request made only of such calls (one
    call, or a ``pmap`` batch of them) pauses the clock: the budget's deadline and the
    scope that cancels the run at it move by the wait. A request that also calls any other
    tool does not: those waits count, so a hanging tool still ends the program.
    """

    __slots__ = ("budget", "scope", "untimed")

    def __init__(self, budget: Budget, scope: anyio.CancelScope, untimed: frozenset[str]) -> None:
        self.budget = budget
        self.scope = scope
        self.untimed = untimed

    def pause(self, request: Any) -> float | None:
        """Stop the clock if ``request`` waits on untimed calls only; when it stopped."""
        if not self._untimed(request):
            return None
        self.scope.deadline = math.inf
        return time.monotonic()

    def resume(self, paused: float) -> None:
        """Start the clock again: the deadline moves by the time since :meth:`pause`."""
        budget = self.budget
        budget.deadline += time.monotonic() - paused
        self.scope.deadline = anyio.current_time() + max(0.0, budget.deadline - time.monotonic())

    def _untimed(self, request: Any) -> bool:
        if type(request) is ToolRequest:
            return request.name in self.untimed
        if type(request) is Batch:
            return bool(request.requests) and all(self._untimed(r) for r in request.requests)
        return False
