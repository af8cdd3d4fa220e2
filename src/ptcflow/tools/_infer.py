"""Inferring a tool's signature from a Python function: hints, return types, docs."""

from __future__ import annotations

import inspect
import os
import types
import typing
import warnings
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals import Err, ErrorEnvelope, Ok
from ptcflow.signature import (
    Field,
    Fields,
    ListOf,
    Param,
    Prim,
    Signature,
    SignatureError,
    SignatureWarning,
    Type,
    schema_from_hint,
    type_from_hint,
)
from ptcflow.tools._introspect import ParamInfo

__all__ = (
    "check_matches",
    "output_hint",
    "schema_type",
    "schemas_from_hints",
    "signature_from_params",
    "signature_from_schema",
    "with_docs",
)

ANY: Final = Prim(name="any")
_EMPTY_HINT: Final = inspect.Parameter.empty
_SCHEMA_PRIMS: Final = {"string": "string", "integer": "int", "number": "float", "boolean": "bool"}
_MAX_SCHEMA_DEPTH: Final = 16


def with_docs(schema: dict[str, Any], docs: Mapping[str, str]) -> dict[str, Any]:
    props = schema.get("properties")
    if not docs or not isinstance(props, dict):
        return schema
    for key, text in docs.items():
        if key in props and text:
            props[key] = {**props[key], "description": text}
    return schema


_PTCFLOW_DIR: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside ptcflow."""
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PTCFLOW_DIR):
        frame = frame.f_back
        level += 1
    return level


def signature_from_params(
    tool_name: str, params: list[ParamInfo], returns: Any, ctx: str | None
) -> Signature:
    out: list[Param] = []
    for p in params:
        if p.kind in ("var_positional", "var_keyword") or p.name == ctx:
            continue
        if p.hint is _EMPTY_HINT:
            warnings.warn(
                f"parameter {p.name!r} of tool {tool_name!r} has no type hint; it becomes "
                f":any (annotate it, e.g. {p.name}: str, or pass signature=...)",
                SignatureWarning,
                stacklevel=_caller_stacklevel(),
            )
            node = ANY
        else:
            node = _convert(tool_name, p.name, p.hint)
        if p.has_default and not node.optional:
            node = msgspec.structs.replace(node, optional=True)
        out.append(Param(name=p.name, type=node))
    hint = output_hint(returns)
    output = ANY if hint is _EMPTY_HINT else _convert(tool_name, "return", hint)
    return Signature(params=tuple(out), output=output)


def schemas_from_hints(
    signature: Signature, params: list[ParamInfo], returns: Any
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The JSON Schemas of a signature inferred from hints, with what the hints say beyond
    the signature: formats (``date-time``, ``uuid``...), enum values, unions."""
    schema = signature.input_schema()
    props = schema["properties"]
    hints = {p.name: p.hint for p in params}
    for param in signature.params:
        hint = hints.get(param.name, _EMPTY_HINT)
        if hint is _EMPTY_HINT:
            continue
        sub = schema_from_hint(hint)
        if param.type.optional and sub and "null" not in str(sub.get("type")):
            sub = {"anyOf": [sub, {"type": "null"}]} if "type" not in sub else _null(sub)
        props[param.name] = sub
    hint = output_hint(returns)
    if hint is _EMPTY_HINT or signature.output == ANY:
        return schema, None
    return schema, schema_from_hint(hint)


def _null(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema["type"]
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def output_hint(hint: Any) -> Any:
    """What a return hint says about the payload: ``Ok[T]`` is ``T``, ``Err`` says nothing."""
    if hint is Err or hint is ErrorEnvelope:
        return Any
    if hint is Ok:
        return Any
    origin = typing.get_origin(hint)
    if origin is Ok:
        return typing.get_args(hint)[0]
    if origin is typing.Union or origin is types.UnionType:
        members = [m for m in typing.get_args(hint) if m is not Err and m is not ErrorEnvelope]
        if len(members) < len(typing.get_args(hint)):
            unwrapped = [output_hint(m) for m in members]
            return unwrapped[0] if len(unwrapped) == 1 else typing.Union[tuple(unwrapped)]  # noqa: UP007
    return hint


def _convert(tool_name: str, where: str, hint: Any) -> Any:
    try:
        return type_from_hint(hint)
    except SignatureError as exc:
        raise SignatureError(f"tool {tool_name!r}, {where}: {exc.reason}") from exc


def check_matches(
    tool_name: str, signature: Signature, params: list[ParamInfo], ctx: str | None
) -> None:
    accepts_extra = any(p.kind == "var_keyword" for p in params)
    names = {p.name for p in params if p.kind not in ("var_positional", "var_keyword")}
    for declared in signature.params:
        if declared.name not in names and not accepts_extra:
            raise UsageError(
                f"tool {tool_name!r}: the signature declares {declared.name!r} but the "
                f"function takes {sorted(names - {ctx})}; rename the parameter or fix the "
                "signature"
            )
    declared_names = {p.name for p in signature.params}
    for p in params:
        if p.kind in ("var_positional", "var_keyword") or p.name == ctx or p.has_default:
            continue
        if p.name not in declared_names:
            raise UsageError(
                f"tool {tool_name!r}: the function requires {p.name!r} but the signature "
                f"does not declare it; add '{p.name} :type' to the signature"
            )


def signature_from_schema(
    input_schema: Mapping[str, Any], output_schema: Mapping[str, Any] | None
) -> Signature | None:
    """Translate a JSON Schema pair into a signature, so the input can be validated.

    Only the parts the signature language has are kept (types, properties, required,
    nullability); everything else becomes ``:any``, which accepts all values. Returns
    ``None`` when the input schema does not list its properties.
    """
    props = input_schema.get("properties")
    if not isinstance(props, Mapping) or not all(isinstance(k, str) for k in props):
        return None
    required = input_schema.get("required")
    needed = set(required) if isinstance(required, list | tuple) else set()
    params = tuple(
        Param(name=name, type=_optional(_schema_node(sub, 0), name not in needed))
        for name, sub in props.items()
    )
    output = _schema_node(output_schema, 0) if output_schema is not None else ANY
    return Signature(params=params, output=output)


def _optional(node: Type, optional: bool) -> Type:
    return msgspec.structs.replace(node, optional=True) if optional and not node.optional else node


def schema_type(schema: Any) -> Type:
    """Translate one JSON Schema to the closest signature type (``:any`` when unknown)."""
    return _schema_node(schema, 0)


def _schema_node(schema: Any, depth: int) -> Type:
    if not isinstance(schema, Mapping) or depth > _MAX_SCHEMA_DEPTH:
        return ANY
    kind = schema.get("type")
    nullable = False
    if isinstance(kind, list):
        nullable = "null" in kind
        rest = [k for k in kind if k != "null"]
        kind = rest[0] if len(rest) == 1 else None
    node: Type = ANY
    if kind in _SCHEMA_PRIMS:
        node = Prim(name=_SCHEMA_PRIMS[kind])  # type: ignore[arg-type]
    elif kind == "array":
        node = ListOf(item=_schema_node(schema.get("items"), depth + 1))
    elif kind == "object":
        props = schema.get("properties")
        if isinstance(props, Mapping) and props and all(isinstance(k, str) for k in props):
            required = schema.get("required")
            needed = set(required) if isinstance(required, list | tuple) else set()
            node = Fields(
                fields=tuple(
                    Field(name=k, type=_optional(_schema_node(v, depth + 1), k not in needed))
                    for k, v in props.items()
                )
            )
        else:
            node = Prim(name="map")
    return _optional(node, nullable and node != ANY)
