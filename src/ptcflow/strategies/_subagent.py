"""What the SubAgent strategies (PTC and JSON mode) share: checks, endings, time.

The checks of the returned value and the ``fail`` value are pure functions of plain data;
the problems they find are :class:`ProgramError` values written for the model (what, where,
how to fix), fed back on the next turn. A run that ends as failed is built by
:func:`failed`, and the outcome of an ended run by :func:`ended_outcome`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from typing import Any, Final, Protocol, TypeVar

import msgspec

from ptcflow.core import Outcome, StepFail, Trace
from ptcflow.signals import Err, ErrorEnvelope, Ok, ProgramError, Usage
from ptcflow.signature import (
    ConversionError,
    Converter,
    Signature,
    import_type,
    parse as parse_signature,
    render_type,
    validate_return,
)

__all__ = (
    "Ended",
    "call_warnings",
    "check_fail",
    "check_return",
    "coercible_inputs",
    "ended_outcome",
    "epoch_ms",
    "failed",
    "header",
    "keeps_trace",
    "span_ms",
)

S = TypeVar("S", bound=msgspec.Struct)
_SCHEMA_PRIMS: Final = {"integer": "int", "number": "float", "boolean": "bool"}

_TIME: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?"
)
_FAIL_HELP: Final = (
    'fail needs a map with :reason and :message, e.g. (fail {:reason :not_found :message "No '
    'user with that id"}); :op (a string) and :details (a map) are optional'
)


def check_return(
    signature: Signature | None, value: Any, mode: str, output_type: str | None = None
) -> tuple[ProgramError | None, list[str]]:
    """Validate a returned value against the signature's output in ``mode``, then, with an
    ``output_type`` (``module:qualname``), check that the type can be built from it (its
    formats, enum values, a pydantic model's validators).

    The signature's check is :func:`ptcflow.signature.validate_return`, the one answer to
    "does this ``return`` end the run" that the program host also asks (to write no memory
    for a program whose ``return`` ends the run). The ``output_type`` check is this
    function's alone: a strategy with an ``output_type`` does not let the host answer (its
    ``RunProgram.return_validation`` is ``None``), so the two never disagree.

    Returns:
        ``(problem, warnings)``: the problem to feed back (category ``validation``, one
        line per path that failed) or ``None``, and the warnings of ``warn_only``.

    Raises:
        UsageError: ``output_type`` cannot be imported in this process (a Temporal worker
            without the package that defines it).
    """
    result = validate_return(signature, value, mode)
    if result.ok:
        warnings = list(result.warnings)
        if output_type is None or mode == "disabled" or signature is None:
            return None, warnings
        try:
            Converter(import_type(output_type)).load(value)
        except ConversionError as exc:
            where = output_type.rpartition(":")[2]
            if mode == "warn_only":
                return None, [*warnings, f"{exc} (as {where})"]
            return (
                ProgramError(
                    category="validation",
                    message=f"the returned value does not fit {where}:\n- {exc}\n"
                    "Fix the value and return it again.",
                ),
                [],
            )
        return None, warnings
    assert signature is not None  # no signature accepts anything
    expected = render_type(signature.output, "prompt")
    lines = "\n".join(f"- {e}" for e in result.errors)
    return (
        ProgramError(
            category="validation",
            message=f"the returned value does not match the expected output {expected}:\n"
            f"{lines}\nFix the value and return it again.",
        ),
        [],
    )


def coercible_inputs(specs: Any) -> dict[str, str]:
    """For each tool spec whose input has an int, float or bool argument: the tool's
    name -> its arguments as signature text (the ones whose sent value may be coerced).

    Example:
        >>> from ptcflow.signals import ToolSpec
        >>> coercible_inputs([ToolSpec(name="check", input_schema={"type": "object",
        ...     "properties": {"id": {"type": "integer"}, "q": {"type": "string"}}})])
        {'check': '(id :int?) -> :any'}
    """
    out: dict[str, str] = {}
    for spec in specs:
        props = (
            spec.input_schema.get("properties") if isinstance(spec.input_schema, Mapping) else None
        )
        if not isinstance(props, Mapping):
            continue
        params = []
        for name, schema in props.items():
            kind = schema.get("type") if isinstance(schema, Mapping) else None
            if isinstance(kind, list):
                kind = next((k for k in kind if k != "null"), None)
            prim = _SCHEMA_PRIMS.get(kind) if isinstance(kind, str) else None
            if prim is not None and isinstance(name, str) and name.isidentifier():
                params.append(f"{name} :{prim}?")
        if params:
            out[spec.name] = f"({', '.join(params)}) -> :any"
    return out


def call_warnings(inputs: Mapping[str, str], name: str, args: Any) -> tuple[str, ...]:
    """The coercion warnings of a successful tool call (``id: coerced string "42" to
    int``), found again from its arguments and the tool's input (see
    :func:`coercible_inputs`); only top-level arguments are seen."""
    text = inputs.get(name)
    if text is None or not isinstance(args, Mapping):
        return ()
    # only a string (to int, float or bool) or a float (to int) is coerced with a warning
    if not any(isinstance(v, str | float) for v in args.values()):
        return ()
    return tuple(parse_signature(text).validate_input(args).warnings)


def check_fail(value: Any) -> StepFail | ProgramError:
    """The :class:`StepFail` of a ``fail`` value, or the problem to feed back.

    A valid value is a map with a ``reason`` (keyword or string) and a ``message``
    (string); ``op`` (string) and ``details`` (map) are optional.
    """
    if not isinstance(value, Mapping):
        return ProgramError(category="fail", message=_FAIL_HELP)
    reason, message = value.get("reason"), value.get("message")
    op, details = value.get("op"), value.get("details")
    problems = []
    if not isinstance(reason, str) or not reason:
        problems.append(":reason is missing or not a keyword")
    if not isinstance(message, str) or not message:
        problems.append(":message is missing or not a string")
    if op is not None and not isinstance(op, str):
        problems.append(":op must be a string")
    if details is not None and not isinstance(details, Mapping):
        problems.append(":details must be a map")
    if problems:
        return ProgramError(category="fail", message=f"{'; '.join(problems)}: {_FAIL_HELP}")
    assert isinstance(reason, str) and isinstance(message, str)
    return StepFail(
        reason=reason.lstrip(":"),
        message=message,
        op=op,
        details=dict(details) if isinstance(details, Mapping) else {},
    )


def epoch_ms(stamp: str) -> float | None:
    """Milliseconds since the epoch of an RFC 3339 time (a signal's ``time``), or ``None``.

    Example:
        >>> epoch_ms("1970-01-01T00:00:01.5Z")
        1500.0
    """
    m = _TIME.fullmatch(stamp.strip()) if stamp else None
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    seconds = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + frac
    zone = m.group(8)
    if zone and zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return seconds * 1000.0


def span_ms(start: str, end: str) -> float:
    """Milliseconds from ``start`` to ``end`` (RFC 3339 times); 0 when either is unknown."""
    a, b = epoch_ms(start), epoch_ms(end)
    if a is None or b is None:
        return 0.0
    return round(max(0.0, b - a), 3)


def header(turn: int, max_turns: int) -> str:
    """``Turn N of M.``, with the last-turn warning when ``turn == max_turns``."""
    text = f"Turn {turn} of {max_turns}."
    if turn == max_turns and max_turns > 1:
        text += " This is your last turn: end it with (return ...) or (fail ...)."
    return text


def failed(
    state: S,
    reason: str,
    message: str,
    error_type: str,
    *,
    op: str | None = None,
    details: Mapping[str, Any] | None = None,
    error: ErrorEnvelope | None = None,
    **changes: Any,
) -> S:
    """``state`` ended as failed: ``status="failed"``, its :class:`StepFail` and error
    envelope (``error``, else one of ``error_type``), the ``reason``, and ``changes``."""
    fail = StepFail(reason=reason, message=message, op=op, details=dict(details or {}))
    envelope = error or ErrorEnvelope.make(error_type, message, details)
    return msgspec.structs.replace(
        state, status="failed", fail=fail, error=envelope, reason=reason, **changes
    )


class Ended(Protocol):
    """The fields of a SubAgent state that its outcome reads."""

    @property
    def status(self) -> str:
        """``completed`` or ``failed`` once ended."""
        ...

    @property
    def value(self) -> Any:
        """The answer of a completed run."""
        ...

    @property
    def error(self) -> ErrorEnvelope | None:
        """The error of a failed run."""
        ...

    @property
    def fail(self) -> StepFail | None:
        """Why a failed run failed."""
        ...

    @property
    def reason(self) -> str:
        """Why the run ended."""
        ...

    @property
    def usage(self) -> Usage:
        """Tokens summed over the run."""
        ...


def keeps_trace(trace: bool | str, ok: bool) -> bool:
    """Whether a run keeps its turn trace: the strategy's ``trace`` option (``True``,
    ``False`` or ``"on_error"``) for a run that succeeded (``ok``) or failed."""
    return trace is True or (trace == "on_error" and not ok)


def ended_outcome(state: Ended, trace: Trace | None, signature: str | None) -> Outcome:
    """The :class:`Outcome` of an ended SubAgent run: ``Ok(value)`` once completed, else
    ``Err`` with its ``fail``; the turn ``trace`` and the agent's ``signature`` ride along
    for the Step."""
    if state.status == "completed":
        return Outcome(
            result=Ok(payload=state.value),
            usage=state.usage,
            reason=state.reason,
            trace=trace,
            signature=signature,
        )
    error = state.error or ErrorEnvelope.make("internal", "the run failed without an error")
    return Outcome(
        result=Err(error=error),
        usage=state.usage,
        reason=state.reason,
        fail=state.fail,
        trace=trace,
        signature=signature,
    )
