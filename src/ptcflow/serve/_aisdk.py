"""A run's signals as the Vercel AI SDK's UI message stream (protocol ``v1``).

The stream is server-sent events, one JSON chunk per ``data:`` line, ending with
``data: [DONE]``, under the header ``x-vercel-ai-ui-message-stream: v1`` (the shapes are
those of ``uiMessageChunkSchema`` in the ``ai`` npm package, checked against ``ai@7``):

* ``start`` (the run id as ``messageId``) ... ``finish`` (``finishReason`` ``stop``), or
  ``error`` (``errorText``) then ``finish`` (``error``) for a failed run, ``abort`` for a
  cancelled one;
* ``start-step`` / ``finish-step`` around each model call;
* ``text-start`` / ``text-delta`` / ``text-end`` from ``ai.llm.delta`` as the model
  streams, or from the whole ``ai.llm.response`` when it does not;
* ``tool-input-start`` / ``tool-input-available`` from ``ai.tool.started``,
  ``tool-output-available`` / ``tool-output-error`` from ``ai.tool.result`` (dynamic
  tools: the client declares none of them);
* ``data-print`` parts for what a streaming SubAgent's program prints
  (``ai.program.print``): ``{"runId", "programId", "text", "index"}``, one part per
  print, as it prints;
* ``data-agent`` parts for child runs (agents called as tools): ``{"runId", "name",
  "status", "result"}``, one part per child run, updated in place (same ``id``);
* a run that pauses for approvals (``ai.request.paused``): a ``tool-approval-request``
  per call that waits for approval (``approvalId`` and ``toolCallId``: the call's id;
  ``reason``), a ``data-paused`` part listing every waiting call (``callId``, ``tool``,
  ``arguments``, ``kind``, ``reason``: deferred calls too, which the protocol has no part
  for), then ``finish`` with ``finishReason`` ``tool-calls``. This stream does not
  resume a run: resume it with ``rt.resume`` (or serve it over AG-UI, which does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.signals import (
    LLM_DELTA,
    LLM_RESPONSE,
    PROGRAM_PRINT,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_PAUSED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    Ok,
    Secrets,
    Signal,
)
from ptcflow.trace import Redactor

from ._asgi import BadRequest, Disconnect, RunStreamEndpoint, StartedRun

__all__ = (
    "UI_MESSAGE_STREAM_HEADERS",
    "UIMessageStream",
    "last_user_message_text",
    "ui_message_stream_endpoint",
)

UI_MESSAGE_STREAM_HEADERS: tuple[tuple[str, str], ...] = (("x-vercel-ai-ui-message-stream", "v1"),)
"""The header that marks a UI message stream (besides ``content-type: text/event-stream``)."""

_encode = msgspec.json.Encoder().encode
_DONE = b"data: [DONE]\n\n"


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + _encode(chunk) + b"\n\n"


def _text_delta(id: str, delta: str) -> bytes:
    return _sse({"type": "text-delta", "id": id, "delta": delta})


_CHUNKY = frozenset(
    {
        REQUEST_STARTED, REQUEST_PAUSED, REQUEST_COMPLETED, REQUEST_FAILED,
        LLM_DELTA, LLM_RESPONSE, TOOL_STARTED, TOOL_RESULT, PROGRAM_PRINT,
    }
)  # fmt: skip
"""The signals that make chunks (the others are skipped at once)."""


class UIMessageStream:
    """The UI message stream chunks of run ``root`` and its child runs, one signal at a
    time (:meth:`chunks`), or encoded (:meth:`feed`).

    Example:
        >>> from ptcflow.signals import RequestStartedData
        >>> stream = UIMessageStream("r1")
        >>> stream.chunks(Signal.create("ai.request.started", RequestStartedData(), run_id="r1"))
        [{'type': 'start', 'messageId': 'r1'}]
    """

    def __init__(self, root: str, *, secrets: Secrets | None = None) -> None:
        self.root = root
        self.secrets = secrets if secrets else None
        # what sanitize() then the secrets' scrub give, without a copy when nothing changes
        self._clean: Callable[[Any], Any] = Redactor(self.secrets).value
        self.done = False
        self._prefix = root + "/"
        self._open: set[str] = set()
        self._tools: set[str] = set()
        self._names: dict[str, str] = {}
        self._printed: dict[str, int] = {}  # program call id -> prints sent

    def owns(self, signal: Signal) -> bool:
        """True for a signal of the run or of one of its child runs."""
        run = signal.run_id or ""
        return run == self.root or run.startswith(self._prefix)

    def chunks(self, signal: Signal) -> list[dict[str, Any]]:
        """The chunks for one signal (none for a signal of another run)."""
        kind = signal.type
        if self.done or kind not in _CHUNKY or not self.owns(signal):
            return []
        run = signal.run_id or ""
        data, call = signal.data, signal.call_id or ""
        out: list[dict[str, Any]] = []
        if kind == REQUEST_STARTED:
            self._names[run] = getattr(data, "agent", "") or ""
            if run == self.root:
                out.append({"type": "start", "messageId": self.root})
            else:
                out.append(self._agent(run, "running"))
        elif kind == LLM_DELTA:
            text = data.chunk.text
            if text:
                if call not in self._open:
                    self._open.add(call)
                    out.append({"type": "start-step"})
                    out.append({"type": "text-start", "id": call})
                out.append({"type": "text-delta", "id": call, "delta": text})
        elif kind == LLM_RESPONSE:
            if call in self._open:
                self._open.discard(call)
                out.append({"type": "text-end", "id": call})
                out.append({"type": "finish-step"})
            elif isinstance(data.result, Ok) and data.result.payload.text:
                out.append({"type": "start-step"})
                out.append({"type": "text-start", "id": call})
                out.append({"type": "text-delta", "id": call, "delta": data.result.payload.text})
                out.append({"type": "text-end", "id": call})
                out.append({"type": "finish-step"})
        elif kind == TOOL_STARTED:
            self._tool(out, call, data.tool_name, data.arguments)
        elif kind == TOOL_RESULT:
            if call not in self._tools:
                self._tool(out, call, data.tool_name, {})
            self._tools.discard(call)
            result = data.result
            if isinstance(result, Ok):
                out.append(
                    {
                        "type": "tool-output-available",
                        "toolCallId": call,
                        "output": self._clean(result.payload),
                        "dynamic": True,
                    }
                )
            else:
                out.append(
                    {
                        "type": "tool-output-error",
                        "toolCallId": call,
                        "errorText": self._clean(f"{result.error.type}: {result.error.message}"),
                        "dynamic": True,
                    }
                )
        elif kind == PROGRAM_PRINT:
            index = data.index
            if index >= self._printed.get(call, 0):  # a program run again prints again
                self._printed[call] = index + 1
                out.append(
                    {
                        "type": "data-print",
                        "id": f"{call}/print/{index}",
                        "data": {
                            "runId": run,
                            "programId": call,
                            "text": self._clean(data.text),
                            "index": index,
                        },
                    }
                )
        elif kind == REQUEST_PAUSED and run == self.root:
            self.done = True
            for message in sorted(self._open):
                out.append({"type": "text-end", "id": message})
            self._open.clear()
            waiting = []
            for p in data.pending:
                if p.kind == "approval":
                    out.append(
                        {
                            "type": "tool-approval-request",
                            "approvalId": p.call_id,
                            "toolCallId": p.call_id,
                            "reason": self._clean(p.reason),
                        }
                    )
                waiting.append(
                    {
                        "callId": p.call_id,
                        "tool": p.tool,
                        "arguments": self._clean(p.arguments),
                        "kind": p.kind,
                        "reason": self._clean(p.reason),
                    }
                )
            out.append({"type": "data-paused", "id": self.root, "data": {"pending": waiting}})
            out.append({"type": "finish", "finishReason": "tool-calls"})
        elif kind in (REQUEST_COMPLETED, REQUEST_FAILED):
            result = data.result
            if run != self.root:
                status = "ok" if isinstance(result, Ok) else result.error.type
                value = self._clean(result.payload) if isinstance(result, Ok) else None
                out.append(self._agent(run, status, value))
            else:
                self.done = True
                for message in sorted(self._open):
                    out.append({"type": "text-end", "id": message})
                self._open.clear()
                if isinstance(result, Ok):
                    out.append({"type": "finish", "finishReason": "stop"})
                elif result.error.type == "cancelled":
                    out.append({"type": "abort", "reason": self._clean(result.error.message)})
                else:
                    out.append({"type": "error", "errorText": self._clean(result.error.message)})
                    out.append({"type": "finish", "finishReason": "error"})
        return out

    def _agent(self, run: str, status: str, result: Any = None) -> dict[str, Any]:
        data = {"runId": run, "name": self._names.get(run, ""), "status": status}
        if result is not None:
            data["result"] = result
        return {"type": "data-agent", "id": run, "data": data}

    def _tool(self, out: list[dict[str, Any]], call: str, name: str, args: Any) -> None:
        self._tools.add(call)
        out.append({"type": "tool-input-start", "toolCallId": call, "toolName": name, "dynamic": True})  # fmt: skip
        out.append(
            {
                "type": "tool-input-available",
                "toolCallId": call,
                "toolName": name,
                "input": self._clean(args),
                "dynamic": True,
            }
        )

    def feed(self, signal: Signal) -> bytes:
        """The chunks of one signal as server-sent events (the run's last one followed by
        ``data: [DONE]``)."""
        chunks = self.chunks(signal)
        if not chunks:
            return b""
        body = b"".join([_sse(chunk) for chunk in chunks])
        return body + _DONE if self.done else body

    def feed_many(self, signals: Iterable[Signal]) -> bytes:
        """The chunks of several signals at once (what a client is sent when it has fallen
        behind): consecutive deltas of one text become one ``text-delta``."""
        out: list[bytes] = []
        call: str | None = None
        texts: list[str] = []
        root, opened = self.root, self._open
        for signal in signals:
            if (
                signal.type == LLM_DELTA
                and signal.call_id in opened
                and (signal.run_id == root or self.owns(signal))
            ):
                text = signal.data.chunk.text
                if text and not self.done:
                    if call != signal.call_id:
                        if texts:
                            out.append(_text_delta(call or "", "".join(texts)))
                        call, texts = signal.call_id, []
                    texts.append(text)
                continue
            if texts:
                out.append(_text_delta(call or "", "".join(texts)))
                call, texts = None, []
            chunk = self.feed(signal)
            if chunk:
                out.append(chunk)
        if texts:
            out.append(_text_delta(call or "", "".join(texts)))
        return b"".join(out)

    def dropped(self, message: str) -> bytes:
        """An ``error`` chunk then ``[DONE]``: the end of a client dropped for reading too
        slowly."""
        self.done = True
        return _sse({"type": "error", "errorText": message}) + _DONE

    def failed(self, message: str, code: str) -> bytes:
        """An ``error`` chunk (``code: message``) then ``[DONE]``: the end of a run that
        stopped without its last signal (its start function's run raised)."""
        self.done = True
        return _sse({"type": "error", "errorText": f"{code}: {self._clean(message)}"}) + _DONE


def _parse(body: bytes) -> Any:
    """The request: the AI SDK's chat request (``{"messages": [...], ...}``) as JSON."""
    try:
        request = msgspec.json.decode(body) if body.strip() else {}
    except msgspec.DecodeError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(request, dict):
        raise BadRequest('the body must be a JSON object, such as {"messages": [...]}')
    messages = request.get("messages", [])
    if not isinstance(messages, list):
        raise BadRequest("messages: must be a list of UI messages")
    return request


def last_user_message_text(request: Any) -> str:
    """The text parts of the last user message of an AI SDK chat request (``""``: none)."""
    for message in reversed(request.get("messages", [])):
        if isinstance(message, dict) and message.get("role") == "user":
            parts = message.get("parts") or []
            text = "".join(
                p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
            )
            return text or str(message.get("content", ""))
    return ""


def ui_message_stream_endpoint(
    runtime: Runtime | Callable[[], Runtime],
    agent: Any = None,
    *,
    start: Callable[[Runtime, Any, str], StartedRun] | None = None,
    input: Callable[[Any], Any] = last_user_message_text,
    buffer: int = 1024,
    on_disconnect: Disconnect = "cancel",
    secrets: Secrets | None = None,
) -> RunStreamEndpoint[Any]:
    """An ASGI endpoint serving an agent to the AI SDK's ``useChat`` (``DefaultChatTransport``):
    ``POST`` a chat request (``{"messages": [...]}``), read the run as a UI message stream.

    Arguments as :func:`~ptcflow.serve.agui_endpoint`; ``input`` gets the request's JSON
    (default: the text of the last user message).
    """
    if (agent is None) == (start is None):
        raise UsageError(
            "ui_message_stream_endpoint needs an agent to run or a start= function (one of them)"
        )

    def _start(rt: Runtime, request: Any, run_id: str) -> StartedRun:
        if start is not None:
            return start(rt, request, run_id)
        return rt.start(agent, input(request), run_id=run_id)

    return RunStreamEndpoint(
        runtime,
        parse=_parse,
        start=_start,
        stream=lambda request, run_id: UIMessageStream(run_id, secrets=secrets),
        headers=UI_MESSAGE_STREAM_HEADERS,
        buffer=buffer,
        on_disconnect=on_disconnect,
    )
