"""JSON Schema export of signature types."""

from __future__ import annotations

from typing import Any, Final

from ptcflow.signature._ast import Fields, ListOf, Prim, Type
from ptcflow.signature._render import View

__all__ = ("type_schema",)

_PRIM_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "string": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "keyword": {"type": "string", "description": "keyword"},
    "any": {},
    "map": {"type": "object"},
}


def type_schema(node: Type, view: View = "full") -> dict[str, Any]:
    """Return a JSON Schema for ``node``; optional types also admit ``null``.

    Firewalled fields are kept unless ``view`` is ``"parent"``.
    """
    schema: dict[str, Any]
    if isinstance(node, Prim):
        schema = dict(_PRIM_SCHEMAS[node.name])
    elif isinstance(node, ListOf):
        schema = {"type": "array", "items": type_schema(node.item, view)}
    elif isinstance(node, Fields):
        fields = [f for f in node.fields if not (view == "parent" and f.firewalled)]
        schema = {
            "type": "object",
            "properties": {f.name: type_schema(f.type, view) for f in fields},
            "required": [f.name for f in fields if not f.optional],
        }
    else:  # pragma: no cover - the Type family is closed
        raise TypeError(f"not a signature type: {node!r}")
    if node.optional and schema:
        if isinstance(schema.get("type"), str):
            schema["type"] = [schema["type"], "null"]
        else:  # pragma: no cover - every non-empty schema above has a "type"
            schema = {"anyOf": [schema, {"type": "null"}]}
    return schema
