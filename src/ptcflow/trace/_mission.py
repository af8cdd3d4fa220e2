"""``Mission``: the tree of runs, turns, model calls, programs and tool calls, folded from
signals one at a time (from a journal, or live from a bus).

Times come from the signals. A model call has no start signal: it started when its run
handled the signal before it (the directive is emitted then), so its start is the time of
the run's previous signal. A tool call starts at its ``ai.tool.started``; a program at its
end minus its ``duration_ms``; a turn with its first call; a run at ``ai.request.started``.
Signal times have millisecond precision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Final

import msgspec

from ptcflow.lisp import LispError, extract_code
from ptcflow.signals import (
    ApprovalRequestedData,
    ApprovalResolvedData,
    EmbedResultData,
    Err,
    LLMDeltaData,
    LLMResponse,
    LLMResponseData,
    Ok,
    ProgramOutput,
    ProgramResultData,
    RequestEndData,
    RequestErrorData,
    RequestPausedData,
    RequestResumedData,
    RequestStartedData,
    Secrets,
    Signal,
    ToolResultData,
    ToolStartedData,
    UsageData,
    read_journal,
)
from ptcflow.trace._node import Node
from ptcflow.trace._redact import Redactor

__all__ = ("Mission",)

_PROGRAM: Final = re.compile(r"/program/\d+$")
_SUBCALL: Final = re.compile(r"^(.*/program/\d+)/tool/(\d+)$")
_SECONDS: dict[str, float] = {}
"""``"YYYY-MM-DDTHH:MM:SS"`` -> Unix ms, for the seconds seen lately (at most 4,096)."""
_TIMES: dict[str, float] = {}
"""A signal's time text -> Unix ms, for the times seen lately (at most 4,096)."""
_RANK: Final = {"ok": 0, "running": 1, "waiting": 2, "paused": 2, "cancelled": 3, "error": 4}
"""Which status of its calls a turn takes: an error wins, then a cancellation, then a
call that waits for a decision."""


def _error_text(error: Any) -> str:
    return f"{error.type}: {error.message}"


class Mission:
    """The mission tree of a journal or of a live stream of signals.

    Build it with :meth:`from_journal` / :meth:`from_signals`, or create one and
    :meth:`add` signals as they arrive (each call returns the nodes it changed, which is
    what a live view redraws).

    Args:
        secrets: secret values scrubbed from everything shown (``Secrets``).
        content: keep message and tool content (arguments, results, responses, inputs) in
            ``Node.detail``; ``False`` keeps only names, times, statuses and errors.

    Example:
        >>> from ptcflow.signals import Signal, RequestStartedData
        >>> m = Mission()
        >>> changed = m.add(Signal.create("ai.request.started",
        ...     RequestStartedData(input="hi", agent="bot"), run_id="r1", seq=1))
        >>> [n.name for n in changed], m.roots
        (['bot'], ['r1'])
    """

    def __init__(self, *, secrets: Secrets | None = None, content: bool = True) -> None:
        self.nodes: dict[str, Node] = {}
        self.roots: list[str] = []
        self.signals = 0
        self.first_ms: float | None = None
        self.last_ms: float | None = None
        self._redact = Redactor(secrets, content)
        self._last: dict[str, float] = {}  # run id -> time of its latest signal
        self._subcalls: set[str] = set()  # programs whose calls came as signals
        # the turns whose calls the signal being folded changed (ids, in the order they
        # changed): add spans each turn over its calls once the signal is folded
        self._touched: list[str] = []
        self._seconds = _SECONDS  # shared: a live stream folds each run into its own Mission

    # -- building ------------------------------------------------------------------------

    @classmethod
    def from_signals(cls, signals: Iterable[Signal], **options: Any) -> Mission:
        """Fold ``signals`` (in order) into a new Mission; ``options`` as for the class."""
        mission = cls(**options)
        for signal in signals:
            mission.add(signal)
        return mission

    @classmethod
    def from_journal(
        cls, source: str | Path | IO[str] | IO[bytes], *, run_id: str | None = None, **options: Any
    ) -> Mission:
        """Read a journal (every run in it, or ``run_id`` and its child runs).

        Raises:
            JournalError: a line cannot be read, or ``run_id`` is not in the journal.
        """
        signals = read_journal(source, run_id=run_id, all_runs=run_id is None)
        return cls.from_signals(signals, **options)

    def add(self, signal: Signal) -> list[Node]:
        """Fold one signal in; return the nodes it created or changed (parents included)."""
        self.signals += 1
        t = _TIMES.get(signal.time)
        if t is None:
            t = self._ms(signal.time)
        first = self.first_ms
        if first is None or t < first:
            self.first_ms = t
        last = self.last_ms
        if last is None or t > last:
            self.last_ms = t
        run_id = signal.run_id or "run"
        changed: list[Node] = []
        touched = self._touched = []
        data = signal.data
        fold = _FOLD.get(type(data))
        if fold is None:  # a subclass of a signal's data (or data the tree does not show)
            fold = next((f for kind, f in _FOLD.items() if isinstance(data, kind)), None)
        if fold is not None:
            fold(self, signal, run_id, data, t, changed)
        self._last[run_id] = t
        for turn in touched:  # each turn once, once all its calls changed
            self._update_turn(self.nodes[turn], changed)
        if len(changed) == 1 or len(set(map(id, changed))) == len(changed):
            return changed
        unique: dict[int, Node] = {}  # a node changed twice: where it first changed
        for node in changed:
            unique[id(node)] = node
        return list(unique.values())

    def _tool_started(
        self, signal: Signal, run_id: str, data: ToolStartedData, t: float, changed: list[Node]
    ) -> None:
        node = self._call_of(signal, run_id, "tool", data.tool_name, t, changed)
        node.name = data.tool_name
        if "approval" not in node.detail:  # (a waiting call asked again on resume)
            node.start_ms = t
        node.detail["arguments"] = self._redact.value(data.arguments)

    def _program_result(
        self, signal: Signal, run_id: str, data: ProgramResultData, t: float, changed: list[Node]
    ) -> None:
        self._program(signal, run_id, data.result, data.attempts, data.duration_ms, t, changed)

    def _request_error(
        self, signal: Signal, run_id: str, data: RequestErrorData, t: float, changed: list[Node]
    ) -> None:
        run = self._run(run_id, signal.parent_run_id, t, changed)
        text = self._redact.error(_error_text(data.error))
        run.detail.setdefault("request_errors", []).append(text)

    def _ms(self, time: str) -> float:
        """Unix milliseconds of an RFC 3339 signal time (``2026-01-02T03:04:05.123Z``);
        a time that does not parse is taken as the latest time seen."""
        head = time[:19]
        base = self._seconds.get(head)
        try:
            if base is None:
                base = datetime.fromisoformat(head + "+00:00").timestamp() * 1000.0
                if len(self._seconds) >= 4096:
                    self._seconds.clear()
                self._seconds[head] = base
            frac = time[20:-1] if len(time) > 20 and time[19] == "." else ""
            ms = base + (float("0." + frac) * 1000.0 if frac else 0.0)
        except ValueError:
            return self.last_ms or 0.0
        if len(_TIMES) >= 4096:
            _TIMES.clear()
        _TIMES[time] = ms  # signals a millisecond apart share their time
        return ms

    # -- queries -------------------------------------------------------------------------

    def walk(self, root: str | None = None) -> Iterator[Node]:
        """Every node depth-first (each parent before its children), from ``root`` or
        from every top-level run."""
        todo = [root] if root is not None else list(reversed(self.roots))
        while todo:
            node = self.nodes[todo.pop()]
            yield node
            todo.extend(reversed(node.children))

    def runs(self) -> list[Node]:
        """Every run, depth-first."""
        return [n for n in self.walk() if n.kind == "run"]

    @property
    def ended(self) -> bool:
        """True when every run seen so far has ended (or paused: it waits for a person,
        and may resume later under the same run id)."""
        return bool(self.roots) and all(
            n.end_ms is not None for n in self.nodes.values() if n.kind == "run"
        )

    # -- runs ------------------------------------------------------------------------------

    def _run(self, run_id: str, parent_run_id: str | None, t: float, changed: list[Node]) -> Node:
        node = self.nodes.get(run_id)
        if node is None:
            parent = self._parent_of_run(run_id, parent_run_id, t, changed)
            node = Node(id=run_id, kind="run", name="agent", run_id=run_id, start_ms=t)
            self._attach(node, parent)
        elif node.parent is None and parent_run_id:  # first seen as a parent, without its own
            parent = self._parent_of_run(run_id, parent_run_id, t, changed)
            if parent is not None:
                self._move(node, parent)
        changed.append(node)
        return node

    def _parent_of_run(
        self, run_id: str, parent_run_id: str | None, t: float, changed: list[Node]
    ) -> Node | None:
        """The tool call that started a child run (``{parent}/{call_id}``), else the
        parent run; ``None`` for a top-level run."""
        if not parent_run_id or not run_id.startswith(parent_run_id + "/"):
            return self.nodes.get(parent_run_id) if parent_run_id else None
        call_id = run_id[len(parent_run_id) + 1 :]
        return self._call(parent_run_id, None, call_id, 0, "tool", call_id, t, changed)

    def _run_started(
        self, signal: Signal, run_id: str, data: RequestStartedData, t: float, changed: list[Node]
    ) -> None:
        node = self._run(run_id, signal.parent_run_id, t, changed)
        node.start_ms = t
        node.name = data.agent or node.name
        node.detail["input"] = self._redact.value(data.input)
        node.detail["tools"] = [spec.name for spec in data.tools]

    def _run_ended(
        self, signal: Signal, run_id: str, data: RequestEndData, t: float, changed: list[Node]
    ) -> None:
        node = self._run(run_id, signal.parent_run_id, t, changed)
        node.end_ms = t
        node.input_tokens = data.usage.input_tokens
        node.output_tokens = data.usage.output_tokens
        node.detail["reason"] = data.reason
        self._settle(node, data.result)
        if isinstance(data.result, Ok):
            node.detail["result"] = self._redact.value(data.result.payload)

    # -- approvals: calls that wait, runs that pause and resume ---------------------------

    def _approval_requested(
        self,
        signal: Signal,
        run_id: str,
        data: ApprovalRequestedData,
        t: float,
        changed: list[Node],
    ) -> None:
        """The call waits for a decision (``waiting``; its bar goes on until the run
        pauses, or its decision comes)."""
        pending = data.pending
        node = self._call_of(signal, run_id, "tool", pending.tool, t, changed)
        node.status = "waiting"
        node.end_ms = None
        approval: dict[str, Any] = {
            "kind": pending.kind,
            "reason": pending.reason,
            "requested_ms": t,
        }
        if pending.expires_at is not None:
            approval["expires_at"] = pending.expires_at
        node.detail["approval"] = approval

    def _approval_resolved(
        self, signal: Signal, run_id: str, data: ApprovalResolvedData, t: float, changed: list[Node]
    ) -> None:
        """The decision on a waiting call: it runs on (its result follows)."""
        node = self._call_of(signal, run_id, "tool", data.tool, t, changed)
        approval = node.detail.setdefault("approval", {})
        approval["decision"] = data.decision
        approval["resolved_ms"] = t
        if data.reason:  # a person's words: content
            approval["decision_reason"] = self._redact.text(data.reason)
        if node.status == "waiting":
            node.status, node.end_ms = "running", None

    def _run_paused(
        self, signal: Signal, run_id: str, data: RequestPausedData, t: float, changed: list[Node]
    ) -> None:
        """The run stopped to wait for decisions: it is ``paused`` (not over: it may
        resume under the same id), and what was still open in it waits."""
        run = self._run(run_id, signal.parent_run_id, t, changed)
        run.status = "paused"
        run.end_ms = t
        run.detail["reason"] = "paused"
        run.detail["pending"] = [
            {
                "call_id": p.call_id,
                "tool": p.tool,
                "kind": p.kind,
                "reason": p.reason,
                "arguments": self._redact.value(p.arguments),
                **({"agent": list(p.agent)} if len(p.agent) > 1 else {}),
                **({"expires_at": p.expires_at} if p.expires_at is not None else {}),
            }
            for p in data.pending
        ]
        run.detail.setdefault("pauses", []).append(
            {"paused_ms": t, "pending": [p.call_id for p in data.pending]}
        )
        tokens_in = tokens_out = 0
        turns = []
        for node in self.walk(run_id):
            if node.run_id != run_id or node is run:
                continue
            if node.kind == "llm":
                tokens_in += node.input_tokens
                tokens_out += node.output_tokens
            elif node.kind == "turn":
                turns.append(node)
            elif node.end_ms is None or node.status == "waiting":
                node.status = "waiting"  # open when the run paused: it waits with it
                node.end_ms = t
                changed.append(node)
        for turn in turns:
            self._update_turn(turn, changed)
        run.input_tokens, run.output_tokens = tokens_in, tokens_out

    def _run_resumed(
        self, signal: Signal, run_id: str, data: RequestResumedData, t: float, changed: list[Node]
    ) -> None:
        """The paused run continues in the same row: running again, its waiting calls
        with it (those decided get their decision, the others wait again)."""
        run = self._run(run_id, signal.parent_run_id, t, changed)
        run.status = "running"
        run.end_ms = None
        run.detail.pop("pending", None)
        run.detail.pop("reason", None)
        pauses = run.detail.setdefault("pauses", [])
        if not pauses or "resumed_ms" in pauses[-1]:
            pauses.append({})  # a journal that holds the resume but not the pause
        pauses[-1]["resumed_ms"] = t
        pauses[-1]["decided"] = list(data.decided)
        for node in self.walk(run_id):
            if node.run_id == run_id and node.status == "waiting":
                node.status, node.end_ms = "running", None
                changed.append(node)
                if node.kind != "turn":
                    self._touch(node)

    # -- calls -----------------------------------------------------------------------------

    def _turn(self, run: Node, iteration: int, t: float, changed: list[Node]) -> Node:
        turn_id = f"{run.id}|turn/{iteration}"
        turn = self.nodes.get(turn_id)
        if turn is None:
            turn = Node(
                id=turn_id, kind="turn", name=f"turn {iteration}", run_id=run.id, start_ms=t
            )
            turn.detail["turn"] = iteration
            self._attach(turn, run)
        return turn

    def _call_of(
        self, signal: Signal, run_id: str, kind: Any, name: str, t: float, changed: list[Node]
    ) -> Node:
        call_id = signal.call_id or "call"
        iteration = signal.iteration
        return self._call(run_id, signal.parent_run_id, call_id, iteration, kind, name, t, changed)

    def _call(
        self,
        run_id: str,
        parent_run_id: str | None,
        call_id: str,
        iteration: int,
        kind: Any,
        name: str,
        t: float,
        changed: list[Node],
    ) -> Node:
        node_id = f"{run_id}|{call_id}"
        node = self.nodes.get(node_id)
        if node is None:
            start = self._last.get(run_id, t)
            node = Node(
                id=node_id, kind=kind, name=name, run_id=run_id, call_id=call_id, start_ms=start
            )
            sub = _SUBCALL.match(call_id) if "/tool/" in call_id else None
            if sub is not None:
                parent = self._call(
                    run_id, parent_run_id, sub.group(1), iteration, "program", "program", t, changed
                )
                self._subcalls.add(parent.id)
            else:
                run = self._run(run_id, parent_run_id, t, changed)
                parent = self._turn(run, iteration, t, changed) if iteration else run
            self._attach(node, parent)
        elif iteration and node.parent == run_id:  # a placeholder learns its turn
            self._move(node, self._turn(self.nodes[run_id], iteration, t, changed))
        changed.append(node)
        self._touch(node)
        return node

    def _usage(
        self, signal: Signal, run_id: str, data: UsageData, t: float, changed: list[Node]
    ) -> None:
        node = self._call_of(signal, run_id, "llm", "model", t, changed)
        usage = data.usage
        node.input_tokens += usage.input_tokens
        node.output_tokens += usage.output_tokens
        node.cache_read_tokens += usage.cache_read_tokens
        node.cache_write_tokens += usage.cache_write_tokens
        node.model = data.model or node.model
        node.name = node.model or node.name

    def _llm_delta(
        self, signal: Signal, run_id: str, data: LLMDeltaData, t: float, changed: list[Node]
    ) -> None:
        self._call_of(signal, run_id, "llm", "model", t, changed)  # the call, seen started

    def _embed_result(
        self, signal: Signal, run_id: str, data: EmbedResultData, t: float, changed: list[Node]
    ) -> None:
        node = self._call_of(signal, run_id, "llm", "model", t, changed)
        node.end_ms = t
        node.attempts = data.attempts
        self._settle(node, data.result)
        node.name = f"embeddings {node.model}".strip()

    def _llm_response(
        self, signal: Signal, run_id: str, data: LLMResponseData, t: float, changed: list[Node]
    ) -> None:
        node = self._call_of(signal, run_id, "llm", "model", t, changed)
        node.end_ms = t
        node.attempts = data.attempts
        result = data.result
        self._settle(node, result)
        if isinstance(result, Ok) and isinstance(result.payload, LLMResponse):
            response = result.payload
            node.model = response.model or node.model
            node.name = node.model or node.name
            node.detail["text"] = self._redact.text(response.text)
            node.detail["finish_reason"] = response.finish_reason
            if response.tool_calls:
                node.detail["tool_calls"] = [
                    {"id": c.id, "name": c.name, "arguments": self._redact.value(c.input)}
                    for c in response.tool_calls
                ]

    def _tool_result(
        self, signal: Signal, run_id: str, data: ToolResultData, t: float, changed: list[Node]
    ) -> None:
        call_id = signal.call_id or ""
        result = data.result
        if "/program/" in call_id and _PROGRAM.search(call_id) and isinstance(result, Ok):
            output = _program_output(result.payload)
            if output is not None:  # a custom RunProgram handler: published as a tool result
                self._program(
                    signal, run_id, Ok(payload=output), data.attempts, data.duration_ms, t, changed
                )
                return
        node = self._call_of(signal, run_id, "tool", data.tool_name, t, changed)
        if node.name == call_id:
            node.name = data.tool_name
        node.end_ms = t
        node.attempts = data.attempts
        if node.start_ms > t - data.duration_ms:
            node.start_ms = t - data.duration_ms
        self._settle(node, result)
        if isinstance(result, Ok):
            node.detail["result"] = self._redact.value(result.payload)

    def _program(
        self,
        signal: Signal,
        run_id: str,
        result: Ok[Any] | Err,
        attempts: int,
        duration_ms: float,
        t: float,
        changed: list[Node],
    ) -> None:
        node = self._call_of(signal, run_id, "program", "program", t, changed)
        node.name = f"program {signal.iteration}" if signal.iteration else "program"
        node.end_ms = t
        node.start_ms = min(node.start_ms, t - duration_ms)
        node.attempts = attempts
        source = self._source_of(run_id, signal.iteration)
        if source is not None:
            node.detail["source"] = source
        if isinstance(result, Err):
            self._settle(node, result)
            return
        output: ProgramOutput = result.payload
        detail = node.detail
        if output.error is not None:
            node.status = "error"
            node.error = self._redact.error(output.error.describe())
            detail["error"] = msgspec.to_builtins(output.error)
        elif output.failed:
            node.status, node.error = "error", "fail"
            detail["fail"] = self._redact.value(output.fail_value)
        else:
            node.status = "ok"
        detail["value"] = self._redact.value(output.value)
        detail["returned"] = output.returned
        if output.prints:
            detail["prints"] = [self._redact.text(p) for p in output.prints]
        if node.id not in self._subcalls:
            self._recorded_calls(node, output, changed)

    def _recorded_calls(self, program: Node, output: ProgramOutput, changed: list[Node]) -> None:
        """Tool calls known only from the program's record (no sub-call signals): laid out
        one after the other from the program's start, each with its own duration. A record
        folded again (the same result twice: a journal read twice) adds no bar twice."""
        at = program.start_ms
        for call in output.tool_calls:
            call_id = f"{program.call_id}/tool/{call.index}"
            node_id = f"{program.run_id}|{call_id}"
            if node_id in self.nodes:
                at += call.duration_ms
                continue
            node = Node(
                id=node_id,
                kind="tool",
                name=call.name,
                run_id=program.run_id,
                call_id=call_id,
                start_ms=at,
                end_ms=at + call.duration_ms,
            )
            at += call.duration_ms
            node.detail["arguments"] = self._redact.value(call.args)
            node.detail["timing"] = "from the program's record"
            self._settle(node, call.result)
            if isinstance(call.result, Ok):
                node.detail["result"] = self._redact.value(call.result.payload)
            self._attach(node, program)
            changed.append(node)

    def _source_of(self, run_id: str, iteration: int) -> str | None:
        llm = self.nodes.get(f"{run_id}|{run_id}/llm/{iteration}")
        text = llm.detail.get("text") if llm is not None else None
        if not isinstance(text, str):
            return None
        try:
            return extract_code(text)
        except LispError:
            return None

    def _touch(self, call: Node) -> None:
        """Note the turn of ``call`` (if it is in one) as one to span again."""
        parent = call.parent
        if parent is not None and "|turn/" in parent and parent not in self._touched:
            self._touched.append(parent)

    def _update_turn(self, turn: Node, changed: list[Node]) -> None:
        """A turn spans its calls; it failed when one of them did."""
        nodes = self.nodes
        start = end = None
        running = False
        status: Any = "ok"
        tokens_in = tokens_out = 0
        for child_id in turn.children:
            call = nodes[child_id]
            if start is None or call.start_ms < start:
                start = call.start_ms
            if call.end_ms is None:
                running = True
            elif end is None or call.end_ms > end:
                end = call.end_ms
            rank = _RANK[call.status]
            if rank > _RANK[status]:
                status = call.status
            tokens_in += call.input_tokens
            tokens_out += call.output_tokens
        turn.start_ms = turn.start_ms if start is None else start
        turn.end_ms = None if running else end
        turn.status = status
        turn.input_tokens, turn.output_tokens = tokens_in, tokens_out
        changed.append(turn)

    # -- shared ----------------------------------------------------------------------------

    def _attach(self, node: Node, parent: Node | None) -> None:
        self.nodes[node.id] = node
        if parent is None:
            self.roots.append(node.id)
            return
        node.parent = parent.id
        node.depth = parent.depth + 1
        parent.children.append(node.id)

    def _move(self, node: Node, parent: Node) -> None:
        """Put ``node`` (with everything in it) under ``parent``."""
        if node.parent is None:
            self.roots.remove(node.id)
        else:
            self.nodes[node.parent].children.remove(node.id)
        self._attach(node, parent)
        for inner in self.walk(node.id):
            if inner.parent is not None:
                inner.depth = self.nodes[inner.parent].depth + 1

    def _settle(self, node: Node, result: Ok[Any] | Err) -> None:
        if isinstance(result, Ok):
            node.status = "ok"
            return
        error = result.error
        node.status = "cancelled" if error.type == "cancelled" else "error"
        message = self._redact.error(error.message)
        if not self._redact.content and node.kind == "tool":
            # a tool's failure is tool data: its type and exception class only, as
            # telemetry describes it with content capture off
            exception = error.details.get("exception")
            message = f"({exception})" if exception else ""
        node.error = f"{error.type}: {message}" if message else error.type
        node.detail["error"] = {
            "type": error.type,
            "message": message,
            "details": self._redact.value(error.details),
            "retryable": error.retryable,
        }


def _program_output(payload: Any) -> ProgramOutput | None:
    if isinstance(payload, ProgramOutput):
        return payload
    if isinstance(payload, dict) and "tool_calls" in payload and "returned" in payload:
        try:
            return msgspec.convert(payload, ProgramOutput)
        except msgspec.ValidationError:
            return None
    return None


_FOLD: Final[dict[type, Any]] = {
    RequestStartedData: Mission._run_started,
    RequestEndData: Mission._run_ended,
    UsageData: Mission._usage,
    LLMDeltaData: Mission._llm_delta,
    LLMResponseData: Mission._llm_response,
    EmbedResultData: Mission._embed_result,
    ToolStartedData: Mission._tool_started,
    ToolResultData: Mission._tool_result,
    ProgramResultData: Mission._program_result,
    RequestErrorData: Mission._request_error,
    ApprovalRequestedData: Mission._approval_requested,
    ApprovalResolvedData: Mission._approval_resolved,
    RequestPausedData: Mission._run_paused,
    RequestResumedData: Mission._run_resumed,
}
"""How each signal's data is folded in (by its type: one lookup instead of a chain of
``isinstance``)."""
