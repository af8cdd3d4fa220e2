"""Hiding firewalled (``_``-prefixed) fields of data from model-facing text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptcflow.signature._render import FIREWALLED, View, check_view
from ptcflow.signature._values import key_name

__all__ = ("redact_firewalled",)


def redact_firewalled(value: Any, view: View = "prompt") -> Any:
    """Return ``value`` with the entries of firewalled keys hidden, at any depth.

    A key is firewalled when its name (``"_ids"``, ``":_ids"`` or a keyword ``:_ids``)
    starts with ``_``. The data itself keeps them; use this only on what a model reads.

    Args:
        value: any data (maps, lists, tuples, scalars); it is not modified.
        view: ``"prompt"`` replaces the values with ``"<Firewalled>"``; ``"parent"``
            removes the keys (what a parent agent sees of a child's result); ``"full"``
            returns ``value`` unchanged.

    Returns:
        The redacted copy; containers without firewalled keys are returned as they are.

    Raises:
        UsageError: ``view`` is unknown.

    Example:
        >>> redact_firewalled({"summary": "ok", "_email_ids": [1, 2]})
        {'summary': 'ok', '_email_ids': '<Firewalled>'}
        >>> redact_firewalled({"summary": "ok", "_email_ids": [1, 2]}, view="parent")
        {'summary': 'ok'}
    """
    checked = check_view(view)
    if checked == "full":
        return value
    return _redact(value, checked == "parent")


def _redact(value: Any, drop: bool) -> Any:
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        changed = not isinstance(value, dict)
        for key, item in value.items():
            if key_name(key).startswith("_"):
                changed = True
                if not drop:
                    out[key] = FIREWALLED
                continue
            new = _redact(item, drop)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [_redact(item, drop) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value
