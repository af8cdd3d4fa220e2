"""What the viewer shows of content: redacted and bounded like everything ptcflow reports."""

from __future__ import annotations

import math
from typing import Any, Final

from ptcflow.signals import Secrets, is_secret_key, sanitize

__all__ = ("HIDDEN", "Redactor")

_SECRET_KEYS: dict[str, bool] = {}
"""Whether a key names a secret, for the keys seen (at most 10,000)."""

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

    __slots__ = ("_keys", "content", "secrets")

    def __init__(self, secrets: Secrets | None = None, content: bool = True) -> None:
        self.secrets = secrets if secrets else None
        self.content = content
        # key -> names a secret: shared by every Redactor (is_secret_key is a function of the
        # key alone; tool arguments repeat keys across runs, and a stream folds each run
        # into a Redactor of its own)
        self._keys = _SECRET_KEYS

    def value(self, value: Any) -> Any:
        """``value`` as JSON-safe data, redacted and bounded."""
        if not self.content:
            return HIDDEN
        # Most values are small plain JSON without secret keys: those are returned as they
        # are (values decoded from signals are never changed); the others are copied.
        clean = value if self._plain(value, 0) else sanitize(value)
        return clean if self.secrets is None else self.secrets.scrub_value(clean)

    def _plain(self, value: Any, depth: int) -> bool:
        """True when ``sanitize`` would return ``value`` unchanged."""
        kind = type(value)
        if kind is str:
            return len(value) <= 4_000
        if value is None or kind is int or kind is bool:
            return True
        if kind is float:
            return math.isfinite(value)
        if depth >= 8:
            return False
        if kind is dict:
            if len(value) > 200:
                return False
            keys = self._keys
            for key, item in value.items():
                if type(key) is not str:
                    return False
                secret = keys.get(key)
                if secret is None:
                    secret = is_secret_key(key)
                    if len(keys) < 10_000:
                        keys[key] = secret
                if secret or not self._plain(item, depth + 1):
                    return False
            return True
        if kind is list:
            return len(value) <= 200 and all(self._plain(item, depth + 1) for item in value)
        return False

    def error(self, text: str) -> str:
        """An error message: kept with or without content, cut to 16,000 characters,
        known secrets scrubbed."""
        if len(text) > 16_000:
            text = text[:16_000] + f"...<{len(text) - 16_000} more chars>"
        return text if self.secrets is None else self.secrets.scrub(text)

    def text(self, text: str) -> str:
        """``text`` bounded to 16,000 characters, with known secrets scrubbed."""
        if not self.content:
            return HIDDEN
        if len(text) > 16_000:
            text = text[:16_000] + f"...<{len(text) - 16_000} more chars>"
        return text if self.secrets is None else self.secrets.scrub(text)
