"""Hypothesis strategies for signature types, signatures and values."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import strategies as st

from ptcflow.signature import Field, Fields, ListOf, Param, Prim, Signature, Type

PRIMS = ("string", "int", "float", "bool", "keyword", "any", "map")

names = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_\-]{0,8}\Z")


def _optional(node: Type) -> st.SearchStrategy[Type]:
    return st.booleans().map(lambda flag: msgspec.structs.replace(node, optional=flag))


prims: st.SearchStrategy[Type] = st.sampled_from(PRIMS).map(lambda n: Prim(name=n))  # type: ignore[arg-type]


def _extend(children: st.SearchStrategy[Type]) -> st.SearchStrategy[Type]:
    lists = children.map(lambda item: ListOf(item=item))
    maps = st.lists(st.tuples(names, children), max_size=4, unique_by=lambda pair: pair[0]).map(
        lambda pairs: Fields(fields=tuple(Field(name=n, type=t) for n, t in pairs))
    )
    return st.one_of(lists, maps).flatmap(_optional)


types: st.SearchStrategy[Type] = st.recursive(prims.flatmap(_optional), _extend, max_leaves=12)

signatures: st.SearchStrategy[Signature] = st.builds(
    lambda params, output, name: Signature(
        params=tuple(Param(name=n, type=t) for n, t in params), output=output, name=name
    ),
    st.lists(st.tuples(names, types), max_size=4, unique_by=lambda pair: pair[0]),
    types,
    st.none() | names,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.sampled_from(["42", "-3", "3.5", "true", "false", "x"]),
)


def json_values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-like values whose map keys come from ``keys``."""
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=4)
        ),
        max_leaves=15,
    )


def valid_values(node: Type) -> st.SearchStrategy[Any]:
    """Values that conform to ``node`` (outputs, no coercion needed)."""
    base: st.SearchStrategy[Any]
    if isinstance(node, Prim):
        base = {
            "string": st.text(max_size=5),
            "int": st.integers(),
            "float": st.floats(allow_nan=False) | st.integers(-100, 100),
            "bool": st.booleans(),
            "keyword": st.text(min_size=1, max_size=5),
            "any": json_values(st.text(max_size=3)),
            "map": st.dictionaries(st.text(max_size=3), scalars, max_size=3),
        }[node.name]
    elif isinstance(node, ListOf):
        base = st.lists(valid_values(node.item), max_size=3)
    else:
        assert isinstance(node, Fields)
        required = {f.name: valid_values(f.type) for f in node.fields if not f.optional}
        optional = {f.name: valid_values(f.type) for f in node.fields if f.optional}
        base = st.fixed_dictionaries(required, optional=optional)
    if node.optional:
        return st.none() | base
    return base
