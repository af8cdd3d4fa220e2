"""What the viewer shows of content: redacted and bounded like everything ptcflow reports."""

from __future__ import annotations

from typing import Any, Final

from ptcflow.signals import Secrets, sanitize

__all__ = ("HIDDEN", "Redactor")

HIDDEN: Final = "[content not kept]"
"""What stands for content when a view is built with ``content=False``."""


class Redactor:
    """Redact values and texts for display.

    Values go through :func:`ptcflow.signals.sanitize` (values under secret-looking keys
    such as ``api_key`` or ``*_token`` become ``[REDACTED]``; strings over 4,000
    characters, collections over 200 items and nesting over 8 levels are cut), then the
    known ``secrets`` are scrubbed wherever they appear. With ``content=False`` every
    value and text is replaced by :data:`HIDDEN`, as telemetry does when content capture
    is off.

    Example:
        >>> Redactor().value({"query": "cats", "api_key": "sk-1"})
        {'query': 'cats', 'api_key': '[REDACTED]'}
    """

    __slots__ = ("content", "secrets")

    def __init__(self, secrets: Secrets | None = None, content: bool = True) -> None:
        self.secrets = secrets if secrets else None
        self.content = content

    def value(self, value: Any) -> Any:
        """``value`` as JSON-safe data, redacted and bounded."""
        if not self.content:
            return HIDDEN
        clean = sanitize(value)
        return clean if self.secrets is None else self.secrets.scrub_value(clean)

    def text(self, text: str) -> str:
        """``text`` bounded to 16,000 characters, with known secrets scrubbed."""
        if not self.content:
            return HIDDEN
        if len(text) > 16_000:
            text = text[:16_000] + f"...<{len(text) - 16_000} more chars>"
        return text if self.secrets is None else self.secrets.scrub(text)
