"""The type nodes of the signature language: frozen msgspec structs compared by value.

::

    Type                  base; ``optional`` marks ``?`` (value may be nil or omitted)
    ├── Prim              :string :int :float :bool :keyword :any :map
    ├── ListOf            [:t]
    └── Fields            {name :t, ...}  (a map with typed fields)
    Field                 one ``name :t`` entry of a Fields map
    Param(Field)          one ``name :t`` input parameter of a Signature
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, Literal

import msgspec

__all__ = (
    "ANY",
    "NAME_RE",
    "PRIM_NAMES",
    "AnyType",
    "Field",
    "Fields",
    "ListOf",
    "Param",
    "Prim",
    "PrimName",
    "Type",
    "contains_prim",
)

PrimName = Literal["string", "int", "float", "bool", "keyword", "any", "map"]

#: Every primitive type name, in the order the docs list them.
PRIM_NAMES: Final[tuple[str, ...]] = ("string", "int", "float", "bool", "keyword", "any", "map")

#: A field or parameter name: a letter or ``_`` first, then letters, digits, ``_`` or ``-``
#: (letters include non-ASCII ones, as in Python identifiers).
NAME_RE: Final = re.compile(r"[^\W\d][\w\-]*")


class Type(msgspec.Struct, frozen=True, kw_only=True, cache_hash=True, tag_field="kind"):
    """Base of the type nodes.

    Attributes:
        optional: ``True`` for ``:t?``: the value may be nil, and a field or parameter of
            this type may be omitted.
    """

    optional: bool = False


class Prim(Type, frozen=True, kw_only=True, cache_hash=True, tag="prim"):
    """A primitive type: ``:string :int :float :bool :keyword :any`` or ``:map`` (any map).

    Example:
        >>> Prim(name="int")
        Prim(optional=False, name='int')
    """

    name: PrimName


class ListOf(Type, frozen=True, kw_only=True, cache_hash=True, tag="list"):
    """A list whose every item has type ``item``: ``[:int]``."""

    item: AnyType


class Field(msgspec.Struct, frozen=True, kw_only=True, cache_hash=True):
    """One ``name :type`` entry of a map type.

    Names starting with ``_`` are *firewalled*: kept in data, hidden from LLM prompts.
    """

    name: str
    type: AnyType

    @property
    def optional(self) -> bool:
        """Whether the field may be omitted or nil (``:t?``)."""
        return self.type.optional

    @property
    def firewalled(self) -> bool:
        """Whether the name starts with ``_`` (hidden from prompts and parent agents)."""
        return self.name.startswith("_")


class Param(Field, frozen=True, kw_only=True, cache_hash=True):
    """One named input parameter of a :class:`Signature`: ``query :string``."""


class Fields(Type, frozen=True, kw_only=True, cache_hash=True, tag="map"):
    """A map with typed fields: ``{id :int, email :string?}``; ``{}`` is any map."""

    fields: tuple[Field, ...] = ()

    def get(self, name: str) -> Field | None:
        """Return the field called ``name``, or ``None``."""
        for field in self.fields:
            if field.name == name:
                return field
        return None


if TYPE_CHECKING:
    AnyType = Type
else:
    # At run time the annotations name the concrete nodes, so msgspec can decode them
    # (``msgspec.json.decode(data, type=Signature)``); type checkers see plain ``Type``.
    AnyType = Prim | ListOf | Fields

#: The ``:any`` type, used where nothing is known.
ANY: Final = Prim(name="any")


def contains_prim(node: Type, name: str) -> bool:
    """Return whether ``node`` mentions the primitive ``name`` anywhere inside it."""
    if isinstance(node, Prim):
        return node.name == name
    if isinstance(node, ListOf):
        return contains_prim(node.item, name)
    if isinstance(node, Fields):
        return any(contains_prim(f.type, name) for f in node.fields)
    return False
