"""The per-directive context handed to handlers: :class:`DirectiveContext`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ptcflow.directives import Directive
from ptcflow.signals import Err, Signal, Usage

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from ptcflow.runtime._scope import RunScope

__all__ = ("ZERO_USAGE", "DirectiveContext")

ZERO_USAGE = Usage()
"""A run's usage before its first LLM call (the first call's usage replaces it as is)."""


class DirectiveContext:
    """What a directive handler may use while it performs one directive.

    One context exists per directive; the executor creates it, runs the handler (once per
    attempt) and publishes the directive's terminal signal itself. Handlers publish only
    intermediate signals, through :meth:`emit`.

    Attributes:
        directive: the directive being performed.
        attempt: the current attempt, starting at 1.
        max_retries: retries allowed (the directive's, or the tool's own option).
        attempt_ms: the per-attempt timeout (the retry policy's, or the tool's own).
        retry_after: set by a handler to the seconds a provider asked to wait before the
            next attempt (HTTP ``Retry-After``); the executor honours it.
        no_retry: set by a handler when retrying would repeat a visible side effect (a
            stream that already published deltas); the executor then stops retrying.
        span: the OpenTelemetry span of this directive, when tracing is on.
        snapshot: the strategy's snapshot when the directive was emitted (tool calls).
        data: private data of the directive's handler (free for custom handlers).
    """

    __slots__ = (
        "_scope",
        "attempt",
        "attempt_ms",
        "cancel_reason",
        "data",
        "deadline",
        "directive",
        "done",
        "kind",
        "max_retries",
        "no_retry",
        "otel_context",
        "otel_token",
        "retry_after",
        "run",
        "snapshot",
        "span",
        "started_at",
        "traceparent",
    )

    def __init__(self, run: RunScope, directive: Directive, kind: Any = None) -> None:
        self.run = run
        self.directive = directive
        self.attempt = 0
        self.max_retries = directive.max_retries
        self.attempt_ms: int | None = None
        self.retry_after: float | None = None
        self.no_retry = False
        self.done = False
        self.cancel_reason: Err | None = None
        self.deadline = run.deadline
        self.span: Span | None = None
        self.otel_context: Any = None
        self.otel_token: Any = None
        self.traceparent: str | None = None
        self.snapshot: Any = None
        self.data: Any = None
        self.kind: Any = kind
        self.started_at = 0.0
        self._scope: anyio.CancelScope | None = None

    def __repr__(self) -> str:
        d = self.directive
        return f"<DirectiveContext {type(d).__name__} id={d.id!r} run={self.run.run_id!r}>"

    @property
    def run_id(self) -> str:
        """The id of the run this directive belongs to."""
        return self.run.run_id

    @property
    def parent_run_id(self) -> str | None:
        """The parent run's id when this run is a child run."""
        return self.run.parent_run_id

    def emit(self, type: str, data: Any = None) -> Signal:
        """Publish an intermediate signal of this directive (never the terminal one).

        The signal carries the directive's correlation (``call_id``, ``causation_id``,
        ``request_id``, ``iteration``), the next ``seq`` of the run and, when tracing is on,
        the directive span's ``traceparent``. It is routed to the strategy at once.
        """
        return self.run.emit(type, data, self)

    def cancel(self, reason: Err) -> None:
        """Cancel the directive; its terminal signal will carry ``reason``."""
        if self.done or self.cancel_reason is not None:
            return
        self.cancel_reason = reason
        if self._scope is not None:
            self._scope.cancel()
