"""Checks shared by the SubAgent strategies: the returned value, the ``fail`` value, time.

Pure functions of plain data; the problems they find are :class:`ProgramError` values
written for the model (what, where, how to fix), fed back on the next turn.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from typing import Any, Final

from ptcflow.core import StepFail
from ptcflow.signals import ProgramError
from ptcflow.signature import Signature, render_type

__all__ = ("check_fail", "check_return", "epoch_ms", "span_ms")

_TIME: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?"
)
_FAIL_HELP: Final = (
    'fail needs a map with :reason and :message, e.g. (fail {:reason :not_found :message "No '
    'user with that id"}); :op (a string) and :details (a map) are optional'
)


def check_return(
    signature: Signature | None, value: Any, mode: str
) -> tuple[ProgramError | None, list[str]]:
    """Validate a returned value against the signature's output in ``mode``.

    Returns:
        ``(problem, warnings)``: the problem to feed back (category ``validation``, one
        line per path that failed) or ``None``, and the warnings of ``warn_only``.
    """
    if signature is None:
        return None, []
    result = signature.validate_output(value, mode)
    if result.ok:
        return None, list(result.warnings)
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
