"""Turn arbitrary Python values into bounded, JSON-safe data with secrets redacted."""

from __future__ import annotations

import base64
import dataclasses
import enum
import math
from collections.abc import Mapping
from typing import Any, Final

import msgspec

__all__ = ("REDACTED", "is_secret_key", "json_safe", "sanitize")

REDACTED = "[REDACTED]"

_SECRET_PARTS = (
    "password",
    "passwd",
    "secret",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "cookie",
    "private_key",
    "credential",
    "bearer",
)
_SECRET_SUFFIXES = ("_token", "-token", "_auth", "-auth", "accesstoken", "refreshtoken")
_SECRET_NAMES = frozenset({"token", "auth", "x-api-key", "session_id", "sessionid"})


def is_secret_key(key: str) -> bool:
    """Return True when a mapping key names a secret (``api_key``, ``password``, ``*_token``, ...)."""
    lowered = key.lower()
    return (
        lowered in _SECRET_NAMES
        or lowered.endswith(_SECRET_SUFFIXES)
        or any(part in lowered for part in _SECRET_PARTS)
    )


def sanitize(
    value: Any,
    *,
    max_depth: int = 8,
    max_items: int = 200,
    max_string: int = 4_000,
) -> Any:
    """Return a JSON-safe copy of ``value``: bounded in size, cycles cut, secrets redacted.

    Mappings keep string keys (other keys are stringified); tuples, sets and other
    iterables become lists; bytes become base64 text; msgspec structs and dataclasses
    become mappings; anything else becomes its bounded ``repr``. Values under keys that
    name secrets (see :func:`is_secret_key`) are replaced by ``"[REDACTED]"``. Non-finite
    floats become strings. The function never raises.

    Args:
        value: anything.
        max_depth: nesting beyond this depth is replaced by a ``"<max depth>"`` marker.
        max_items: longer collections are cut, with a ``"<N more>"`` marker appended.
        max_string: longer strings are cut and end with ``"...<N chars>"``.

    Example:
        >>> sanitize({"api_key": "sk-1", "xs": (1, 2), "b": b"hi"})
        {'api_key': '[REDACTED]', 'xs': [1, 2], 'b': 'aGk='}
    """
    kind = type(value)
    if value is None or kind is bool or kind is int:  # the common payloads: no walker needed
        return value
    if kind is str and len(value) <= max_string:
        return value
    return _Sanitizer(max_depth, max_items, max_string).walk(value, 0)


class _Sanitizer:
    __slots__ = ("active", "max_depth", "max_items", "max_string")

    def __init__(self, max_depth: int, max_items: int, max_string: int) -> None:
        self.max_depth = max_depth
        self.max_items = max_items
        self.max_string = max_string
        self.active: set[int] = set()

    def text(self, s: str) -> str:
        if len(s) <= self.max_string:
            return s
        return f"{s[: self.max_string]}...<{len(s)} chars>"

    def walk(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, enum.Enum):
            return self.walk(value.value, depth)
        if isinstance(value, bytes | bytearray | memoryview):
            raw = bytes(value)[: self.max_string]
            return base64.b64encode(raw).decode("ascii")
        if depth >= self.max_depth:
            return "<max depth>"
        ident = id(value)
        if ident in self.active:
            return "<cycle>"
        self.active.add(ident)
        try:
            return self.container(value, depth)
        except Exception:  # a hostile __iter__/__repr__ must not break error reporting
            return f"<unrepresentable {type(value).__name__}>"
        finally:
            self.active.discard(ident)

    def container(self, value: Any, depth: int) -> Any:
        if isinstance(value, msgspec.Struct):
            value = {f: getattr(value, f) for f in value.__struct_fields__}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        elif isinstance(value, BaseException):
            return self.text(f"{type(value).__name__}: {value}")
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for i, (k, v) in enumerate(value.items()):
                if i >= self.max_items:
                    out["<truncated>"] = f"<{len(value) - i} more>"
                    break
                key = self.text(k if isinstance(k, str) else str(getattr(k, "name", k)))
                out[key] = REDACTED if is_secret_key(key) else self.walk(v, depth + 1)
            return out
        if isinstance(value, list | tuple | set | frozenset):
            items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
            result = [self.walk(v, depth + 1) for v in items[: self.max_items]]
            if len(items) > self.max_items:
                result.append(f"<{len(items) - self.max_items} more>")
            return result
        # A PTC-Lisp keyword, known by its shape: signals is a leaf beside lisp and
        # imports nothing of it (the program host, above both, uses the real type).
        name = getattr(value, "name", None)
        if type(value).__name__ == "Keyword" and isinstance(name, str):
            return name
        return self.text(repr(value))


def _leaf(value: Any) -> Any:
    """msgspec's hook for values it cannot encode: their bounded, JSON-safe form."""
    return sanitize(value)


_encoder: Final = msgspec.json.Encoder(enc_hook=_leaf)
_decoder: Final = msgspec.json.Decoder()
_SCALARS: Final = (str, int, bool)


def json_safe(value: Any) -> Any:
    """Return ``value`` as plain JSON data, unbounded: what a JSON round trip gives back.

    Tuples and sets become lists, structs and dataclasses mappings, datetimes and UUIDs
    strings (msgspec's encodings), non-finite floats ``None``; any other object becomes
    what :func:`sanitize` makes of it (a bounded repr). Unlike
    ``sanitize``, large plain data is never truncated and keys are not redacted: it is the
    tool's answer, which a program may need whole.

    Example:
        >>> json_safe({"xs": (1, 2), "ok": True})
        {'xs': [1, 2], 'ok': True}
    """
    kind = type(value)
    if value is None or kind in _SCALARS:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    try:
        return _decoder.decode(_encoder.encode(value))
    except (TypeError, ValueError, OverflowError, RecursionError):
        return sanitize(value)
