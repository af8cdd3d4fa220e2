"""Rendering types back to compact canonical text (a whole signature: ``Signature.render``)."""

from __future__ import annotations

from typing import Final, Literal

from ptcflow.errors import UsageError
from ptcflow.signature._ast import Fields, ListOf, Prim, Type

__all__ = ("FIREWALLED", "View", "check_view", "render_type")

View = Literal["full", "prompt", "parent"]

#: What the ``prompt`` view shows in place of a firewalled field's type.
FIREWALLED: Final = "<Firewalled>"

_VIEWS: Final = ("full", "prompt", "parent")


def check_view(view: str) -> View:
    """Return ``view`` if it is a known view, else raise :class:`UsageError`."""
    if view not in _VIEWS:
        raise UsageError(f"unknown view {view!r}: use one of {', '.join(map(repr, _VIEWS))}")
    return view  # type: ignore[return-value]


def render_type(node: Type, view: View = "full") -> str:
    """Render one type as canonical text, e.g. ``[{id :int, email :string?}]``.

    Args:
        node: the type.
        view: ``"full"`` shows everything; ``"prompt"`` shows firewalled ``_fields`` as
            ``<Firewalled>``; ``"parent"`` leaves them out.
    """
    if isinstance(node, Prim):
        text = ":" + node.name
    elif isinstance(node, ListOf):
        text = "[" + render_type(node.item, view) + "]"
    elif isinstance(node, Fields):
        parts: list[str] = []
        for field in node.fields:
            if field.firewalled and view != "full":
                if view == "parent":
                    continue
                parts.append(f"{field.name} {FIREWALLED}")
            else:
                parts.append(f"{field.name} {render_type(field.type, view)}")
        text = "{" + ", ".join(parts) + "}"
    else:  # pragma: no cover - the Type family is closed
        raise TypeError(f"not a signature type: {node!r}")
    return text + "?" if node.optional else text
