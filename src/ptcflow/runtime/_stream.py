"""A run as an async iterator of events: :meth:`Runtime.stream` (and ``SubAgent.stream``).

The run's signals and those of every run under it (agents called as tools, by the model
or by a program) are read from the Runtime's bus, subscribed *before* the run starts, and
turned into :class:`StreamEvent` values: what a caller shows while a run goes on, each
carrying the ``path`` of agent names from the top-level run down to the run it belongs
to. The last event is the top-level run's ``run_ended``; the run's Step is then on
:attr:`EventStream.step`.
"""

from __future__ import annotations

from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import anyio
import msgspec

from ptcflow.signals import (
    LLM_DELTA,
    LLM_RESPONSE,
    PROGRAM_PRINT,
    PROGRAM_RESULT,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    Err,
    ErrorEnvelope,
    Ok,
    ProgramOutput,
    Signal,
    Subscription,
)

if TYPE_CHECKING:
    from ptcflow.core import Step


class _Handle(Protocol):
    """What the stream needs of a :class:`~ptcflow.runtime.RunHandle`."""

    @property
    def run_id(self) -> str: ...
    @property
    def done(self) -> bool: ...
    def cancel(self, message: str = "") -> None: ...
    async def wait(self) -> Step: ...


__all__ = ("EventKind", "EventStream", "StreamEvent")

EventKind: TypeAlias = Literal[
    "run_started",
    "text",
    "message",
    "tool_started",
    "tool_ended",
    "printed",
    "program_ended",
    "run_ended",
]
"""What a :class:`StreamEvent` reports (see its docstring)."""


class StreamEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One thing that happened in a streamed run (:meth:`Runtime.stream`).

    ``kind`` says what, and which fields are set:

    * ``run_started``: a run began (the top-level run, or an agent it called): ``name``
      is the agent's name.
    * ``text``: a chunk of a model's text as the model writes it (a model call that
      streams: ``ReAct(stream=True)``, a SubAgent with ``stream=True``, whose text is
      its program); ``call_id`` is the model call.
    * ``message``: a model call ended: ``text`` is its whole text (for a streamed call,
      every ``text`` chunk of it joined), or ``error`` why it failed. A SubAgent runs
      the program of this text only, never a part of a stream.
    * ``tool_started``: a tool call began (a program's ``(call ...)`` included):
      ``name``, ``arguments``; ``call_id`` is the call.
    * ``tool_ended``: the call ended: ``name`` and ``value``, or ``error``.
    * ``printed``: a program printed ``text`` (``println`` and friends), as it printed
      it; ``call_id`` is the program (a program run again, a retried attempt, prints
      again: each print is given once).
    * ``program_ended``: a program ended: ``value`` (its value; for ``(return v)``,
      ``v``) or ``error`` (a program error: its category as the type).
    * ``run_ended``: a run ended: ``value`` or ``error``. The top-level run's is the
      last event.

    Attributes:
        kind: what happened.
        run_id: the run it happened in.
        path: the agent names from the top-level run down to that run (``("planner",)``
            for the top-level run, ``("planner", "researcher")`` for an agent it called).
            Two calls of one agent share a path; their ``run_id`` tells them apart.
        call_id: the model call, tool call or program it is about (``None`` for runs).
        name: the tool's name, or the agent's for ``run_started``.
        text: the chunk, the whole message or the printed output.
        arguments: a tool call's arguments.
        value: a tool's result, a program's value, a run's value.
        error: what failed (``None``: nothing did).
        signal: the signal the event was made from.
    """

    kind: EventKind
    run_id: str
    path: tuple[str, ...]
    call_id: str | None = None
    name: str = ""
    text: str = ""
    arguments: dict[str, Any] | None = None
    value: Any = None
    error: ErrorEnvelope | None = None
    signal: Signal | None = None


_END: Final = (REQUEST_COMPLETED, REQUEST_FAILED)


class EventStream:
    """The events of one streamed run (:meth:`Runtime.stream` returns it, started).

    Use it as ``async with rt.stream(...) as events: async for event in events: ...``.
    Iteration ends after the top-level run's ``run_ended``; then :attr:`step` is its
    Step. Leaving the ``async with`` early cancels the run (and every agent under it)
    and waits for it to end.

    The bus never waits for a reader: a reader that falls more than ``buffer`` signals
    behind gets :class:`~ptcflow.signals.SignalOverflowError` (raise ``buffer``, or read
    faster); the run goes on.
    """

    def __init__(self, handle: _Handle, subscription: Subscription) -> None:
        self.handle = handle
        """The run's :class:`RunHandle` (``cancel()``, ``wait()``)."""
        self._sub = subscription
        self._root = handle.run_id
        self._prefix = self._root + "/"
        self._paths: dict[str, tuple[str, ...]] = {}
        self._texts: dict[str, list[str]] = {}
        self._printed: dict[str, int] = {}  # program call id -> prints given
        self._ready: deque[StreamEvent] = deque()
        self._ended = False
        self.step: Step | None = None
        """The top-level run's Step, once iteration has ended (``None`` before)."""

    @property
    def run_id(self) -> str:
        """The top-level run's id."""
        return self._root

    def __repr__(self) -> str:
        return f"<EventStream {self._root} {'ended' if self._ended else 'running'}>"

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop reading: close the subscription; a run not over yet is cancelled, and
        waited for (at most 30 s, shielded)."""
        self._sub.close()
        self._ended = True
        if not self.handle.done:
            self.handle.cancel(f"run {self._root}: its event stream was closed")
            with anyio.move_on_after(30, shield=True):
                self.step = await self.handle.wait()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._ready:
            if self._ended:
                raise StopAsyncIteration
            try:
                first = await self._sub.receive()
            except anyio.EndOfStream:
                self._ended = True
                raise StopAsyncIteration from None
            ended = self._take(first)
            if not ended:  # what is buffered behind it too: one wait for them all
                for signal in self._sub.drain_nowait():
                    if self._take(signal):
                        ended = True
                        break
            if ended:
                self._ended = True
                self._sub.close()
                self.step = await self.handle.wait()
        return self._ready.popleft()

    def _take(self, signal: Signal) -> bool:
        """Queue the event of one signal (none for another run's); True for the
        top-level run's end, the stream's last event."""
        run = signal.run_id or ""
        if run != self._root and not run.startswith(self._prefix):
            return False
        event = self._event(signal, run)
        if event is None:
            return False
        self._ready.append(event)
        return event.kind == "run_ended" and run == self._root

    def _path(self, signal: Signal, run: str) -> tuple[str, ...]:
        path = self._paths.get(run)
        if path is None:
            # a run whose start was not seen: its parent's path and no name of its own
            parent = self._paths.get(signal.parent_run_id or "", ())
            path = self._paths[run] = (*parent, "")
        return path

    def _event(self, signal: Signal, run: str) -> StreamEvent | None:
        """The event of one signal of the run or of a run under it (``None``: none)."""
        kind, data, call = signal.type, signal.data, signal.call_id
        if kind == LLM_DELTA:
            text = data.chunk.text
            if not text:
                return None
            self._texts.setdefault(call or "", []).append(text)
            return StreamEvent(
                kind="text",
                run_id=run,
                path=self._path(signal, run),
                call_id=call,
                text=text,
                signal=signal,
            )
        if kind == REQUEST_STARTED:
            name = getattr(data, "agent", "") or ""
            parent = self._paths.get(signal.parent_run_id or "", ()) if run != self._root else ()
            path = self._paths[run] = (*parent, name)
            return StreamEvent(kind="run_started", run_id=run, path=path, name=name, signal=signal)
        path = self._path(signal, run)
        if kind == LLM_RESPONSE:
            streamed = self._texts.pop(call or "", None)
            result = data.result
            if isinstance(result, Err):
                return StreamEvent(
                    kind="message",
                    run_id=run,
                    path=path,
                    call_id=call,
                    text="".join(streamed or ()),
                    error=result.error,
                    signal=signal,
                )
            text = getattr(result.payload, "text", "") or ""
            return StreamEvent(
                kind="message", run_id=run, path=path, call_id=call, text=text, signal=signal
            )
        if kind == TOOL_STARTED:
            return StreamEvent(
                kind="tool_started",
                run_id=run,
                path=path,
                call_id=call,
                name=data.tool_name,
                arguments=dict(data.arguments),
                signal=signal,
            )
        if kind == TOOL_RESULT:
            return _ended("tool_ended", run, path, call, data.result, signal, name=data.tool_name)
        if kind == PROGRAM_PRINT:
            index = data.index
            if index < self._printed.get(call or "", 0):  # a program run again prints again
                return None
            self._printed[call or ""] = index + 1
            return StreamEvent(
                kind="printed", run_id=run, path=path, call_id=call, text=data.text, signal=signal
            )
        if kind == PROGRAM_RESULT:
            result = data.result
            if isinstance(result, Ok) and isinstance(result.payload, ProgramOutput):
                out = result.payload
                if out.error is not None:
                    error = ErrorEnvelope.make(out.error.category, out.error.describe())
                    return StreamEvent(
                        kind="program_ended",
                        run_id=run,
                        path=path,
                        call_id=call,
                        error=error,
                        signal=signal,
                    )
                value = out.fail_value if out.failed else out.value
                return StreamEvent(
                    kind="program_ended",
                    run_id=run,
                    path=path,
                    call_id=call,
                    value=value,
                    signal=signal,
                )
            return _ended("program_ended", run, path, call, result, signal)
        if kind in _END:
            return _ended("run_ended", run, path, None, data.result, signal)
        return None


def _ended(
    kind: EventKind,
    run: str,
    path: tuple[str, ...],
    call: str | None,
    result: Any,
    signal: Signal,
    *,
    name: str = "",
) -> StreamEvent:
    if isinstance(result, Err):
        return StreamEvent(
            kind=kind, run_id=run, path=path, call_id=call, name=name, error=result.error,
            signal=signal,
        )  # fmt: skip
    value = result.payload if isinstance(result, Ok) else None
    return StreamEvent(
        kind=kind, run_id=run, path=path, call_id=call, name=name, value=value, signal=signal
    )
