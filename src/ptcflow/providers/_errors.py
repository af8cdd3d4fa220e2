"""Classify provider failures into canonical :class:`~ptcflow.signals.ErrorEnvelope` values.

Both official SDKs (``openai``, ``anthropic``) raise the same family of exceptions, so one
classifier serves both::

    APIStatusError (HTTP status)  429          -> rate_limited  (retryable, retry_after)
                                  408          -> timeout       (retryable)
                                  5xx, 529     -> transient     (retryable)
                                  401, 403     -> auth
                                  other 4xx    -> validation
    APITimeoutError / read timeout              -> timeout       (retryable)
    APIConnectionError / reset / dropped stream -> transient     (retryable)
    unparseable body (JSON, schema)             -> provider_error (raw body truncated)
    an ``error`` event inside a stream          -> by its error type, else provider_error

The API key of the provider is scrubbed from every message and detail: servers sometimes
echo part of a rejected key back, and an envelope travels to logs, spans and journals.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

import anyio
import msgspec

from ptcflow.runtime._provider import ProviderError
from ptcflow.signals import (
    AUTH,
    PROVIDER_ERROR,
    RATE_LIMITED,
    REDACTED,
    TIMEOUT,
    TRANSIENT,
    VALIDATION,
    ErrorEnvelope,
)

__all__ = (
    "BODY_LIMIT",
    "classify_sdk_error",
    "decode_json",
    "malformed",
    "parse_retry_after",
    "scrub",
    "stream_error",
)

BODY_LIMIT = 2_000
"""How many characters of a raw response body an envelope keeps."""

# error ``type`` strings carried in JSON error bodies / stream error events
_BODY_TYPES = {
    "rate_limit_error": RATE_LIMITED,
    "rate_limit_exceeded": RATE_LIMITED,
    "overloaded_error": TRANSIENT,
    "server_error": TRANSIENT,
    "api_error": TRANSIENT,
    "timeout_error": TIMEOUT,
    "authentication_error": AUTH,
    "permission_error": AUTH,
    "invalid_request_error": VALIDATION,
}


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each secret (and of its last 8+ characters) by ``[REDACTED]``.

    Example:
        >>> scrub("bad key sk-abcdef123456", ["sk-abcdef123456"])
        'bad key [REDACTED]'
    """
    for secret in secrets:
        if not secret or len(secret) < 6:
            continue
        text = text.replace(secret, REDACTED)
        tail = secret[-8:]
        if len(secret) >= 16 and tail in text:
            text = text.replace(tail, REDACTED)
    return text


def _scrub_any(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, Mapping):
        return {str(k): _scrub_any(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_any(v, secrets) for v in value]
    return value


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Read ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date) in seconds.

    Returns ``None`` when absent or unreadable; negative values become ``0.0``.

    Example:
        >>> parse_retry_after({"retry-after": "2"})
        2.0
        >>> parse_retry_after({"retry-after-ms": "1500"})
        1.5
    """
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _truncate(text: str) -> str:
    if len(text) <= BODY_LIMIT:
        return text
    return f"{text[:BODY_LIMIT]}...<{len(text)} chars>"


def malformed(
    provider: str, what: str, raw: str | bytes | None, *, secrets: Iterable[str] = ()
) -> ProviderError:
    """Return a ``provider_error`` for a response that could not be understood.

    Args:
        provider: the provider name, for the message and details.
        what: what was wrong (``"response body is not JSON"``).
        raw: the raw body or event text; kept in ``details["body"]``, truncated.
        secrets: strings to scrub from the body (the API key).
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (raw or "")
    keys = tuple(secrets)
    return ProviderError(
        ErrorEnvelope.make(
            PROVIDER_ERROR,
            f"{provider}: {what}",
            {"provider": provider, "body": _truncate(scrub(text, keys))},
            retryable=False,
        )
    )


_decoder = msgspec.json.Decoder()


def decode_json(raw: bytes | str, provider: str, what: str, secrets: Iterable[str] = ()) -> Any:
    """Decode a JSON body or event; a ``provider_error`` carrying the raw text if malformed."""
    try:
        return _decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise malformed(
            provider, f"{what} is not valid JSON ({exc})", raw, secrets=secrets
        ) from None


def _status_type(status: int) -> str:
    if status == 429:
        return RATE_LIMITED
    if status == 408:
        return TIMEOUT
    if status >= 500:
        return TRANSIENT
    if status in (401, 403):
        return AUTH
    return VALIDATION


def _body_message(body: Any) -> str | None:
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return None


def _body_type(body: Any) -> str | None:
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            for key in ("type", "code"):
                kind = err.get(key)
                if isinstance(kind, str) and kind in _BODY_TYPES:
                    return _BODY_TYPES[kind]
    return None


def classify_sdk_error(
    exc: BaseException, sdk: ModuleType, *, provider: str, secrets: Iterable[str] = ()
) -> ProviderError | None:
    """Turn an exception raised by an official SDK call into a :class:`ProviderError`.

    Args:
        exc: what the SDK (or the JSON decoder under it) raised.
        sdk: the SDK module (``openai`` or ``anthropic``) whose exception classes to match.
        provider: the provider name for messages and ``details["provider"]``.
        secrets: strings scrubbed from messages and details (the API key).

    Returns:
        The classified error, or ``None`` when ``exc`` is not a provider failure (a bug,
        a cancellation) and must propagate unchanged.
    """
    keys = tuple(secrets)
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, json.JSONDecodeError):
        return malformed(provider, f"response is not valid JSON ({exc.msg})", exc.doc, secrets=keys)
    if isinstance(exc, sdk.APIStatusError):
        return _from_status(exc, provider, keys)
    if isinstance(exc, sdk.APITimeoutError):
        return _simple(TIMEOUT, f"{provider}: request timed out", provider)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = f" ({type(cause).__name__})" if cause is not None else ""
        return _simple(TRANSIENT, f"{provider}: connection failed{reason}", provider)
    transport = _transport_error(exc, provider)
    if transport is not None:
        return transport
    if isinstance(exc, sdk.APIResponseValidationError):
        body = getattr(exc, "body", None)
        raw = body if isinstance(body, str) else json.dumps(body, default=str)
        return malformed(provider, f"unexpected response: {exc}", raw, secrets=keys)
    if isinstance(exc, sdk.APIError):  # an error event inside a stream, seen by the SDK
        return stream_error(provider, getattr(exc, "body", None), secrets=keys)
    return None


def stream_error(provider: str, body: Any, *, secrets: Iterable[str] = ()) -> ProviderError:
    """Classify an ``error`` object received inside an event stream by its ``type``.

    Example:
        >>> stream_error("anthropic", {"type": "overloaded_error", "message": "Overloaded"}).envelope.type
        'transient'
    """
    keys = tuple(secrets)
    kind = _body_type({"error": body}) or PROVIDER_ERROR
    message = scrub(_body_message({"error": body}) or "error event in stream", keys)
    return ProviderError(
        ErrorEnvelope.make(
            kind,
            f"{provider}: stream error: {message}",
            {"provider": provider, "body": _scrub_any(body, keys)},
        )
    )


def _transport_error(exc: BaseException, provider: str) -> ProviderError | None:
    """Classify errors of the HTTP layer under the SDK (raised while reading a stream)."""
    if isinstance(exc, TimeoutError):
        return _simple(TIMEOUT, f"{provider}: read timed out", provider)
    if isinstance(exc, anyio.EndOfStream | anyio.BrokenResourceError | ConnectionError):
        return _simple(TRANSIENT, f"{provider}: connection lost ({type(exc).__name__})", provider)
    if not type(exc).__module__.startswith("httpx"):
        return None
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return _simple(TIMEOUT, f"{provider}: read timed out ({type(exc).__name__})", provider)
    if isinstance(exc, httpx2.RequestError):
        return _simple(TRANSIENT, f"{provider}: connection lost ({type(exc).__name__})", provider)
    return None


def _simple(kind: str, message: str, provider: str) -> ProviderError:
    return ProviderError(ErrorEnvelope.make(kind, message, {"provider": provider}))


def _from_status(exc: Any, provider: str, keys: tuple[str, ...]) -> ProviderError:
    status = int(exc.status_code)
    response = getattr(exc, "response", None)
    headers = dict(response.headers) if response is not None else {}
    retry_after = parse_retry_after(headers)
    body = getattr(exc, "body", None)
    kind = _status_type(status)
    message = scrub(_body_message(body) or f"HTTP {status}", keys)
    details: dict[str, Any] = {"provider": provider, "status": status}
    if retry_after is not None:
        details["retry_after"] = retry_after
    request_id = headers.get("x-request-id") or headers.get("request-id")
    if request_id:
        details["request_id"] = request_id
    if body is not None:
        raw = body if isinstance(body, str) else json.dumps(body, default=str)
        details["body"] = _truncate(scrub(raw, keys))
    return ProviderError(
        ErrorEnvelope.make(kind, f"{provider}: HTTP {status}: {message}", details),
        retry_after=retry_after,
    )
