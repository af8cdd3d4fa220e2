"""Small helpers about runtime values: key names, keyword-likeness, short descriptions."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

__all__ = (
    "MISSING",
    "PathNode",
    "describe",
    "format_path",
    "is_keyword",
    "key_name",
)

#: Marks a field that is absent from a map.
MISSING: Final[Any] = object()

#: A path is built as nested pairs ``(parent, segment)``; ``None`` is the root.
PathNode = tuple[Any, str | int] | None

_MAX_SHOWN: Final = 40


def key_name(key: object) -> str:
    """Return the field name a map key stands for.

    ``"id"``, ``":id"`` and a keyword object whose ``name`` is ``"id"`` all stand for
    ``id``; any other key stands for ``str(key)`` with one leading ``:`` removed.
    """
    if type(key) is str:
        return key[1:] if key.startswith(":") else key
    if isinstance(key, str):
        text = str(key)
    else:
        name = getattr(key, "name", None)
        text = name if isinstance(name, str) else str(key)
    return text[1:] if text.startswith(":") else text


def is_keyword(value: object) -> bool:
    """Whether ``value`` is acceptable as ``:keyword``: a str, an Enum member, or a
    keyword object (a class named ``Keyword`` with a str ``name``: PTC-Lisp's, known by
    its shape because the signature language is a leaf beside :mod:`ptcflow.lisp` and
    imports nothing of it)."""
    if isinstance(value, str | enum.Enum):
        return True
    return type(value).__name__ == "Keyword" and isinstance(getattr(value, "name", None), str)


def _short(text: str) -> str:
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def describe(value: object) -> str:
    """Describe a value in signature vocabulary: ``string "abc"``, ``int 42``, ``nil``."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return f"bool {'true' if value else 'false'}"
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        text = str(value) if abs(value) < 10**30 else "(a huge number)"
        return f"int {text}"
    if isinstance(value, float):
        return f"float {value!r}"
    if isinstance(value, str) and not isinstance(value, enum.Enum):
        return f"string {_short(value)}"
    if isinstance(value, enum.Enum):
        return f"enum {type(value).__name__}.{value.name}"
    if is_keyword(value):
        return f"keyword :{key_name(value)}"
    if isinstance(value, Mapping):
        keys = [key_name(k) for k in list(value)[:5]]
        more = ", ..." if len(value) > 5 else ""
        return f"map {{{', '.join(keys)}{more}}}" if keys else "map {}"
    if isinstance(value, list | tuple):
        count = len(value)
        return f"list of {count} item{'s' if count != 1 else ''}"
    if isinstance(value, set | frozenset):
        return f"set of {len(value)} items"
    return type(value).__name__


def format_path(path: PathNode) -> str:
    """Render a path: ``results[0].customer.id``; the root alone is ``$``."""
    parts: list[str | int] = []
    while path is not None:
        path, segment = path
        parts.append(segment)
    text = ""
    for segment in reversed(parts):
        if isinstance(segment, int):
            text += f"[{segment}]"
        else:
            text += f".{segment}" if text else segment
    if not text or text.startswith("["):
        return "$" + text
    return text
