"""OpenTelemetry GenAI spans and metrics, and structlog events, for the runtime.

What is traced is decided once, when :class:`Telemetry` is built: with the API's default
(no-op or proxy) providers, tracing and metrics are off and the runtime never calls into
OpenTelemetry at all. Spans follow the GenAI semantic conventions:

* ``invoke_agent {name}`` per run (child runs nest under the directive that started them),
* ``chat {model}`` per LLM call, ``embeddings {model}`` per embedding call,
* ``execute_tool {tool}`` per tool call,

with ``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.type``, ``gen_ai.tool.description`` and
``error.type``. ``chat`` and ``embeddings`` spans are of kind ``CLIENT`` (a call to another
process), the others ``INTERNAL``. Captured content follows the conventions' message
format (``role`` + ``parts``; see ``_genai_messages``). Directive spans are parented explicitly on their
run's span (never on whatever span happens to be current in the task that routed the
signal), and attached as the current span inside the directive's task, so instrumented code
a tool calls (an HTTP client, a database driver) nests under ``execute_tool``.

Telemetry cannot break a run (DD-12): every call into user-provided telemetry (the tracer,
so its span processors' ``on_start``/``on_end``; the meter's instruments; the structlog
logger) is guarded. A failure is logged once per :class:`Telemetry` and kind of call, on the
standard library's ``ptcflow.telemetry`` logger (the structlog one may be what failed), and
the run goes on without that piece of telemetry. The guards are ``try`` blocks, free in
CPython 3.11 until something raises, and the runtime makes no call at all when telemetry is
off.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import structlog
from opentelemetry import context as otel_context, metrics, trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ptcflow.runtime._genai_messages import encode_content, input_messages, output_messages
from ptcflow.signals import (
    REDACTED,
    Err,
    LLMResponse,
    Ok,
    PendingCall,
    Usage,
    is_secret_key,
    sanitize,
)

__all__ = ("Telemetry",)

_FAILURES: Final = logging.getLogger("ptcflow.telemetry")
_UNRECORDED: Final = trace.INVALID_SPAN
"""A directive's stand-in span when metrics are recorded without tracing: the directive is
closed (and its metrics recorded) as with a span, and nothing is traced."""
_METADATA: Final = "ptcflow.directive.metadata."
"""The prefix of the span attributes that carry a directive's ``metadata``."""
_METADATA_CHARS: Final = 1000  # the longest metadata value on a span
_NOOP_TRACER_PROVIDERS = ("ProxyTracerProvider", "NoOpTracerProvider")
_NOOP_METER_PROVIDERS = ("_ProxyMeterProvider", "NoOpMeterProvider")
_SCOPE = "ptcflow"
_KINDS: dict[Any, SpanKind] = {"chat": SpanKind.CLIENT, "embeddings": SpanKind.CLIENT}
"""Span kinds by ``gen_ai.operation.name``; every other span is ``INTERNAL``."""
_FORMATS: dict[str, Any] = {
    "gen_ai.input.messages": input_messages,
    "gen_ai.output.messages": lambda value: (
        output_messages(value) if isinstance(value, LLMResponse) else value
    ),
}
"""How content is put in the conventions' format before it is encoded, by attribute."""


def _is_noop(provider: object, names: tuple[str, ...]) -> bool:
    return type(provider).__name__ in names


class Telemetry:
    """Where the runtime sends spans, metrics and log events.

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider``; defaults to the global one.
            With the API's default (proxy / no-op) provider, tracing is off: no span is
            ever created and no clock is read for it.
        meter_provider: a ``MeterProvider``; defaults to the global one (same rule).
        capture_content: record message and tool-argument content on spans
            (``gen_ai.input.messages``, ``gen_ai.output.messages``,
            ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``). Off by default:
            prompts and tool data often hold personal data.
        log_events: emit structlog debug events for runs and directives (``run.started``,
            ``directive.retry``, ...) with ``run_id`` / ``call_id`` bound. Failures the
            runtime must report (a crashing strategy or handler) are logged at error
            level regardless.
        logger: the structlog logger to use (default ``structlog.get_logger("ptcflow")``).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> Telemetry(tracer_provider=TracerProvider()).tracing
        True
        >>> Telemetry().tracing   # no SDK configured globally
        False
    """

    __slots__ = (
        "_attrs",
        "_duration",
        "_failed",
        "_no_span",
        "_tokens",
        "_tp",
        "_tracer",
        "capture_content",
        "log",
        "log_events",
        "metrics",
        "tracing",
    )

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture_content: bool = False,
        log_events: bool = False,
        logger: Any = None,
    ) -> None:
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        self.tracing = not _is_noop(tp, _NOOP_TRACER_PROVIDERS)
        self.metrics = not _is_noop(mp, _NOOP_METER_PROVIDERS)
        self.capture_content = capture_content
        self.log_events = log_events
        self._failed: set[str] = set()
        self.log: Any = _GuardedLogger(
            logger if logger is not None else structlog.get_logger("ptcflow"), self
        )
        self._tracer = tp.get_tracer(_SCOPE) if self.tracing else None
        # what start_span gives when no span is made: with metrics on, a stand-in, so the
        # directive is still closed and its duration and token usage recorded
        self._no_span: Any = _UNRECORDED if self.metrics else None
        self._tp: tuple[Any, str, str] = (None, "", "")
        self._attrs: dict[tuple[str, str, str, str | None], tuple[dict[str, Any], ...]] = {}
        self._tokens: Any = None
        self._duration: Any = None
        if self.metrics:
            try:
                meter = mp.get_meter(_SCOPE)
                self._tokens = meter.create_histogram(
                    "gen_ai.client.token.usage",
                    unit="{token}",
                    description="Number of input and output tokens used",
                )
                self._duration = meter.create_histogram(
                    "gen_ai.client.operation.duration",
                    unit="s",
                    description="GenAI operation duration",
                )
            except Exception as exc:
                self.failed("the meter provider (creating instruments)", exc)

    def failed(self, what: str, exc: BaseException) -> None:
        """Report that user-provided telemetry raised: logged once per ``what`` (on the
        standard library's ``ptcflow.telemetry`` logger); the run goes on without it."""
        if what in self._failed:
            return
        self._failed.add(what)
        try:
            _FAILURES.error(
                "ptcflow: %s raised %s: %s; the run goes on without it (reported once)",
                what,
                type(exc).__name__,
                exc,
            )
        except Exception:  # pragma: no cover - a logging handler that raises too
            pass

    def __repr__(self) -> str:
        return (
            f"Telemetry(tracing={self.tracing}, metrics={self.metrics}, "
            f"capture_content={self.capture_content}, log_events={self.log_events})"
        )

    @property
    def active(self) -> bool:
        """True when spans or metrics are recorded (the runtime skips every hook otherwise)."""
        return self.tracing or self.metrics

    # -- spans -------------------------------------------------------------------------

    def start_span(
        self,
        name: str,
        attributes: Mapping[str, Any],
        parent: otel_context.Context | None,
        *,
        links: list[Link] | None = None,
    ) -> Span | None:
        """Start a span parented on ``parent`` (or the current context); ``None`` when off.

        Its kind is ``CLIENT`` for the ``chat`` and ``embeddings`` operations (per
        ``gen_ai.operation.name``), ``INTERNAL`` otherwise. ``links``: spans it follows
        from (a resumed run's, the run it resumes; see :meth:`link_to`).
        """
        if self._tracer is None:
            return self._no_span  # type: ignore[no-any-return]
        kind = _KINDS.get(attributes.get("gen_ai.operation.name"), SpanKind.INTERNAL)
        try:
            # The SDK copies the attributes into its own bounded mapping: no copy here.
            return self._tracer.start_span(
                name, context=parent, kind=kind, attributes=attributes, links=links
            )
        except Exception as exc:  # a span processor's on_start
            self.failed("starting a span (a span processor's on_start)", exc)
            return self._no_span  # type: ignore[no-any-return]

    @staticmethod
    def context_of(span: Span | None, base: otel_context.Context | None = None) -> Any:
        """Return an OTel context in which ``span`` is current (``None`` when no span)."""
        if span is None or span is _UNRECORDED:
            return None
        return trace.set_span_in_context(span, base)

    @staticmethod
    def link_to(traceparent: str | None, attributes: Mapping[str, Any]) -> Link | None:
        """A link to the span of a W3C ``traceparent`` (``None`` when it is not one): how
        a resumed run's span points at the span of the run it resumes, in another trace."""
        parts = traceparent.split("-") if isinstance(traceparent, str) else ()
        if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
            return None
        try:
            trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
        except ValueError:
            return None
        if not trace_id or not span_id:
            return None
        context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
        return Link(context, dict(attributes))

    def traceparent(self, span: Span | None) -> str | None:
        """Return the W3C ``traceparent`` of ``span`` (``None`` when no span)."""
        if span is None or span is _UNRECORDED:
            return None
        sc = span.get_span_context()
        # A run's spans share one trace id: its 32 hex digits are formatted once.
        key = (sc.trace_id, sc.trace_flags)
        cached = self._tp
        if cached[0] != key:
            cached = self._tp = (key, f"00-{sc.trace_id:032x}-", f"-{int(sc.trace_flags):02x}")
        return f"{cached[1]}{sc.span_id:016x}{cached[2]}"

    def end_span(
        self,
        span: Span | None,
        result: Ok[Any] | Err | None,
        attrs: Mapping[str, Any] | None = None,
        *,
        tool_data: bool = False,
    ) -> None:
        """Set the result attributes ``attrs`` (values must not be ``None``), ``error.type``
        on failure, and end ``span``.

        The status description is the error's message, cut to 200 characters; with
        ``tool_data`` (a tool's own failure, whose text is tool data) and content capture
        off, it is only the error's type (and the exception's class, when there was one).
        """
        if span is None or span is _UNRECORDED:
            return
        try:
            self._end(span, result, attrs, tool_data)
        except Exception as exc:  # a span processor's on_end, or an SDK refusing a value
            self.failed("ending a span (a span processor's on_end)", exc)

    def _end(
        self,
        span: Span,
        result: Ok[Any] | Err | None,
        attrs: Mapping[str, Any] | None,
        tool_data: bool,
    ) -> None:
        if attrs:
            span.set_attributes(attrs)
        if isinstance(result, Err):
            error = result.error
            span.set_attribute("error.type", error.type)
            if tool_data and not self.capture_content:
                exception = error.details.get("exception")
                described = f"{error.type} ({exception})" if exception else error.type
            else:
                described = error.message[:200]
            span.set_status(Status(StatusCode.ERROR, described))
        span.end()

    def end_plain(self, span: Span | None) -> None:
        """End ``span`` (a turn's), guarded as :meth:`end_span` is."""
        if span is None or span is _UNRECORDED:
            return
        try:
            span.end()
        except Exception as exc:
            self.failed("ending a span (a span processor's on_end)", exc)

    def content(self, span: Span | None, key: str, value: Any) -> None:
        """Record ``value`` as JSON under ``key`` when content capture is on.

        ``gen_ai.input.messages`` (messages) and ``gen_ai.output.messages`` (an
        ``LLMResponse``) are written in the conventions' ``role`` + ``parts`` format; long
        values are shortened so the text stays JSON (at most 16,000 characters).
        """
        if span is None or not self.capture_content or span is _UNRECORDED:
            return
        shape = _FORMATS.get(key)
        try:
            span.set_attribute(key, encode_content(shape(value) if shape is not None else value))
        except Exception as exc:
            self.failed("setting a span attribute", exc)

    def approval_requested(self, span: Span | None, pending: PendingCall) -> None:
        """Add the ``ptcflow.approval.requested`` event to a waiting call's span: why it
        waits (``ptcflow.approval.reason``), its kind (``approval`` or ``deferred``), when
        the wait expires; its arguments (``gen_ai.tool.call.arguments``) only with content
        capture on, as other tool data."""
        if span is None or span is _UNRECORDED:
            return
        attrs: dict[str, Any] = {
            "ptcflow.approval.kind": pending.kind,
            "ptcflow.approval.reason": pending.reason,
            "gen_ai.tool.call.id": pending.call_id,
        }
        if pending.expires_at is not None:
            attrs["ptcflow.approval.expires_at"] = pending.expires_at
        if self.capture_content:
            attrs["gen_ai.tool.call.arguments"] = encode_content(pending.arguments)
        try:
            span.add_event("ptcflow.approval.requested", attrs)
        except Exception as exc:
            self.failed("adding a span event", exc)

    def approval_resolved(self, span: Span | None, decision: str, reason: str = "") -> None:
        """Record the decision on a resumed call on its span: the attribute
        ``ptcflow.approval.decision`` (``approve``, ``deny``, ``supply``, ``expired``) and
        the event ``ptcflow.approval.resolved``; a denial's reason
        (``ptcflow.approval.reason``, a person's words) only with content capture on."""
        if span is None or span is _UNRECORDED:
            return
        attrs: dict[str, Any] = {"ptcflow.approval.decision": decision}
        if reason and self.capture_content:
            attrs["ptcflow.approval.reason"] = reason[:_METADATA_CHARS]
        try:
            span.set_attribute("ptcflow.approval.decision", decision)
            span.add_event("ptcflow.approval.resolved", attrs)
        except Exception as exc:
            self.failed("adding a span event", exc)

    def metadata(self, span: Span | None, metadata: Mapping[str, Any]) -> None:
        """Set a directive's ``metadata`` on its span, as ``ptcflow.directive.metadata.<key>``
        attributes: strings, numbers and booleans as they are, anything else as JSON (secret
        keys redacted, bounded, see :func:`~ptcflow.signals.sanitize`)."""
        if span is None or span is _UNRECORDED:
            return
        attrs: dict[str, Any] = {}
        for key, value in metadata.items():
            if is_secret_key(str(key)):
                value = REDACTED
            elif isinstance(value, str):
                value = value[:_METADATA_CHARS]
            elif not isinstance(value, int | float):  # bool is an int
                value = encode_content(sanitize(value), _METADATA_CHARS)
            attrs[f"{_METADATA}{key}"] = value
        try:
            span.set_attributes(attrs)
        except Exception as exc:
            self.failed("setting a span attribute", exc)

    @staticmethod
    def tool_attributes(name: str, call_id: str, tool: Any = None) -> dict[str, Any]:
        """The attributes an ``execute_tool`` span starts with: the operation, the tool's
        name, the call id, ``gen_ai.tool.type`` (``function``; ``extension`` for a tool
        served by another system, such as an MCP server) and ``gen_ai.tool.description``
        when the tool has one."""
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": getattr(getattr(tool, "fn", None), "gen_ai_tool_type", "function"),
        }
        description = getattr(tool, "description", "")
        if description:
            attrs["gen_ai.tool.description"] = description
        return attrs

    # -- metrics -----------------------------------------------------------------------

    def record(
        self,
        operation: str,
        duration_s: float,
        *,
        provider: str = "",
        model: str = "",
        usage: Usage | None = None,
        error_type: str | None = None,
    ) -> None:
        """Record ``gen_ai.client.operation.duration`` and (with usage) token usage."""
        if self._duration is None:
            return
        key = (operation, provider, model, error_type)
        cached = self._attrs.get(key)
        if cached is None:
            attrs: dict[str, Any] = {"gen_ai.operation.name": operation}
            if provider:
                attrs["gen_ai.provider.name"] = provider
            if model:
                attrs["gen_ai.request.model"] = model
            if error_type is not None:
                attrs["error.type"] = error_type
            cached = (
                attrs,
                {**attrs, "gen_ai.token.type": "input"},
                {**attrs, "gen_ai.token.type": "output"},
            )
            if len(self._attrs) < 1024:  # bounded: model names come from configuration
                self._attrs[key] = cached
        try:
            self._duration.record(duration_s, cached[0])
            if usage is not None and error_type is None:
                self._tokens.record(usage.input_tokens, cached[1])
                self._tokens.record(usage.output_tokens, cached[2])
        except Exception as exc:  # a view, an exemplar filter or a reader of the user's
            self.failed("recording a metric", exc)


class _GuardedLogger:
    """The structlog logger of a :class:`Telemetry`, whose calls never raise into a run: a
    logger or processor that raises is reported once (:meth:`Telemetry.failed`)."""

    __slots__ = ("_log", "_tel")

    def __init__(self, log: Any, tel: Telemetry) -> None:
        self._log = log
        self._tel = tel

    def _call(self, method: str, event: str, kw: dict[str, Any]) -> Any:
        try:
            return getattr(self._log, method)(event, **kw)
        except Exception as exc:
            self._tel.failed(f"the structlog logger ({method})", exc)
            return None

    def debug(self, event: str, **kw: Any) -> Any:
        """``logger.debug``, guarded."""
        return self._call("debug", event, kw)

    def info(self, event: str, **kw: Any) -> Any:
        """``logger.info``, guarded."""
        return self._call("info", event, kw)

    def warning(self, event: str, **kw: Any) -> Any:
        """``logger.warning``, guarded."""
        return self._call("warning", event, kw)

    def error(self, event: str, **kw: Any) -> Any:
        """``logger.error``, guarded."""
        return self._call("error", event, kw)

    def exception(self, event: str, **kw: Any) -> Any:
        """``logger.exception``, guarded."""
        return self._call("exception", event, kw)

    def bind(self, **kw: Any) -> _GuardedLogger:
        """``logger.bind``, guarded (the bound logger is guarded too)."""
        try:
            return _GuardedLogger(self._log.bind(**kw), self._tel)
        except Exception as exc:
            self._tel.failed("the structlog logger (bind)", exc)
            return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)

    def __repr__(self) -> str:
        return repr(self._log)


def attach(ctx: Any) -> object | None:
    """Make ``ctx`` the current OTel context of this task; returns the detach token."""
    return None if ctx is None else otel_context.attach(ctx)


def detach(token: object | None) -> None:
    """Undo :func:`attach`."""
    if token is not None:
        otel_context.detach(token)  # type: ignore[arg-type]


def current_context() -> Any:
    """Return the caller's current OTel context."""
    return otel_context.get_current()
