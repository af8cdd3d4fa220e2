"""Guardrails: checks on a run's input, its output and each tool call: :class:`Guardrails`.

A guard is a function ``guard(value, info) -> verdict`` (sync or async) where ``info`` is a
:class:`GuardInfo` (the run, the agent, the stage, the tool) and the verdict is ``None``
(pass), :class:`Rewrite` (use this value instead) or :class:`Trip` (stop the run). A trip
ends the run with ``error.type == "guardrail_tripped"`` naming the guard, the stage and
the reason; a guard that raises or passes its deadline (``timeout_s``) ends it with
``guardrail_failed``. Each check publishes an ``ai.guardrail`` signal and, with tracing
on, a ``guardrail {name}`` span.

* input guards run before the run starts (they may rewrite the input), or, with
  ``concurrent_input=True``, beside its first model call: a trip cancels the run (and
  the call); such guards can pass or trip only.
* output guards see a successful run's value (they may rewrite it) after the run ended.
* tool guards see ``{"tool": name, "arguments": {...}}`` before each tool call (they may
  rewrite the arguments).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Final

import anyio
import anyio.to_thread
import msgspec

from ptcflow.errors import ConfigError
from ptcflow.runtime._driver import drive, new_scope
from ptcflow.signals import Err, ErrorEnvelope, Ok

__all__ = (
    "GUARDRAIL",
    "GUARDRAIL_FAILED",
    "GUARDRAIL_TRIPPED",
    "GuardInfo",
    "Guardrails",
    "Rewrite",
    "Trip",
    "check",
    "check_output",
    "guard_error",
    "guard_tool",
    "guarded_drive",
    "publish",
)

GUARDRAIL: Final = "ai.guardrail"
"""The signal of one guard check (``data``: ``guard``, ``stage``, ``verdict``, ``reason``)."""
GUARDRAIL_TRIPPED: Final = "guardrail_tripped"
GUARDRAIL_FAILED: Final = "guardrail_failed"


class Rewrite(msgspec.Struct, frozen=True):
    """A guard's verdict: go on with ``value`` instead."""

    value: Any


class Trip(msgspec.Struct, frozen=True):
    """A guard's verdict: stop the run, because of ``reason``."""

    reason: str


class GuardInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What a guard is told besides the value: the run, its agent, the stage
    (``"input"``, ``"output"`` or ``"tool"``) and, for a tool call, the tool's name."""

    run_id: str
    agent: str
    stage: str
    tool: str | None = None


Guard = Callable[[Any, GuardInfo], Any]


class Guardrails:
    """The guards of a run (``Runtime(guardrails=...)`` or ``rt.run(..., guardrails=...)``).

    Args:
        input: guards of the run's input.
        output: guards of a successful run's value.
        tool: guards of each tool call.
        timeout_s: each check's deadline in seconds (default 10).
        concurrent_input: run the input guards beside the run instead of before it.

    Raises:
        ConfigError: a guard that is not callable, or a bad ``timeout_s``.

    Example:
        >>> Guardrails(input=[lambda text, info: Trip("no") if "secret" in text else None])
        Guardrails(input=1, output=0, tool=0)
    """

    __slots__ = ("concurrent_input", "input", "output", "timeout_s", "tool")

    def __init__(
        self,
        *,
        input: Sequence[Guard] = (),
        output: Sequence[Guard] = (),
        tool: Sequence[Guard] = (),
        timeout_s: float = 10.0,
        concurrent_input: bool = False,
    ) -> None:
        for stage, guards in (("input", input), ("output", output), ("tool", tool)):
            for guard in guards:
                if not callable(guard):
                    raise ConfigError(
                        f"Guardrails({stage}=...) takes functions (value, info) -> verdict, "
                        f"got {guard!r}"
                    )
        if (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, int | float)
            or not math.isfinite(timeout_s)
            or timeout_s <= 0
        ):
            raise ConfigError(f"Guardrails(timeout_s=...) must be > 0 seconds, got {timeout_s!r}")
        self.input = tuple(input)
        self.output = tuple(output)
        self.tool = tuple(tool)
        self.timeout_s = float(timeout_s)
        self.concurrent_input = concurrent_input

    def __repr__(self) -> str:
        return (
            f"Guardrails(input={len(self.input)}, output={len(self.output)}, tool={len(self.tool)})"
        )


def _name(guard: Any) -> str:
    return str(getattr(guard, "__name__", "") or type(guard).__name__)


def _error(kind: str, guard: str, stage: str, reason: str) -> Err:
    what = "tripped" if kind == GUARDRAIL_TRIPPED else "failed"
    return Err(
        error=ErrorEnvelope.make(
            kind,
            f"the {stage} guardrail {guard!r} {what}: {reason}",
            {"guard": guard, "stage": stage, "reason": reason},
            retryable=False,
        )
    )


def guard_error(kind: str, guard: str, stage: str, reason: str) -> Err:
    """The error a run ends with when ``guard`` (its name) of ``stage`` trips or fails
    (``kind``: :data:`GUARDRAIL_TRIPPED` or :data:`GUARDRAIL_FAILED`); what a driver of
    its own (the Temporal workflow) builds from a check's record."""
    return _error(kind, guard, stage, reason)


async def check(
    guards: Guardrails,
    stage: str,
    value: Any,
    info: GuardInfo,
    run: Any,
    records: list[dict[str, Any]],
) -> tuple[Any, Err | None]:
    """Run ``stage``'s guards on ``value`` in order; the value (rewritten or not) and the
    error of the first trip or failure (``None``: all passed). Each check's record (the
    ``ai.guardrail`` signal's data) is appended to ``records``."""
    for guard in getattr(guards, stage):
        name = _name(guard)
        verdict: Any = None
        error: Err | None = None
        tel = run.executor.telemetry
        span = (
            tel.start_span(
                f"guardrail {name}",
                {"ptcflow.guardrail.name": name, "ptcflow.guardrail.stage": stage},
                run.otel_context,
            )
            if tel is not None and tel.tracing
            else None
        )
        with anyio.move_on_after(guards.timeout_s) as scope:
            try:
                if inspect.iscoroutinefunction(guard) or inspect.iscoroutinefunction(
                    getattr(guard, "__call__", None)  # noqa: B004
                ):
                    verdict = await guard(value, info)
                else:
                    verdict = await anyio.to_thread.run_sync(
                        guard, value, info, abandon_on_cancel=True
                    )
                    if inspect.isawaitable(verdict):
                        verdict = await verdict
            except Exception as exc:
                error = _error(
                    GUARDRAIL_FAILED, name, stage, f"it raised {type(exc).__name__}: {exc}"
                )
        if scope.cancelled_caught:
            error = _error(
                GUARDRAIL_FAILED, name, stage, f"it did not answer within {guards.timeout_s} s"
            )
        if error is None:
            if isinstance(verdict, Trip):
                error = _error(GUARDRAIL_TRIPPED, name, stage, verdict.reason)
            elif isinstance(verdict, Rewrite):
                value = verdict.value
            elif verdict is not None and verdict is not True:
                error = _error(
                    GUARDRAIL_FAILED,
                    name,
                    stage,
                    f"it returned {type(verdict).__name__}; return None, Rewrite(value) or "
                    "Trip(reason)",
                )
        outcome = (
            ("rewrite" if isinstance(verdict, Rewrite) and error is None else "pass")
            if error is None
            else error.error.type
        )
        reason = "" if error is None else error.error.details["reason"]
        records.append({"guard": name, "stage": stage, "verdict": outcome, "reason": reason})
        if span is not None:
            tel.end_span(
                span,
                error if error is not None else Ok(payload=None),
                {"ptcflow.guardrail.verdict": outcome},
            )
        if error is not None:
            return value, error
    return value, None


def publish(run: Any, records: list[dict[str, Any]]) -> None:
    """Publish the ``ai.guardrail`` signals of ``records`` on ``run`` (once it started and
    while it runs), and forget them."""
    if run.core.started_at and not run.finished:
        for record in records:
            run.emit(None, GUARDRAIL, record)
    records.clear()


async def guard_tool(ctx: Any) -> Err | None:
    """Check a tool call of ``ctx`` (a ``ToolExec`` or a program's call); a rewrite
    replaces its arguments; a trip or failure cancels the run and is returned."""
    run = ctx.run
    guards: Guardrails = run.guards
    d = ctx.directive
    info = GuardInfo(run_id=run.run_id, agent=run.name, stage="tool", tool=d.tool_name)
    records: list[dict[str, Any]] = []
    value = {"tool": d.tool_name, "arguments": d.arguments}
    new, error = await check(guards, "tool", value, info, run, records)
    publish(run, records)
    if error is not None:
        run.stop(error)
        return error
    if new is not value:
        arguments = new.get("arguments") if isinstance(new, dict) else None
        if not isinstance(arguments, dict):
            error = _error(
                GUARDRAIL_FAILED,
                "tool",
                "tool",
                "a tool guard's Rewrite must hold {'tool': ..., 'arguments': {...}}",
            )
            run.stop(error)
            return error
        ctx.directive = msgspec.structs.replace(d, arguments=arguments)
    return None


async def guarded_drive(run: Any, registry: dict[Any, None], otel_parent: Any) -> Any:
    """Drive ``run`` (``Runtime.run``) with its input guards before it starts (or beside
    it) and its output guards on its Step."""
    guards: Guardrails = run.guards
    records: list[dict[str, Any]] = []
    info = GuardInfo(run_id=run.run_id, agent=run.name, stage="input")
    if guards.output:  # the run's successful end waits for them (check_output)
        run.core.hold_end = True
        run.on_held = check_output
    if guards.input and not guards.concurrent_input:
        value, error = await check(guards, "input", run.core.input, info, run, records)
        run.core.input = value
        run.begin(otel_parent)
        publish(run, records)
        if error is not None:
            run.stop(error)
        step = await drive(run, registry)
    elif guards.input:  # beside the run: a trip cancels it (and its first model call)
        tripped: list[Err] = []

        async def watch() -> None:
            _, error = await check(guards, "input", run.core.input, info, run, records)
            publish(run, records)
            if error is not None:
                tripped.append(error)
                run.stop(error)

        async with anyio.create_task_group() as tg:
            run.begin(otel_parent)
            tg.start_soon(watch)
            step = await drive(run, registry)
        if tripped and step.ok:  # the run ended before its guard did: the guard wins
            step = _failed(step, tripped[0])
    else:
        step = await drive(run, registry, start=True, otel_parent=otel_parent)
    return step


async def check_output(run: Any) -> None:
    """Check the value of ``run``, whose successful end its core holds (``hold_end``):
    publish each verdict (``ai.guardrail`` signals, before the run's end signal in the
    journal), then release the end with the value, a rewrite or the guard's error."""
    result = run.core.ending_result
    records: list[dict[str, Any]] = []
    with new_scope() as scope:
        run.checking = scope  # the run's end (a cancellation) cancels the check
        info = GuardInfo(run_id=run.run_id, agent=run.name, stage="output")
        value, error = await check(run.guards, "output", result.payload, info, run, records)
    if scope.cancelled_caught:
        return  # the run ended already
    for record in records:
        run.emit(None, GUARDRAIL, record)
    if error is not None:
        released: Ok[Any] | Err | None = error
    elif value is not result.payload:
        released = Ok(payload=value)
    else:
        released = None
    run.release(released)


def _failed(step: Any, error: Err) -> Any:
    return msgspec.structs.replace(
        step, ok=False, value=None, error=error.error, reason=str(error.error.type)
    )
