"""A run's signals as AG-UI events (the ``ag-ui-protocol`` package's types and encoder).

:class:`AGUIStream` folds the signals of one run and of its child runs into AG-UI events:

* ``RUN_STARTED`` / ``RUN_FINISHED`` (the run's value as ``result``; a cancelled run with
  the ``cancelled`` outcome) / ``RUN_ERROR`` (the error's message, its type as ``code``);
* ``TEXT_MESSAGE_START`` / ``CONTENT`` / ``END`` from ``ai.llm.delta`` as the model
  streams, or one whole message from ``ai.llm.response`` when it does not (a SubAgent's
  model call: its text is the program);
* ``TOOL_CALL_START`` / ``ARGS`` / ``END`` from ``ai.tool.started`` and
  ``TOOL_CALL_RESULT`` from ``ai.tool.result`` (a program's tool calls included);
* ``CUSTOM`` events named ``ptcflow.print`` for what a streaming SubAgent's program
  prints (``ai.program.print``): ``{"programId", "text", "index"}``, as it prints;
* ``SUBAGENT_STARTED`` / ``FINISHED`` / ``ERROR`` for child runs (agents called as tools),
  whose events carry ``subagentRunId``;
* ``STATE_SNAPSHOT`` then ``STATE_DELTA`` (JSON Patch) of the state
  ``{"memory": {run id: {name: PTC-Lisp text}}}``: each SubAgent's memory after each
  program (the agent's shared state, as AG-UI clients use it); with ``mission=True`` the
  state also holds ``"mission": {node id: node}``, the mission tree of
  :mod:`ptcflow.trace` (what the example page draws; it costs a fold of every signal).

Content is redacted as the live page redacts it (``sanitize``; known ``secrets``
scrubbed).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeAlias

import anyio
import msgspec
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError

from ptcflow.core import Approve, Decision, Deny, PauseInUseError, ResumeError, Step, Supply
from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.signals import (
    LLM_DELTA,
    LLM_RESPONSE,
    PROGRAM_PRINT,
    PROGRAM_RESULT,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_PAUSED,
    REQUEST_RESUMED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    Err,
    Ok,
    PendingCall,
    ProgramOutput,
    Secrets,
    Signal,
    sanitize,
)
from ptcflow.trace import Mission, Redactor

from ._asgi import BadRequest, Disconnect, Receive, RunStreamEndpoint, Send, StartedRun, _answer

__all__ = (
    "PRINT_EVENT",
    "AGUIEndpoint",
    "AGUIStream",
    "MemoryPausedRuns",
    "PausedRuns",
    "TaskRun",
    "agui_endpoint",
    "decisions_from_resume",
    "interrupt_of",
    "last_user_text",
    "parse_run_input",
)

PRINT_EVENT = "ptcflow.print"
"""The name of the ``CUSTOM`` event that carries a program's printed output."""

_ENCODER = EventEncoder()


def _pointer(key: str) -> str:
    """One JSON Pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


_Spec: TypeAlias = tuple[type[BaseEvent], dict[str, Any]]
"""An event to send: its class and its field values (``None`` values left out)."""


def _E(cls: type[BaseEvent], /, **values: Any) -> _Spec:
    """An event whose values are never ``None``, but for ``subagent_run_id`` (``None``:
    an event of the run itself, the usual case). A field that may be ``None``:
    :func:`_E_some`."""
    if values.get("subagent_run_id", 0) is None:
        del values["subagent_run_id"]
    return cls, values


def _E_some(cls: type[BaseEvent], /, **values: Any) -> _Spec:
    """An event, its ``None`` values left out (as the encoder leaves them out)."""
    if None in values.values():
        values = {k: v for k, v in values.items() if v is not None}
    return cls, values


def _delta(ops: list[dict[str, Any]]) -> _Spec:
    """A ``STATE_DELTA`` of JSON Patch operations."""
    return StateDeltaEvent, {"delta": ops}


_json_bytes = msgspec.json.Encoder().encode
_MISSING: Any = object()
_TEMPLATES: dict[tuple[Any, ...], list[bytes] | None] = {}


def _template(
    cls: type[BaseEvent], keys: tuple[str, ...], consts: tuple[tuple[str, Any], ...] = ()
) -> list[bytes] | None:
    """The encoder's output for ``cls`` with these fields, cut around each field's value:
    made once by the protocol's own types and ``EventEncoder`` with a placeholder string
    per field (and ``consts`` as they are). ``None`` when a field takes no string (the
    event is then built each time)."""
    marks: dict[str, Any] = {key: f"\x01{n}\x01" for n, key in enumerate(keys)}
    try:
        text = _ENCODER.encode(cls(**marks, **dict(consts)))
    except ValidationError as exc:  # a field that takes a map: a map placeholder
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else ""
            if key in marks and isinstance(marks[key], str):
                marks[key] = {marks[key]: 0}
        try:
            text = _ENCODER.encode(cls(**marks, **dict(consts)))
        except ValidationError:
            return None
    found = []
    for key in keys:
        literal = json.dumps(marks[key], separators=(",", ":"))
        if text.count(literal) != 1:
            return None
        found.append((text.index(literal), literal))
    parts, at = [], 0
    for index, literal in sorted(found):
        parts.append(text[at:index].encode())
        at = index + len(literal)
    parts.append(text[at:].encode())
    order = [key for _, key in sorted(zip([i for i, _ in found], keys, strict=True))]
    if tuple(order) != keys:  # fields in the encoder's order: keep the template's
        _ORDER[(cls, keys)] = tuple(order)
    return parts


_ORDER: dict[tuple[type[BaseEvent], tuple[str, ...]], tuple[str, ...]] = {}
_FIXED: dict[type[BaseEvent], str] = {TextMessageStartEvent: "role", ToolCallResultEvent: "role"}
"""A field that takes a few literal values: a template per value."""
_DELTA_HEAD, _DELTA_TAIL = _ENCODER.encode(StateDeltaEvent(delta=[])).encode().split(b"[]")


def _content_template() -> list[bytes]:
    parts = _template(TextMessageContentEvent, ("message_id", "delta"))
    assert parts is not None and len(parts) == 3, "TEXT_MESSAGE_CONTENT: messageId, delta"
    return parts


_Compiled: TypeAlias = tuple[bytes, tuple[tuple[str, bytes], ...]]
_COMPILED: dict[tuple[Any, ...], _Compiled | None] = {}
"""(class, field names..., the fixed field's value) -> the template's head and each field
with the bytes that follow its value (``None``: no template, the event is built)."""


def _compile(cls: type[BaseEvent], values: dict[str, Any], fixed: str | None) -> _Compiled | None:
    consts: tuple[tuple[str, Any], ...] = ()
    if fixed is not None and fixed in values:
        consts = ((fixed, values[fixed]),)
    keys = tuple(key for key in values if key != fixed)
    parts = _TEMPLATES.get((cls, keys, consts), _MISSING)
    if parts is _MISSING:
        parts = _TEMPLATES[(cls, keys, consts)] = _template(cls, keys, consts)
    if parts is None:
        return None
    order = _ORDER.get((cls, keys), keys)
    return parts[0], tuple(zip(order, parts[1:], strict=True))


def _encode(cls: type[BaseEvent], values: dict[str, Any]) -> bytes:
    """One event as the protocol's ``EventEncoder`` writes it. Each (class, fields) pair is
    encoded once by the protocol's types (:func:`_template`); after that only the values
    are encoded (msgspec), into the template's places."""
    if cls is StateDeltaEvent:
        return _DELTA_HEAD + _json_bytes(values["delta"]) + _DELTA_TAIL
    fixed = _FIXED.get(cls)
    key = (cls, *values, values.get(fixed)) if fixed is not None else (cls, *values)
    compiled: _Compiled | None = _COMPILED.get(key, _MISSING)
    if compiled is _MISSING:
        compiled = _COMPILED[key] = _compile(cls, values, fixed)
    if compiled is None:
        return _ENCODER.encode(cls(**values)).encode()
    head, rest = compiled
    out = [head]
    for name, after in rest:
        out += (_json_bytes(values[name]), after)
    return b"".join(out)


_EVENTFUL = frozenset(
    {
        REQUEST_STARTED, REQUEST_RESUMED, REQUEST_PAUSED, REQUEST_COMPLETED, REQUEST_FAILED,
        LLM_DELTA, LLM_RESPONSE, TOOL_STARTED, TOOL_RESULT, PROGRAM_PRINT,
    }
)  # fmt: skip
"""The signals that make events without state (the others only change the state)."""
_STATEFUL = _EVENTFUL | {PROGRAM_RESULT}
"""The signals that make events with state."""

_CONTENT = _content_template()
"""TEXT_MESSAGE_CONTENT cut around its messageId and delta."""
_CLEAN: Callable[[Any], Any] = Redactor().value
"""Content cleaned without secrets to scrub: one redactor for every stream (it keeps
nothing of a stream's)."""
_NO_MESSAGE: Any = object()
"""In ``feed_many``: no message's chunks are being merged (equal to no call id)."""


class AGUIStream:
    """The AG-UI events of run ``root`` and its child runs, one signal at a time.

    Args:
        root: the ptcflow run id of the top-level run.
        thread_id: the AG-UI thread id (from the client's ``RunAgentInput``).
        run_id: the AG-UI run id (from the client's ``RunAgentInput``; default ``root``).
        state: send the SubAgents' memory as AG-UI state: ``STATE_SNAPSHOT`` of
            ``{"memory": {}}`` after ``RUN_STARTED``, then a ``STATE_DELTA`` each time a
            program changes its run's memory.
        mission: add the mission tree (:class:`ptcflow.trace.Mission`) to the state under
            ``"mission"``: each node in the snapshot, then each changed node in a
            ``STATE_DELTA`` (what the example page draws). It folds every signal into
            the tree, and repeats tool arguments, results and text in the state: a
            client that only reads the agent's state does not need it. Needs
            ``state=True``.
        secrets: secret values scrubbed from what is sent.

    Raises:
        UsageError: ``mission=True`` with ``state=False``.

    Example:
        >>> from ptcflow.signals import RequestStartedData
        >>> stream = AGUIStream("r1", thread_id="t1", state=False)
        >>> [e.type.value for e in stream.events(Signal.create(
        ...     "ai.request.started", RequestStartedData(input="hi"), run_id="r1", seq=1))]
        ['RUN_STARTED']
    """

    def __init__(
        self,
        root: str,
        *,
        thread_id: str,
        run_id: str | None = None,
        state: bool = True,
        mission: bool = False,
        secrets: Secrets | None = None,
    ) -> None:
        if mission and not state:
            raise UsageError(
                "AGUIStream(state=False, mission=True): the mission tree is sent as part of "
                "the AG-UI state; give state=True to send it, or leave mission=False"
            )
        self.root = root
        self.thread_id = thread_id
        self.run_id = run_id or root
        self.state = state
        self.secrets = secrets if secrets else None
        # what sanitize() then the secrets' scrub give, without a copy when nothing changes
        self._clean: Callable[[Any], Any] = (
            _CLEAN if self.secrets is None else Redactor(self.secrets).value
        )
        self.mission = Mission(secrets=secrets) if mission else None
        """The mission tree folded so far (``None`` unless ``mission=True``)."""
        # the signals that can make an event when no tree is folded (the others are skipped)
        self._kinds = _STATEFUL if state else _EVENTFUL
        self.done = False
        self.started = False  # RUN_STARTED was sent
        self._prefix = root + "/"
        self._open: dict[str, str | None] = {}  # message id -> its subagent run id
        self._tools: set[str] = set()  # tool calls started and not yet answered
        self._printed: dict[str, int] = {}  # program call id -> prints sent
        self._names: dict[str, str] = {}  # run id -> agent name
        self._memory: dict[str, dict[str, str]] = {}
        self._dirty: dict[str, Any] = {}  # mission nodes changed and not yet sent
        self._batching = False  # in feed_many: nodes are sent once, at the batch's end
        self.resumed = False  # the run continues a paused one (ai.request.resumed)

    def owns(self, signal: Signal) -> bool:
        """True for a signal of the run or of one of its child runs."""
        run = signal.run_id or ""
        return run == self.root or run.startswith(self._prefix)

    def _json(self, value: Any) -> str:
        return _json_bytes(self._clean(value)).decode()

    def events(self, signal: Signal) -> list[BaseEvent]:
        """The events for one signal (none for a signal of another run)."""
        return [cls(**values) for cls, values in self._specs(signal)]

    def _specs(self, signal: Signal) -> list[_Spec]:
        """What :meth:`events` builds: each event's class and field values."""
        kind = signal.type
        if self.done or (self.mission is None and kind not in self._kinds):
            return []
        run = signal.run_id or ""
        if run != self.root and not run.startswith(self._prefix):
            return []
        sub = None if run == self.root else run
        out: list[_Spec] = []
        # a streamed chunk (or print) changes no node of the tree
        changed = (
            self.mission.add(signal)
            if self.mission is not None and kind != LLM_DELTA and kind != PROGRAM_PRINT
            else []
        )
        if kind not in _STATEFUL:  # no event: only the tree changed
            if changed and kind != USAGE:  # usage comes right before the response that sends it
                return self._changed(changed)
            return []
        data: Any = signal.data
        call = signal.call_id or ""
        ending = False
        if kind == REQUEST_RESUMED:
            # a paused run continues (a new AG-UI run): its calls that waited were
            # started by the run that paused; their results come without a start
            if sub is None:
                self.resumed = True
                if not self.started:
                    out.append(self._run_started())
                    if self.state:
                        out.append(self._snapshot())
                        changed = []
            elif run not in self._names:
                self._names[run] = ""
                out.append(self._subagent_started(run, signal.parent_run_id))
        elif kind == REQUEST_PAUSED:
            ending = sub is None
            if sub is not None:
                out.append(
                    _E(
                        SubagentFinishedEvent,
                        subagent_run_id=run,
                        outcome=SubagentFinishedSuspendedOutcome(),
                    )
                )
        elif kind == REQUEST_STARTED:
            self._names[run] = getattr(data, "agent", "") or ""
            if sub is None:
                out.append(self._run_started())
                if self.state:
                    out.append(self._snapshot())
                    changed = []
            else:
                out.append(self._subagent_started(run, signal.parent_run_id))
        elif kind == LLM_DELTA:
            text = data.chunk.text
            if text:
                if call not in self._open:
                    self._open[call] = sub
                    out.append(self._start_message(call, run, sub))
                out.append(
                    _E(TextMessageContentEvent, message_id=call, delta=text, subagent_run_id=sub)
                )
        elif kind == LLM_RESPONSE:
            if call in self._open:
                del self._open[call]
                out.append(_E(TextMessageEndEvent, message_id=call, subagent_run_id=sub))
            elif isinstance(data.result, Ok) and data.result.payload.text:
                out.append(self._start_message(call, run, sub))
                out.append(
                    _E(
                        TextMessageContentEvent,
                        message_id=call,
                        delta=data.result.payload.text,
                        subagent_run_id=sub,
                    )
                )
                out.append(_E(TextMessageEndEvent, message_id=call, subagent_run_id=sub))
        elif kind == TOOL_STARTED:
            self._tool_call(out, call, data.tool_name, data.arguments, sub)
        elif kind == TOOL_RESULT:
            if call not in self._tools and not self.resumed:
                # answered without a start (an unknown tool...); in a resumed run, a call
                # that waited was started by the run that paused
                self._tool_call(out, call, data.tool_name, {}, sub)
            self._tools.discard(call)
            result = data.result
            content = (
                self._json(result.payload)
                if isinstance(result, Ok)
                else self._json({"error": {"type": result.error.type, "message": result.error.message}})
            )  # fmt: skip
            out.append(
                _E(
                    ToolCallResultEvent,
                    message_id=f"{call}/result",
                    tool_call_id=call,
                    content=content,
                    role="tool",
                    subagent_run_id=sub,
                )
            )
        elif kind == PROGRAM_PRINT:
            index = data.index
            if index >= self._printed.get(call, 0):  # a program run again prints again
                self._printed[call] = index + 1
                value = {"programId": call, "text": self._clean(data.text), "index": index}
                out.append(_E(CustomEvent, name=PRINT_EVENT, value=value, subagent_run_id=sub))
        elif kind == PROGRAM_RESULT and self.state:
            result = data.result
            if isinstance(result, Ok) and isinstance(result.payload, ProgramOutput):
                memory = dict(result.payload.memory)
                if memory != self._memory.get(run):
                    self._memory[run] = memory
                    op = {"op": "add", "path": f"/memory/{_pointer(run)}", "value": self._clean(memory)}  # fmt: skip
                    out.append(_delta([op]))
        elif kind in (REQUEST_COMPLETED, REQUEST_FAILED):
            ending = sub is None
            result = data.result
            if sub is not None:
                if isinstance(result, Ok):
                    out.append(
                        _E_some(
                            SubagentFinishedEvent,
                            subagent_run_id=run,
                            result=self._clean(result.payload),
                        )
                    )
                else:
                    out.append(
                        _E(
                            SubagentErrorEvent,
                            subagent_run_id=run,
                            message=self._clean(result.error.message),
                            code=result.error.type,
                        )
                    )
        if changed:
            out.extend(self._changed(changed))
        if ending:
            if self._dirty:
                out.append(self._nodes_delta())
            out.extend(self._finish(signal))
        return out

    def _changed(self, nodes: list[Any]) -> list[_Spec]:
        """Mark ``nodes`` to be sent; their ``STATE_DELTA`` now unless in a batch (sent at
        its end)."""
        dirty = self._dirty
        for node in nodes:
            dirty[node.id] = node
        return [] if self._batching else [self._nodes_delta()]

    def _subagent_started(self, run: str, parent: str | None) -> _Spec:
        return _E_some(
            SubagentStartedEvent,
            subagent_run_id=run,
            name=self._names.get(run) or "agent",
            parent_subagent_run_id=parent if parent and parent != self.root else None,
            parent_tool_call_id=run[len(parent) + 1 :] if parent else None,
        )

    def _run_started(self) -> _Spec:
        self.started = True
        return _E(
            RunStartedEvent,
            thread_id=self.thread_id,
            run_id=self.run_id,
            metadata={"ptcflow": {"run_id": self.root}},
        )

    def _snapshot(self) -> _Spec:
        """``STATE_SNAPSHOT`` of the state so far: the memory (empty: no program has run
        yet), and the mission tree's nodes when it is sent."""
        if self.mission is None:
            return _E(StateSnapshotEvent, snapshot={"memory": {}})
        nodes = {n.id: n.to_json() for n in self.mission.walk()}
        return _E(StateSnapshotEvent, snapshot={"mission": nodes, "memory": {}})

    def _nodes_delta(self) -> _Spec:
        """``STATE_DELTA`` of the nodes changed since the last one (each node once)."""
        ops = [
            {"op": "add", "path": f"/mission/{_pointer(key)}", "value": node.to_json()}
            for key, node in self._dirty.items()
        ]
        self._dirty.clear()
        return _delta(ops)

    def _start_message(self, message_id: str, run: str, sub: str | None) -> _Spec:
        name = self._names.get(run)
        if not name:  # (an agent without a name: the field is left out)
            return _E(TextMessageStartEvent, message_id=message_id, role="assistant", subagent_run_id=sub)  # fmt: skip
        return _E(
            TextMessageStartEvent,
            message_id=message_id,
            role="assistant",
            name=name,
            subagent_run_id=sub,
        )

    def _tool_call(
        self, out: list[_Spec], call: str, name: str, args: Any, sub: str | None
    ) -> None:
        self._tools.add(call)
        out.append(
            _E(ToolCallStartEvent, tool_call_id=call, tool_call_name=name, subagent_run_id=sub)
        )
        out.append(
            _E(ToolCallArgsEvent, tool_call_id=call, delta=self._json(args), subagent_run_id=sub)
        )
        out.append(_E(ToolCallEndEvent, tool_call_id=call, subagent_run_id=sub))

    def _finish(self, signal: Signal) -> list[_Spec]:
        """Close what is open, then the run's last event."""
        self.done = True
        out: list[_Spec] = []
        if self._open:
            for message, sub in self._open.items():
                out.append(_E(TextMessageEndEvent, message_id=message, subagent_run_id=sub))
            self._open.clear()
        if signal.type == REQUEST_PAUSED:
            pending = signal.data.pending
            if pending:
                interrupts = [self._interrupt(p) for p in pending]
                out.append(
                    _E(
                        RunFinishedEvent,
                        thread_id=self.thread_id,
                        run_id=self.run_id,
                        outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
                    )
                )
            else:  # cannot happen: a run pauses for at least one call
                out.append(_E(RunErrorEvent, message="the run paused with no call waiting", code="paused"))  # fmt: skip
            return out
        result = signal.data.result
        if isinstance(result, Ok):
            value = self._clean(result.payload)
            if value is None:  # (the field is left out)
                out.append(_E(RunFinishedEvent, thread_id=self.thread_id, run_id=self.run_id))
            else:
                out.append(
                    _E(RunFinishedEvent, thread_id=self.thread_id, run_id=self.run_id, result=value)
                )
        elif isinstance(result, Err) and result.error.type == "cancelled":
            out.append(
                _E(
                    RunFinishedEvent,
                    thread_id=self.thread_id,
                    run_id=self.run_id,
                    outcome=RunFinishedCancelledOutcome(),
                )
            )
        else:
            error = result.error
            out.append(_E(RunErrorEvent, message=self._clean(error.message), code=error.type))
        return out

    def _interrupt(self, pending: PendingCall) -> Interrupt:
        run = pending.run_id or ""
        sub = run if run != self.root and run in self._names else None
        # the tool call the client saw start: a child's call has its own id in the stream
        # (the pending id is prefixed with the call that runs the child)
        call = pending.call_id
        seen = call if call in self._tools else None
        if seen is None:
            seen = next((t for t in sorted(self._tools) if call.endswith("/" + t)), None)
        return interrupt_of(pending, subagent_run_id=sub, tool_call_id=seen, clean=self._clean)

    def feed(self, signal: Signal) -> bytes:
        """The events of one signal, encoded as server-sent events (``b""``: none)."""
        if signal.type == LLM_DELTA and signal.run_id == self.root and signal.call_id in self._open:
            # the hot path: one streamed chunk of a message of the run, already started
            text = signal.data.chunk.text
            return self._content(signal.call_id, text) if text and not self.done else b""
        specs = self._specs(signal)
        if not specs:
            return b""
        if len(specs) == 1:
            return _encode(*specs[0])
        return b"".join([_encode(cls, values) for cls, values in specs])

    def _content(self, message_id: str, text: str) -> bytes:
        return _CONTENT[0] + _json_bytes(message_id) + _CONTENT[1] + _json_bytes(text) + _CONTENT[2]  # fmt: skip

    def feed_many(self, signals: Iterable[Signal]) -> bytes:
        """The events of several signals at once (what a client is sent when it has fallen
        behind): consecutive chunks of one message become one ``TEXT_MESSAGE_CONTENT``."""
        out: list[bytes] = []
        self._batching = True
        try:
            self._batch(signals, out)
        finally:
            self._batching = False
        if self._dirty and not self.done:
            out.append(_encode(*self._nodes_delta()))
        return b"".join(out)

    def _batch(self, signals: Iterable[Signal], out: list[bytes]) -> None:
        root = self.root
        opened = self._open
        done = self.done  # (only a signal that is not a chunk ends the stream)
        # the signals that may make an event (None: all, each changes the tree)
        kinds = self._kinds if self.mission is None else None
        call: Any = _NO_MESSAGE  # the message whose chunks are in texts
        texts: list[str] = []
        add = texts.append
        for signal in signals:
            if signal.type == LLM_DELTA and signal.run_id == root:
                if signal.call_id == call:  # the next chunk of the message (not done)
                    add(signal.data.chunk.text)  # ("" adds nothing)
                    continue
                text = signal.data.chunk.text
                if not text or done:
                    continue
                message = signal.call_id or ""
                if message != call:
                    if texts:
                        out.append(self._content(call, "".join(texts)))
                        texts.clear()
                    call = message
                    if message not in opened:  # the message starts
                        opened[message] = None
                        out.append(_encode(*self._start_message(message, root, None)))
                add(text)
                continue
            if texts:
                out.append(self._content(call, "".join(texts)))
                texts.clear()
            call = _NO_MESSAGE  # (another signal may end the message)
            if kinds is not None and signal.type not in kinds:
                continue  # (ai.usage...: no event, no state)
            specs = self._specs(signal)
            if specs:
                for cls, values in specs:  # (a loop: a comprehension is a call of its own)
                    out.append(_encode(cls, values))
                done = self.done
        if texts:
            out.append(self._content(call, "".join(texts)))

    def dropped(self, message: str) -> bytes:
        """``RUN_ERROR`` (code ``client_too_slow``), encoded: the last event of a client
        that is dropped for reading too slowly."""
        self.done = True
        event = RunErrorEvent(message=message, code="client_too_slow")
        return _ENCODER.encode(event).encode()

    def failed(self, message: str, code: str) -> bytes:
        """``RUN_ERROR`` (``RUN_STARTED`` first if it was not sent), encoded: the end of a
        run that stopped without its last signal (its start function's run raised)."""
        first = b"" if self.started else _encode(*self._run_started())
        self.done = True
        event = RunErrorEvent(message=self._clean(message), code=code)
        return first + _ENCODER.encode(event).encode()


def parse_run_input(body: bytes) -> RunAgentInput:
    """An AG-UI ``RunAgentInput`` from a request body, validated by the protocol's model.

    Raises:
        BadRequest: (422) the body is not a valid ``RunAgentInput``; the message names
            each field at fault.
    """
    try:
        return RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        errors = [
            {"path": ".".join(str(p) for p in e["loc"]) or "$", "message": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        listed = "; ".join(f"{e['path']}: {e['message']}" for e in errors[:5])
        raise BadRequest(
            f"the body is not an AG-UI RunAgentInput ({len(errors)} error(s)): {listed}",
            details=errors,
        ) from None


def last_user_text(run_input: RunAgentInput) -> str:
    """The text of the last user message of an AG-UI input (``""`` when there is none):
    the default input of a run served over AG-UI."""
    for message in reversed(run_input.messages):
        if getattr(message, "role", None) != "user":
            continue
        content = message.content
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(getattr(part, "text", "") or "" for part in content)
        return ""
    return ""


_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "true: the call runs; false: it is denied"},
        "reason": {"type": "string", "description": "why it is denied (the model reads it)"},
        "value": {"description": "instead of approving: the call's result, given by a person"},
    },
    "additionalProperties": False,
}
_SUPPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"description": "the call's result, from outside"},
        "approved": {"const": False, "description": "deny the call instead"},
        "reason": {"type": "string", "description": "why it is denied (the model reads it)"},
    },
    "additionalProperties": False,
}
MAX_REASON = 2000
"""The longest denial reason accepted from a client, in characters."""


def interrupt_of(
    pending: PendingCall,
    *,
    subagent_run_id: str | None = None,
    tool_call_id: str | None = None,
    clean: Callable[[Any], Any] = sanitize,
) -> Interrupt:
    """The AG-UI ``Interrupt`` of a call that waits: its ``id`` is the call's id (the key
    of its decision), ``toolCallId`` the id of the tool call in the stream (default: the
    call's id; a child agent's call has its own), ``reason`` is ``"tool_approval"`` (a person approves or denies it) or
    ``"deferred_tool"`` (its result comes from outside), ``message`` says what waits and
    why, ``responseSchema`` describes the resume payload, and ``metadata.ptcflow`` holds
    the call (``tool``, ``arguments``, ``kind``, ``reason``, ``agent``, ``runId``).

    Example:
        >>> from ptcflow.signals import PendingCall
        >>> i = interrupt_of(PendingCall(call_id="c1", tool="refund", arguments={"amount": 500}))
        >>> i.id, i.reason, i.metadata["ptcflow"]["arguments"]
        ('c1', 'tool_approval', {'amount': 500})
    """
    approval = pending.kind == "approval"
    why = pending.reason or ("requires approval" if approval else "deferred tool")
    message = f"approve or deny {pending.tool}: {why}" if approval else f"supply the result of {pending.tool}: {why}"  # fmt: skip
    return Interrupt(
        id=pending.call_id,
        reason="tool_approval" if approval else "deferred_tool",
        message=clean(message),
        tool_call_id=tool_call_id or pending.call_id,
        subagent_run_id=subagent_run_id,
        response_schema=_APPROVAL_SCHEMA if approval else _SUPPLY_SCHEMA,
        expires_at=pending.expires_at,
        metadata={
            "ptcflow": {
                "tool": pending.tool,
                "arguments": clean(pending.arguments),
                "kind": pending.kind,
                "reason": clean(why),
                "agent": list(pending.agent),
                "runId": pending.run_id,
            }
        },
    )


def _decision(entry: ResumeEntry, call: PendingCall) -> Decision:
    """One resume entry as a decision; raises ``ValueError`` saying what is wrong."""
    if entry.status == "cancelled":
        return Deny("the person cancelled the request")
    payload = entry.payload
    if not isinstance(payload, dict):
        raise ValueError(
            'the payload must be an object: {"approved": true}, {"approved": false, '
            '"reason": "..."} or {"value": ...}'
        )
    unknown = sorted(set(payload) - {"approved", "reason", "value"})
    if unknown:
        raise ValueError(f"unknown payload keys {unknown}: use approved, reason or value")
    reason = payload.get("reason", "")
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        raise ValueError(f"reason must be a string of at most {MAX_REASON} characters")
    if "value" in payload:
        if "approved" in payload:
            raise ValueError("give either approved or value, not both")
        return Supply(payload["value"])
    approved = payload.get("approved")
    if not isinstance(approved, bool):
        raise ValueError('approved must be true or false (or give the result as "value")')
    if not approved:
        return Deny(reason or "denied by a person")
    if call.kind == "deferred":
        raise ValueError(
            f"{call.tool} is deferred: it has no body here, so it cannot be approved; "
            'supply its result as {"value": ...}, or deny it'
        )
    return Approve()


def decisions_from_resume(
    entries: Iterable[ResumeEntry], pending: Iterable[PendingCall]
) -> dict[str, Decision]:
    """The decisions of an AG-UI ``resume`` array for the calls that wait (``pending``),
    checked: each entry names a waiting call once; a ``"resolved"`` entry's payload is
    ``{"approved": true}``, ``{"approved": false, "reason": "..."}`` or ``{"value":
    ...}`` (``Supply``); a ``"cancelled"`` entry denies the call.

    Raises:
        BadRequest: (422) what is wrong with each entry (``details``: ``path``,
            ``message``), and which calls wait.

    Example:
        >>> from ag_ui.core import ResumeEntry
        >>> from ptcflow.signals import PendingCall
        >>> decisions_from_resume(
        ...     [ResumeEntry(interrupt_id="c1", status="resolved", payload={"approved": True})],
        ...     [PendingCall(call_id="c1", tool="refund")])
        {'c1': Approve()}
    """
    waiting = {p.call_id: p for p in pending}
    out: dict[str, Decision] = {}
    errors: list[dict[str, str]] = []
    for n, entry in enumerate(entries):
        at = f"resume.{n}"
        call = waiting.get(entry.interrupt_id)
        if call is None:
            errors.append({"path": f"{at}.interruptId", "message": f"no call {entry.interrupt_id[:100]!r} waits"})  # fmt: skip
            continue
        if entry.interrupt_id in out:
            errors.append({"path": f"{at}.interruptId", "message": f"{entry.interrupt_id!r} is answered twice"})  # fmt: skip
            continue
        try:
            out[entry.interrupt_id] = _decision(entry, call)
        except ValueError as exc:
            errors.append({"path": f"{at}.payload", "message": str(exc)})
    if not out and not errors:
        errors.append({"path": "resume", "message": "no decision given"})
    if errors:
        listed = "; ".join(f"{e['path']}: {e['message']}" for e in errors[:5])
        raise BadRequest(
            f"the resume does not fit the calls that wait ({', '.join(sorted(waiting))}): {listed}",
            details=errors,
        )
    return out


class PausedRuns(Protocol):
    """Where an AG-UI endpoint keeps each thread's paused run between requests (the
    server keeps it: a client never sends a paused run back). Keyed by AG-UI thread id."""

    async def put(self, thread_id: str, step: Step) -> None:
        """Keep ``step`` (a paused Step) as the thread's paused run."""
        ...

    async def get(self, thread_id: str) -> Step | None:
        """The thread's paused run, left in place (``None``: none)."""
        ...

    async def take(self, thread_id: str) -> Step | None:
        """The thread's paused run, removed (``None``: none): one request resumes it."""
        ...


class MemoryPausedRuns:
    """:class:`PausedRuns` in this process's memory, at most ``limit`` threads (the
    oldest pause is forgotten first). Pauses do not survive a restart: for that, keep
    them in a database (a paused Step round-trips through ``msgspec.json``).

    Example:
        >>> MemoryPausedRuns(limit=2).limit
        2
    """

    def __init__(self, limit: int = 1000) -> None:
        if limit < 1:
            raise UsageError(f"limit must be at least 1 thread, got {limit!r}")
        self.limit = limit
        self._steps: OrderedDict[str, Step] = OrderedDict()

    def __len__(self) -> int:
        return len(self._steps)

    async def put(self, thread_id: str, step: Step) -> None:
        """Keep ``step`` for ``thread_id`` (forgetting the oldest pause past the limit)."""
        self._steps[thread_id] = step
        self._steps.move_to_end(thread_id)
        while len(self._steps) > self.limit:
            self._steps.popitem(last=False)

    async def get(self, thread_id: str) -> Step | None:
        """The thread's paused run, or ``None``."""
        return self._steps.get(thread_id)

    async def take(self, thread_id: str) -> Step | None:
        """The thread's paused run, removed, or ``None``."""
        return self._steps.pop(thread_id, None)


class TaskRun:
    """A :class:`~ptcflow.serve.StartedRun` for a coroutine (``rt.resume(...)``, which
    returns no handle): ``drive()`` runs it (in the endpoint's task group)."""

    def __init__(self, run: Callable[[], Awaitable[Any]]) -> None:
        self._run = run
        self.scope = anyio.CancelScope()
        self.ended = anyio.Event()
        self.step: Any = None
        self.error: Exception | None = None

    @property
    def done(self) -> bool:
        """True once the coroutine has returned or raised."""
        return self.ended.is_set()

    def cancel(self, message: str = "") -> None:
        """Cancel the run (before or while it runs)."""
        self.scope.cancel()

    async def wait(self) -> Any:
        """Its Step; raises what the coroutine raised."""
        await self.ended.wait()
        if self.error is not None:
            raise self.error
        return self.step

    async def drive(self) -> None:
        """Run the coroutine to its end."""
        try:
            with self.scope:
                self.step = await self._run()
        except Exception as exc:
            self.error = exc
        finally:
            self.ended.set()


Resume: TypeAlias = Callable[
    [Runtime, RunAgentInput, Step, Mapping[str, Decision], str], StartedRun
]
"""``resume(runtime, run_input, paused_step, decisions, run_id) -> StartedRun``: continue
a thread's paused run (``run_id`` is the paused run's)."""


class AGUIEndpoint(RunStreamEndpoint[RunAgentInput]):
    """The AG-UI endpoint (built by :func:`agui_endpoint`): a :class:`RunStreamEndpoint`
    that keeps each thread's paused run and resumes it when a ``RunAgentInput`` carries
    ``resume`` entries.

    A run that pauses ends its stream with ``RUN_FINISHED`` whose outcome is
    ``interrupt`` (one ``Interrupt`` per waiting call); the paused Step is kept in
    ``paused`` under the thread id. The next input on the thread with ``resume``
    answers the interrupts: it is checked (:func:`decisions_from_resume`; ``422`` when
    it does not fit, ``409`` when the thread has no paused run), and the run continues
    under its own id, streamed as a new AG-UI run. A question on a thread that has a
    paused run abandons the pause (nothing of it was stored as a turn).
    """

    def __init__(
        self,
        runtime: Runtime | Callable[[], Runtime],
        *,
        resume: Resume | None,
        paused: PausedRuns,
        settle: float = 10.0,
        **options: Any,
    ) -> None:
        super().__init__(runtime, **options)
        self.resume = resume
        self.paused = paused
        self.settle = settle
        self._settling: dict[str, anyio.Event] = {}

    async def serve(
        self,
        request: RunAgentInput,
        receive: Receive,
        send: Send,
        *,
        run_id: str | None = None,
        start: Callable[[Runtime, RunAgentInput, str], StartedRun] | None = None,
    ) -> None:
        """Run ``request`` (or resume its thread's paused run) and stream it."""
        if run_id is not None or start is not None:
            await super().serve(request, receive, send, run_id=run_id, start=start)
            return
        thread = request.thread_id
        if request.resume:
            try:
                step, decisions = await self._prepare(request)
            except BadRequest as exc:
                self.statistics.rejected += 1
                await _answer(send, exc.status, {"error": exc.message, "details": exc.details})
                return
            resume = self.resume
            assert resume is not None
            async with anyio.create_task_group() as runs:
                started: list[StartedRun] = []

                def begin(rt: Runtime, req: RunAgentInput, rid: str) -> StartedRun:
                    handle = resume(rt, req, step, decisions, rid)
                    if isinstance(handle, TaskRun):
                        runs.start_soon(handle.drive, name=f"resume {rid}")
                    started.append(handle)
                    return handle

                await self._tracked(thread, super().serve(request, receive, send, run_id=step.run_id, start=begin), started, step)  # fmt: skip
            return
        if self.resume is not None:
            # a new question abandons the thread's pause (and one its last run may still
            # store: only the thread's latest request stores its pause)
            await self.paused.take(thread)
        fresh: list[StartedRun] = []

        def begin_fresh(rt: Runtime, req: RunAgentInput, rid: str) -> StartedRun:
            handle = self.start(rt, req, rid)
            fresh.append(handle)
            return handle

        await self._tracked(thread, super().serve(request, receive, send, start=begin_fresh), fresh, None)  # fmt: skip

    async def _wait_settled(self, thread: str) -> None:
        settling = self._settling.get(thread)
        if settling is not None:
            with anyio.move_on_after(self.settle):
                await settling.wait()

    async def _prepare(self, request: RunAgentInput) -> tuple[Step, dict[str, Decision]]:
        thread = request.thread_id
        if self.resume is None:
            raise BadRequest(
                "this endpoint does not resume paused runs (agui_endpoint(..., resume=...) "
                "or an agent to resume): send no resume entries"
            )
        await self._wait_settled(thread)  # its last run may be storing its pause
        step = await self.paused.take(thread)
        if step is None:
            raise BadRequest(
                f"thread {thread[:200]!r} has no paused run to resume: it ended, was resumed "
                "already, was abandoned by a newer question, or was forgotten; ask again",
                status=409,
            )
        try:
            return step, decisions_from_resume(request.resume or (), step.pending)
        except BadRequest:
            await self.paused.put(thread, step)  # a bad answer leaves the run waiting
            raise

    async def _tracked(
        self, thread: str, serving: Awaitable[None], started: list[StartedRun], resumed: Step | None
    ) -> None:
        """Serve, then keep the run's Step when it paused (before a resume of the thread
        may look for it: such a request waits for this), unless a newer request on the
        thread came since."""
        settled = anyio.Event()
        self._settling[thread] = settled
        try:
            await serving
            if self.resume is None or not started:
                return
            try:
                step = await started[0].wait()
            except PauseInUseError:
                return  # another request resumes this pause
            except ResumeError:
                step = resumed  # refused before anything ran: it still waits
            except Exception:
                return
            latest = self._settling.get(thread) is settled
            if latest and isinstance(step, Step) and step.paused:
                await self.paused.put(thread, step)
        finally:
            settled.set()
            if self._settling.get(thread) is settled:
                del self._settling[thread]


def agui_endpoint(
    runtime: Runtime | Callable[[], Runtime],
    agent: Any = None,
    *,
    start: Callable[[Runtime, RunAgentInput, str], StartedRun] | None = None,
    resume: Resume | None = None,
    paused: PausedRuns | None = None,
    input: Callable[[RunAgentInput], Any] = last_user_text,
    state: bool = True,
    mission: bool = False,
    buffer: int = 1024,
    on_disconnect: Disconnect = "cancel",
    secrets: Secrets | None = None,
) -> AGUIEndpoint:
    """An ASGI endpoint serving an agent over AG-UI: ``POST`` a ``RunAgentInput``, read
    the run as an SSE stream of AG-UI events.

    Args:
        runtime: the open Runtime (its bus a ``SignalBus``), or a function returning it.
        agent: the agent or strategy to run (``rt.start(agent, input(run_input))``), and
            to resume (``rt.resume(paused, decisions, agent=agent)``).
        start: instead of ``agent``: ``start(runtime, run_input, run_id) -> RunHandle``
            (or any :class:`~ptcflow.serve.StartedRun`)
            (start the run with that ``run_id``).
        resume: with ``start``: ``resume(runtime, run_input, paused_step, decisions,
            run_id) -> StartedRun`` continues a thread's paused run (without it, such an
            endpoint resumes nothing: its pauses are not kept).
        paused: where each thread's paused run is kept between requests (default: a
            :class:`MemoryPausedRuns` of 1,000 threads).
        input: the run's input from the AG-UI input (default: the last user message's
            text).
        state: send the SubAgents' memory as AG-UI state (``STATE_SNAPSHOT`` then
            ``STATE_DELTA``; see :class:`AGUIStream`).
        mission: add the mission tree to the state under ``"mission"`` (what the
            example page draws; it folds every signal: see docs/streaming.md for its
            cost). Needs ``state=True``.
        buffer: signals a client may fall behind before it gets ``RUN_ERROR``
            (``client_too_slow``) and is dropped; the run never waits for a client.
        on_disconnect: ``"cancel"`` (default): a client that goes away (or is dropped)
            cancels its run; ``"continue"``: the run goes on.
        secrets: secret values scrubbed from what is sent.

    A malformed body is answered ``422`` with ``{"error": ..., "details": [{"path",
    "message"}]}``; so is a ``resume`` that does not fit the calls that wait (``409``:
    the thread has no paused run). A run that pauses for approvals ends with
    ``RUN_FINISHED`` whose ``outcome`` is ``interrupt`` (see docs/streaming.md,
    "Approvals as interrupts"). Mount it with Starlette: ``Route("/agui", endpoint,
    methods=["POST"])``.
    """
    if (agent is None) == (start is None):
        raise UsageError("agui_endpoint needs an agent to run or a start= function (one of them)")
    if agent is not None and resume is not None:
        raise UsageError("agui_endpoint resumes the agent it runs: give resume= only with start=")
    if mission and not state:
        raise UsageError(
            "agui_endpoint(state=False, mission=True): the mission tree is sent as part of "
            "the AG-UI state; give state=True to send it, or leave mission=False"
        )

    def _start(rt: Runtime, run_input: RunAgentInput, run_id: str) -> StartedRun:
        if start is not None:
            return start(rt, run_input, run_id)
        return rt.start(agent, input(run_input), run_id=run_id)

    def _resume(
        rt: Runtime, run_input: RunAgentInput, step: Step, decisions: Mapping[str, Decision], run_id: str
    ) -> StartedRun:  # fmt: skip
        return TaskRun(lambda: rt.resume(step, decisions, agent=agent))

    def _stream(run_input: RunAgentInput, run_id: str) -> AGUIStream:
        return AGUIStream(
            run_id,
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            state=state,
            mission=mission,
            secrets=secrets,
        )

    return AGUIEndpoint(
        runtime,
        resume=resume if start is not None else _resume,
        paused=paused if paused is not None else MemoryPausedRuns(),
        parse=parse_run_input,
        start=_start,
        stream=_stream,
        buffer=buffer,
        on_disconnect=on_disconnect,
    )
