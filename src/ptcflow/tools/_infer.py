"""Inferring a tool's signature from a Python function: hints, return types, docs."""

from __future__ import annotations

import inspect
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals import Err, ErrorEnvelope, Ok
from ptcflow.signature import (
    Param,
    Prim,
    Signature,
    SignatureError,
    SignatureWarning,
    type_from_hint,
)
from ptcflow.tools._introspect import ParamInfo, return_hint

__all__ = ("check_matches", "signature_from_params", "with_docs")

ANY: Final = Prim(name="any")
_EMPTY_HINT: Final = inspect.Parameter.empty


def with_docs(schema: dict[str, Any], docs: Mapping[str, str]) -> dict[str, Any]:
    props = schema.get("properties")
    if not docs or not isinstance(props, dict):
        return schema
    for key, text in docs.items():
        if key in props and text:
            props[key] = {**props[key], "description": text}
    return schema


def signature_from_params(
    tool_name: str, fn: Callable[..., Any], params: list[ParamInfo], ctx: str | None
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
                stacklevel=4,
            )
            node = ANY
        else:
            node = _convert(tool_name, p.name, p.hint)
        if p.has_default and not node.optional:
            node = msgspec.structs.replace(node, optional=True)
        out.append(Param(name=p.name, type=node))
    hint = _output_hint(return_hint(fn))
    output = ANY if hint is _EMPTY_HINT else _convert(tool_name, "return", hint)
    return Signature(params=tuple(out), output=output)


def _output_hint(hint: Any) -> Any:
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
            unwrapped = [_output_hint(m) for m in members]
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
