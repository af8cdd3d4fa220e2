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

What the SDK raised is never kept as the ``__cause__`` of a provider error: its message and
body are the server's raw answer, which may echo part of a rejected key. The cause is a
:class:`ScrubbedCause` instead: the SDK exception's type and text with every configured
secret scrubbed (see :class:`~ptcflow.signals.Secrets`), and its traceback frames.
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

from ptcflow.providers._protocol import ProviderError
from ptcflow.signals import (
    AUTH,
    PROVIDER_ERROR,
    RATE_LIMITED,
    TIMEOUT,
    TRANSIENT,
    VALIDATION,
    ErrorEnvelope,
    Secrets,
)

__all__ = (
    "BODY_LIMIT",
    "ScrubbedCause",
    "classify_sdk_error",
    "decode_json",
    "malformed",
    "parse_retry_after",
    "scrub",
    "scrub_error",
    "scrubbed_cause",
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
    """Remove every run of 8+ characters of each secret from ``text`` (see
    :meth:`ptcflow.signals.Secrets.scrub`).

    Example:
        >>> scrub("bad key sk-abcdef123456", ["sk-abcdef123456"])
        'bad key [REDACTED]'
    """
    return Secrets(secrets).scrub(text)


class ScrubbedCause(Exception):
    """What an SDK raised, as text with every configured secret removed.

    A provider error keeps this as its ``__cause__`` in place of the SDK's exception,
    whose message and ``body`` are the server's raw answer (a rejected key echoed back
    included). It carries the SDK exception's traceback frames, so a formatted traceback
    still shows where the failure came from.

    Attributes:
        sdk_type: the module-qualified name of the SDK's exception class
            (``openai.AuthenticationError``).
        status_code: the HTTP status, when the SDK exception had one.
    """

    def __init__(self, sdk_type: str, message: str, status_code: int | None = None) -> None:
        super().__init__(f"{sdk_type}: {message}" if message else sdk_type)
        self.sdk_type = sdk_type
        self.status_code = status_code


def scrubbed_cause(exc: BaseException, secrets: Secrets, *, depth: int = 0) -> ScrubbedCause:
    """The :class:`ScrubbedCause` standing for ``exc`` (and, below it, for its own cause
    or context, up to 4 levels)."""
    kind = type(exc)
    name = f"{kind.__module__}.{kind.__qualname__}"
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not break error reporting
        text = ""
    status = getattr(exc, "status_code", None)
    cause = ScrubbedCause(name, secrets.scrub(text), status if isinstance(status, int) else None)
    cause.__traceback__ = exc.__traceback__
    inner = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    if inner is not None and depth < 4 and not (exc.__suppress_context__ and exc.__cause__ is None):
        cause.__cause__ = scrubbed_cause(inner, secrets, depth=depth + 1)
    else:
        cause.__suppress_context__ = True
    return cause


def scrub_error(error: ProviderError, secrets: Secrets) -> ProviderError:
    """Scrub ``error``'s envelope (message and details) in place; return it.

    Example:
        >>> e = ProviderError(ErrorEnvelope.make("auth", "bad key sk-abcdef123456", {"body": "sk-abcdef123456"}))
        >>> scrub_error(e, Secrets(["sk-abcdef123456"])).envelope.details
        {'body': '[REDACTED]'}
    """
    if not secrets:
        return error
    envelope = secrets.scrub_value(error.envelope)
    if envelope is not error.envelope:
        error.envelope = envelope
        error.args = (f"{envelope.type}: {envelope.message}",)
    return error


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


def malformed(provider: str, what: str, raw: str | bytes | None) -> ProviderError:
    """Return a ``provider_error`` for a response that could not be understood.

    Args:
        provider: the provider name, for the message and details.
        what: what was wrong (``"response body is not JSON"``).
        raw: the raw body or event text; kept in ``details["body"]``, truncated (the
            provider scrubs secrets from it on the way out, with :func:`scrub_error`).
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (raw or "")
    return ProviderError(
        ErrorEnvelope.make(
            PROVIDER_ERROR,
            f"{provider}: {what}",
            {"provider": provider, "body": _truncate(text)},
            retryable=False,
        )
    )


_decoder = msgspec.json.Decoder()


def decode_json(raw: bytes | str, provider: str, what: str) -> Any:
    """Decode a JSON body or event; a ``provider_error`` carrying the raw text if malformed."""
    try:
        return _decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise malformed(provider, f"{what} is not valid JSON ({exc})", raw) from None


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
    exc: BaseException,
    sdk: ModuleType,
    *,
    provider: str,
    secrets: Secrets | Iterable[str] = (),
) -> ProviderError | None:
    """Turn an exception raised by an official SDK call into a :class:`ProviderError`.

    The error's envelope is scrubbed of ``secrets`` and its ``__cause__`` is a
    :class:`ScrubbedCause` standing for ``exc`` (so ``raise classified`` inside the
    ``except`` block shows no raw server answer in a traceback).

    Args:
        exc: what the SDK (or the JSON decoder under it) raised.
        sdk: the SDK module (``openai`` or ``anthropic``) whose exception classes to match.
        provider: the provider name for messages and ``details["provider"]``.
        secrets: what to scrub from messages, details and the cause (the API key, ...).

    Returns:
        The classified error, or ``None`` when ``exc`` is not a provider failure (a bug,
        a cancellation) and must propagate unchanged.
    """
    if isinstance(exc, ProviderError):
        return exc
    classified = _classify(exc, sdk, provider)
    if classified is None:
        return None
    keys = secrets if isinstance(secrets, Secrets) else Secrets(secrets)
    classified.__cause__ = scrubbed_cause(exc, keys)
    return scrub_error(classified, keys)


def _classify(exc: BaseException, sdk: ModuleType, provider: str) -> ProviderError | None:
    if isinstance(exc, json.JSONDecodeError):
        return malformed(provider, f"response is not valid JSON ({exc.msg})", exc.doc)
    if isinstance(exc, sdk.APIStatusError):
        return _from_status(exc, provider)
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
        return malformed(provider, f"unexpected response: {exc}", raw)
    if isinstance(exc, sdk.APIError):  # an error event inside a stream, seen by the SDK
        return stream_error(provider, getattr(exc, "body", None))
    return None


def stream_error(provider: str, body: Any) -> ProviderError:
    """Classify an ``error`` object received inside an event stream by its ``type``.

    Example:
        >>> stream_error("anthropic", {"type": "overloaded_error", "message": "Overloaded"}).envelope.type
        'transient'
    """
    kind = _body_type({"error": body}) or PROVIDER_ERROR
    message = _body_message({"error": body}) or "error event in stream"
    return ProviderError(
        ErrorEnvelope.make(
            kind,
            f"{provider}: stream error: {message}",
            {"provider": provider, "body": body},
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


def _from_status(exc: Any, provider: str) -> ProviderError:
    status = int(exc.status_code)
    response = getattr(exc, "response", None)
    headers = dict(response.headers) if response is not None else {}
    retry_after = parse_retry_after(headers)
    body = getattr(exc, "body", None)
    kind = _status_type(status)
    message = _body_message(body) or f"HTTP {status}"
    details: dict[str, Any] = {"provider": provider, "status": status}
    if retry_after is not None:
        details["retry_after"] = retry_after
    request_id = headers.get("x-request-id") or headers.get("request-id")
    if request_id:
        details["request_id"] = request_id
    if body is not None:
        raw = body if isinstance(body, str) else json.dumps(body, default=str)
        details["body"] = _truncate(raw)
    return ProviderError(
        ErrorEnvelope.make(kind, f"{provider}: HTTP {status}: {message}", details),
        retry_after=retry_after,
    )
