"""What the two wire formats (``_openai_wire``, ``_anthropic_wire``) read and write alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ptcflow.providers._protocol import ProviderError
from ptcflow.signals import TRANSIENT, ErrorEnvelope, ToolSpec

__all__ = ("as_int", "encode_json", "input_schema", "raw_json", "reason", "truncated")

_encoder = msgspec.json.Encoder()


def reason(raw: Any, table: Mapping[str, str]) -> str | None:
    """Map a wire finish/stop reason through ``table``; unknown ones pass through lower-cased.

    Example:
        >>> reason("end_turn", {"end_turn": "stop"}), reason("EOS", {}), reason("", {})
        ('stop', 'eos', None)
    """
    if not isinstance(raw, str) or not raw:
        return None
    return table.get(raw, raw.lower())


def as_int(value: Any) -> int:
    """A token count: ``value`` when it is an ``int`` (not a ``bool``), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def encode_json(value: Any) -> str:
    """``value`` as compact JSON text."""
    return _encoder.encode(value).decode()


def raw_json(data: Any) -> str:
    """``data`` as JSON text for an error's ``body``, or its ``repr`` when not encodable."""
    try:
        return encode_json(data)
    except (TypeError, ValueError):
        return repr(data)


def input_schema(tool: ToolSpec) -> dict[str, Any]:
    """The tool's JSON Schema for its arguments; an empty object schema when it has none."""
    return tool.input_schema or {"type": "object", "properties": {}}


def truncated(provider: str, before: str) -> ProviderError:
    """A retryable ``transient`` error: the stream ended ``before`` its end marker."""
    return ProviderError(
        ErrorEnvelope.make(
            TRANSIENT,
            f"{provider}: stream ended before {before} (truncated)",
            {"provider": provider},
        )
    )
