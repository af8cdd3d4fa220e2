"""The fast path: a signature type translated once into an equivalent msgspec type.

``msgspec.convert`` then accepts valid data in C. The translation only ever accepts values
the slow path (:mod:`ptcflow.signature._validate`) would accept unchanged, so a rejection
just means "ask the slow path", which finds the errors and their paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from ptcflow.signature._ast import Fields, ListOf, Prim, Type

__all__ = ("acceptor", "to_msgspec")

_FAST_PRIMS: Final[dict[str, Any]] = {
    "any": Any,
    "string": str,
    "keyword": str,
    "map": dict,
    "int": int,
    "float": float,
    "bool": bool,
}


def to_msgspec(node: Type, strict: bool) -> Any:
    """Translate ``node`` to a msgspec type accepting a subset of what it accepts."""
    result: Any
    if isinstance(node, Prim):
        result = _FAST_PRIMS[node.name]
    elif isinstance(node, ListOf):
        result = list[to_msgspec(node.item, strict)]  # type: ignore[misc]
    elif isinstance(node, Fields):
        forbid = strict or any(f.optional for f in node.fields)
        specs: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        rename: dict[str, str] = {}
        for index, field in enumerate(node.fields):
            attr = f"f{index}"
            rename[attr] = field.name
            field_type = to_msgspec(field.type, strict)
            if field.optional:
                specs.append((attr, field_type, None))
            else:
                specs.append((attr, field_type))
        result = msgspec.defstruct(
            "Fields", specs, kw_only=True, rename=rename, forbid_unknown_fields=forbid
        )
    else:  # pragma: no cover - the Type family is closed
        raise TypeError(f"not a signature type: {node!r}")
    if node.optional and result is not Any:
        result = result | None
    return result


def acceptor(fast: Any) -> Callable[[Any], object] | None:
    """Return a function that raises unless msgspec accepts a value as ``fast``.

    msgspec caches what it learns about a Struct class but re-inspects a bare
    ``list[...]`` on every call (several µs), so anything but a Struct is wrapped in a
    one-field Struct. Bare primitives get no fast path: their closure is cheaper.
    """
    if fast is None or not (isinstance(fast, type) and issubclass(fast, msgspec.Struct)):
        if fast is None or fast in _FAST_PRIMS.values() or fast is Any:
            return None
        wrapper = msgspec.defstruct("Value", [("v", fast)])

        def accept_wrapped(value: Any) -> object:
            return msgspec.convert({"v": value}, wrapper, strict=True)

        return accept_wrapped
    struct = fast

    def accept_struct(value: Any) -> object:
        return msgspec.convert(value, struct, strict=True)

    return accept_struct
