"""Result envelopes: ``Ok(payload, effects)`` / ``Err(error, effects)`` and ``ErrorEnvelope``.

Every terminal signal carries one of these under ``data.result``. Whatever shape a result
arrives in (a legacy ``(ok, value)`` pair, an exception, a bare string, any object),
:func:`normalize_result` turns it into the canonical form at the boundary, so nothing past
the executor ever sees anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Generic, TypeAlias, TypeVar

import msgspec

from ptcflow.signals._sanitize import json_safe, sanitize

__all__ = (
    "AUTH",
    "BUSY",
    "CANCELLED",
    "INTERNAL",
    "PROVIDER_ERROR",
    "RATE_LIMITED",
    "RETRYABLE_TYPES",
    "TIMEOUT",
    "TOOL_ERROR",
    "TRANSIENT",
    "UNKNOWN_TOOL",
    "VALIDATION",
    "Err",
    "ErrorEnvelope",
    "Ok",
    "Result",
    "error_from_exception",
    "normalize_result",
    "tool_result_content",
)

T = TypeVar("T")

# The error types ptcflow itself produces (others may come from user code).
TIMEOUT: Final = "timeout"
RATE_LIMITED: Final = "rate_limited"
TRANSIENT: Final = "transient"
AUTH: Final = "auth"
VALIDATION: Final = "validation"
UNKNOWN_TOOL: Final = "unknown_tool"
TOOL_ERROR: Final = "tool_error"
PROVIDER_ERROR: Final = "provider_error"
CANCELLED: Final = "cancelled"
BUSY: Final = "busy"
INTERNAL: Final = "internal"

RETRYABLE_TYPES: Final = frozenset({TIMEOUT, RATE_LIMITED, TRANSIENT})
"""Error types that are retryable by default (a timeout, HTTP 429, 5xx / connection errors)."""


class ErrorEnvelope(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The canonical failure: exactly ``type``, ``message``, ``details``, ``retryable``.

    ``details`` is always JSON-safe with secrets redacted; build envelopes through
    :meth:`make` (or :func:`error_from_exception`) to get that guarantee.

    Example:
        >>> ErrorEnvelope.make("timeout", "model call exceeded 2000 ms", {"timeout_ms": 2000})
        ErrorEnvelope(type='timeout', message='model call exceeded 2000 ms', details={'timeout_ms': 2000}, retryable=True)
    """

    type: str
    message: str
    details: dict[str, Any] = {}
    retryable: bool = False

    @classmethod
    def make(
        cls,
        type: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        *,
        retryable: bool | None = None,
    ) -> ErrorEnvelope:
        """Build an envelope with sanitized ``details``.

        Args:
            type: the error type (``timeout``, ``rate_limited``, ``tool_error``, ...).
            message: one line saying what went wrong and where.
            details: extra JSON-able facts; sanitized and redacted here.
            retryable: defaults to whether ``type`` is in :data:`RETRYABLE_TYPES`.
        """
        safe = sanitize(dict(details)) if details else {}
        if retryable is None:
            retryable = type in RETRYABLE_TYPES
        return cls(type=type, message=str(message)[:4000], details=safe, retryable=retryable)

    def to_dict(self) -> dict[str, Any]:
        """Return the envelope as plain JSON data (the shape the model sees)."""
        return {
            "type": self.type,
            "message": self.message,
            "details": self.details,
            "retryable": self.retryable,
        }


class Ok(
    msgspec.Struct, Generic[T], frozen=True, gc=False, kw_only=True, tag="ok", tag_field="status"
):
    """A successful result: the ``payload`` and the ``effects`` it asked for."""

    payload: T
    effects: tuple[Any, ...] = ()

    ok: ClassVar[bool] = True
    """Always True; lets callers branch without isinstance (a class attribute: reading
    it calls nothing)."""


class Err(msgspec.Struct, frozen=True, gc=False, kw_only=True, tag="error", tag_field="status"):
    """A failed result: the :class:`ErrorEnvelope` and the ``effects`` it asked for."""

    error: ErrorEnvelope
    effects: tuple[Any, ...] = ()

    ok: ClassVar[bool] = False
    """Always False; lets callers branch without isinstance (a class attribute)."""


Result: TypeAlias = "Ok[Any] | Err"


def error_from_exception(
    exc: BaseException, *, type: str | None = None, retryable: bool | None = None
) -> ErrorEnvelope:
    """Describe an exception as an :class:`ErrorEnvelope`.

    An exception carrying an ``envelope`` attribute (for example a provider error) gives
    that envelope; ``TimeoutError`` becomes a retryable ``timeout``; anything else becomes a
    non-retryable ``tool_error`` unless ``type`` says otherwise. The exception class and
    message go into ``details``; tracebacks never do.
    """
    carried = getattr(exc, "envelope", None)
    if isinstance(carried, ErrorEnvelope) and type is None:
        return carried
    if type is None:
        type = TIMEOUT if isinstance(exc, TimeoutError) else TOOL_ERROR
    try:
        text = str(exc) or type_name(exc)
    except Exception:  # a broken __str__ must not break error reporting
        text = type_name(exc)
    return ErrorEnvelope.make(
        type,
        f"{type_name(exc)}: {text}" if text != type_name(exc) else text,
        {"exception": type_name(exc)},
        retryable=retryable,
    )


def type_name(exc: BaseException) -> str:
    """Return the class name of an exception (module-free, stable across versions)."""
    return exc.__class__.__name__


def normalize_result(value: Any) -> Ok[Any] | Err:
    """Turn any result shape into ``Ok`` or ``Err``.

    Accepted shapes: ``Ok`` / ``Err`` (returned as is), an :class:`ErrorEnvelope`, an
    exception, legacy pairs ``(True, value)`` / ``(False, reason)`` / ``("ok", value)`` /
    ``("error", reason)``, triples with effects, a mapping ``{"ok": bool, "result"|"error":
    ...}``; anything else is a successful payload made JSON data by :func:`json_safe`
    (never truncated: it is the answer). Error ``details`` are sanitized: bounded, redacted.

    Example:
        >>> normalize_result((False, "boom")).error.message
        'boom'
    """
    if isinstance(value, Ok | Err):
        return value
    if isinstance(value, ErrorEnvelope):
        return Err(error=value)
    if isinstance(value, BaseException):
        return Err(error=error_from_exception(value))
    if isinstance(value, tuple) and len(value) in (2, 3) and _is_tag(value[0]):
        effects = _effects(value[2]) if len(value) == 3 else ()
        if value[0] in (True, "ok"):
            return Ok(payload=json_safe(value[1]), effects=effects)
        return Err(error=_reason_to_envelope(value[1]), effects=effects)
    if (
        isinstance(value, Mapping)
        and isinstance(value.get("ok"), bool)
        and value.keys() <= _ENVELOPE_KEYS
    ):
        if value["ok"]:
            return Ok(payload=json_safe(value.get("result")))
        return Err(error=_reason_to_envelope(value.get("error")))
    return Ok(payload=json_safe(value))


_ENVELOPE_KEYS: Final = frozenset({"ok", "result", "error"})


def _is_tag(x: Any) -> bool:
    # isinstance first: `x in (...)` would call an arbitrary __eq__ (numpy arrays raise)
    return x is True or x is False or (isinstance(x, str) and x in ("ok", "error"))


def _reason_to_envelope(reason: Any) -> ErrorEnvelope:
    if isinstance(reason, ErrorEnvelope):
        return reason
    if isinstance(reason, BaseException):
        return error_from_exception(reason)
    if isinstance(reason, Mapping) and "message" in reason:
        kind = str(reason.get("type", TOOL_ERROR))
        details = reason.get("details")
        retryable = reason.get("retryable", reason.get("retryable?"))
        return ErrorEnvelope.make(
            kind,
            str(reason["message"]),
            details
            if isinstance(details, Mapping)
            else ({"details": details} if details else None),
            retryable=retryable if isinstance(retryable, bool) else None,
        )
    if isinstance(reason, str):
        return ErrorEnvelope.make(TOOL_ERROR, reason)
    name = getattr(reason, "name", None)  # keyword-like atoms (:not_found)
    if isinstance(name, str):
        return ErrorEnvelope.make(name, name)
    return ErrorEnvelope.make(TOOL_ERROR, "error", {"reason": reason})


_content_encoder = msgspec.json.Encoder()
_OK_OPEN: Final = b'{"ok":true,"result":'


def tool_result_content(result: Ok[Any] | Err) -> str:
    """Render a result as the JSON text the model reads in its next turn.

    ``{"ok": true, "result": ...}`` on success, ``{"ok": false, "error": {type, message,
    details, retryable}}`` on failure.

    Example:
        >>> tool_result_content(Ok(payload=5))
        '{"ok":true,"result":5}'
    """
    if type(result) is Ok:  # the common case: the payload encoded once, no wrapping dict
        try:
            return (_OK_OPEN + _content_encoder.encode(result.payload) + b"}").decode("utf-8")
        except (TypeError, ValueError, OverflowError):
            pass  # the general path below sanitizes it
    if isinstance(result, Ok):
        body: dict[str, Any] = {"ok": True, "result": result.payload}
    else:
        body = {"ok": False, "error": result.error.to_dict()}
    try:
        return _content_encoder.encode(body).decode("utf-8")
    except (TypeError, ValueError, OverflowError):
        return _content_encoder.encode(sanitize(body)).decode("utf-8")


def _effects(raw: Any) -> tuple[Any, ...]:
    """Effects of a legacy triple, as JSON data (anything but a list/tuple means none)."""
    if not isinstance(raw, list | tuple):
        return ()
    return tuple(json_safe(effect) for effect in raw)
