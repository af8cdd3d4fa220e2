"""Signatures from Python callables and types from Python type hints."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import types
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence, Set as AbstractSet
from typing import Any, Final

import msgspec

from ptcflow.signature._ast import ANY, NAME_RE, Field, Fields, ListOf, Param, Prim, Type
from ptcflow.signature._errors import SignatureError, SignatureWarning
from ptcflow.signature._pytypes import STRING_FORMATS, is_pydantic_model
from ptcflow.signature._schema import type_schema
from ptcflow.signature._signature import Signature

__all__ = ("schema_from_hint", "signature_from_callable", "type_from_hint")

_PRIMS: Final[dict[Any, str]] = {str: "string", int: "int", float: "float", bool: "bool"}
_MAPS: Final = (dict, Mapping, typing.MutableMapping)
_SEQS: Final = (
    list,
    Sequence,
    typing.MutableSequence,
    set,
    frozenset,
    AbstractSet,
    typing.MutableSet,
)
_ANYS: Final = (Any, object)


def type_from_hint(hint: Any) -> Type:
    """Translate a Python type hint to a signature type.

    ``str`` :string, ``int`` :int, ``float`` :float, ``bool`` :bool, ``Enum``/``Literal``
    :keyword (a Literal of only ints or bools gives :int / :bool), ``dict``/``Mapping``
    :map, ``list[T]``/``tuple[T, ...]``/``Sequence[T]``/``set[T]`` ``[:t]``,
    ``TypedDict``/``msgspec.Struct``/dataclass/pydantic model ``{field :t}``, ``X | None``
    optional, other unions :any, ``datetime``/``date``/``time``/``UUID``/``Decimal``/
    ``Path``/``bytes`` :string (their JSON form, see :func:`schema_from_hint`),
    ``Any``/``object`` :any, ``Annotated[X, ...]`` as ``X``, ``NewType`` as its base.

    Args:
        hint: the hint (an evaluated type, not a string).

    Returns:
        The signature type.

    Raises:
        SignatureError: the hint has no signature equivalent (the message names it).

    Example:
        >>> from ptcflow.signature import type_from_hint
        >>> from ptcflow.signature._render import render_type
        >>> render_type(type_from_hint(list[dict[str, int]] | None))
        '[:map]?'
    """
    return _convert(hint, ())


def _unsupported(hint: Any, why: str = "") -> SignatureError:
    text = _hint_name(hint)
    if not why and (callable(hint) and not isinstance(hint, type)):
        why = "a function, not a type"
    elif not why and isinstance(hint, type):
        why = "it has no JSON form: use plain data, a dataclass, a msgspec.Struct, a TypedDict"
        why += " or a pydantic model"
    elif not why and not isinstance(hint, type):
        why = f"a {type(hint).__name__} object, not a type"
    extra = f" ({why})" if why else ""
    return SignatureError(
        f"unsupported type hint {text}{extra}: give the tool an explicit signature string, "
        f"e.g. '(x :string) -> :any'"
    )


def _hint_name(hint: Any) -> str:
    if isinstance(hint, type):
        return (
            hint.__qualname__
            if hint.__module__ == "builtins"
            else f"{hint.__module__}.{hint.__qualname__}"
        )
    return repr(hint)


def _convert(hint: Any, seen: tuple[Any, ...]) -> Type:
    if hint in _ANYS or hint is inspect.Parameter.empty:
        return ANY
    if hint is None or hint is type(None):
        return ANY
    if isinstance(hint, str | typing.ForwardRef):
        raise _unsupported(hint, "a string annotation that could not be resolved")
    if isinstance(hint, typing.NewType):
        return _convert(hint.__supertype__, seen)
    if isinstance(hint, typing.TypeVar):
        if hint.__bound__ is not None:
            return _convert(hint.__bound__, seen)
        return ANY
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _convert(args[0], seen)
    if origin is typing.Union or origin is types.UnionType:
        return _union(hint, args, seen)
    if origin is typing.Literal:
        return _literal(args)
    if isinstance(hint, type) and hint in _PRIMS:
        return Prim(name=_PRIMS[hint])  # type: ignore[arg-type]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum(hint)
    if isinstance(hint, type) and _string_form(hint) is not None:
        return Prim(name="string")
    if hint in _MAPS or origin in _MAPS:
        return Prim(name="map")
    if hint in _SEQS or hint is tuple:
        return ListOf(item=_convert(args[0], seen) if args else ANY)
    if origin in _SEQS:
        return ListOf(item=_convert(args[0], seen) if args else ANY)
    if origin is tuple:
        return _tuple(hint, args, seen)
    if isinstance(hint, type):
        if hint in seen:
            raise _unsupported(hint, "it refers to itself; signatures cannot be recursive")
        if typing.is_typeddict(hint):
            return _typeddict(hint, (*seen, hint))
        if issubclass(hint, msgspec.Struct):
            return _struct(hint, (*seen, hint))
        if dataclasses.is_dataclass(hint):
            return _dataclass(hint, (*seen, hint))
        if is_pydantic_model(hint):
            return _pydantic(hint, (*seen, hint))
        if issubclass(hint, str):
            return Prim(name="string")
        if issubclass(hint, bool):
            return Prim(name="bool")
        if issubclass(hint, int):
            return Prim(name="int")
        if issubclass(hint, float):
            return Prim(name="float")
    raise _unsupported(hint)


def _union(hint: Any, args: tuple[Any, ...], seen: tuple[Any, ...]) -> Type:
    members = [a for a in args if a is not type(None)]
    optional = len(members) < len(args)
    if len(members) == 1:
        inner = _convert(members[0], seen)
    elif set(members) == {int, float}:
        inner = Prim(name="float")
    elif any(m in _ANYS for m in members):
        inner = ANY
    else:
        for member in members:  # each member must have a JSON form
            _convert(member, seen)
        inner = ANY  # the signature has no unions; the Python type checks the value
    return msgspec.structs.replace(inner, optional=True) if optional else inner


def _literal(args: tuple[Any, ...]) -> Type:
    values = [a for a in args if a is not None]
    optional = len(values) < len(args)
    if values and all(isinstance(v, bool) for v in values):
        name = "bool"
    elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        name = "int"
    else:
        name = "keyword"
    return Prim(name=name, optional=optional)  # type: ignore[arg-type]


def _enum(hint: type[enum.Enum]) -> Prim:
    values = [m.value for m in hint]
    if values and all(isinstance(v, bool) for v in values):
        return Prim(name="bool")
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return Prim(name="int")
    if all(isinstance(v, str) for v in values):
        return Prim(name="keyword")
    return ANY


def _string_form(hint: type) -> dict[str, Any] | None:
    """The JSON Schema of a type sent as a string (a date, a UUID, ...), else ``None``."""
    for base in hint.__mro__:
        found = STRING_FORMATS.get(base)
        if found is not None:
            return found
    return None


def _pydantic(hint: type, seen: tuple[Any, ...]) -> Fields:
    fields = []
    model_fields: Mapping[str, Any] = getattr(hint, "model_fields", {})
    for key, info in model_fields.items():
        alias = getattr(info, "alias", None)
        name = alias if isinstance(alias, str) and alias else key
        required = bool(info.is_required())
        fields.append(_field(hint, name, info.annotation, not required, seen))
    return Fields(fields=tuple(fields))


def _tuple(hint: Any, args: tuple[Any, ...], seen: tuple[Any, ...]) -> Type:
    if not args or args == ((),):
        return ListOf(item=ANY)
    if len(args) == 2 and args[1] is Ellipsis:
        return ListOf(item=_convert(args[0], seen))
    items = {_convert(a, seen) for a in args}
    return ListOf(item=items.pop() if len(items) == 1 else ANY)


def _field(owner: Any, name: str, hint: Any, optional: bool, seen: tuple[Any, ...]) -> Field:
    if NAME_RE.fullmatch(name) is None:
        raise _unsupported(owner, f"field name {name!r} cannot be written in a signature")
    node = _convert(hint, seen)
    if optional and not node.optional:
        node = msgspec.structs.replace(node, optional=True)
    return Field(name=name, type=node)


def _resolve(owner: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception as exc:  # NameError, TypeError from unresolvable annotations
        raise _unsupported(owner, f"its annotations cannot be resolved: {exc}") from exc


def _typeddict(hint: type, seen: tuple[Any, ...]) -> Fields:
    hints = _resolve(hint)
    optional_keys: frozenset[str] = getattr(hint, "__optional_keys__", frozenset())
    fields = []
    for key, field_hint in hints.items():
        # Checked on the hint too: with string annotations __optional_keys__ misses them.
        origin = typing.get_origin(field_hint)
        if origin is typing.NotRequired:
            optional = True
        elif origin is typing.Required:
            optional = False
        else:
            optional = key in optional_keys
        fields.append(_field(hint, key, _strip_required(field_hint), optional, seen))
    return Fields(fields=tuple(fields))


def _strip_required(hint: Any) -> Any:
    while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
        hint = typing.get_args(hint)[0]
    return hint


def _struct(hint: type[msgspec.Struct], seen: tuple[Any, ...]) -> Fields:
    hints = _resolve(hint)
    fields = []
    for f in msgspec.structs.fields(hint):
        has_default = (
            f.default is not msgspec.NODEFAULT or f.default_factory is not msgspec.NODEFAULT
        )
        fields.append(_field(hint, f.encode_name, hints.get(f.name, Any), has_default, seen))
    return Fields(fields=tuple(fields))


def _dataclass(hint: type, seen: tuple[Any, ...]) -> Fields:
    hints = _resolve(hint)
    fields = []
    for f in dataclasses.fields(hint):
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        fields.append(_field(hint, f.name, hints.get(f.name, Any), has_default, seen))
    return Fields(fields=tuple(fields))


def signature_from_callable(fn: Callable[..., Any]) -> Signature:
    """Build a signature from a function's type hints.

    Parameters become ``name :t`` (optional when they have a default or an ``X | None``
    hint); the return hint becomes the output (``:any`` when absent). ``*args`` and
    ``**kwargs`` are skipped. The signature is named after the function when its name is
    a valid signature name.

    Args:
        fn: a function, method, or callable object.

    Returns:
        The inferred signature.

    Raises:
        SignatureError: a hint has no signature equivalent, or ``fn`` has no signature.

    Warns:
        SignatureWarning: a parameter has no type hint (it becomes ``:any``).

    Example:
        >>> def search(query: str, limit: int = 10) -> list[str]: ...
        >>> signature_from_callable(search).render()
        'search(query :string, limit :int?) -> [:string]'
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise SignatureError(f"cannot read the signature of {fn!r}: {exc}") from exc
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isroutine(target) or inspect.isclass(target)):
        target = type(target).__call__
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:  # NameError for unresolvable forward references
        raise SignatureError(
            f"cannot resolve the type hints of {_fn_name(fn)}: {exc}; define the names "
            "used in its annotations or give an explicit signature string"
        ) from exc
    params: list[Param] = []
    for p in sig.parameters.values():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if NAME_RE.fullmatch(p.name) is None:  # pragma: no cover - identifiers always match
            raise SignatureError(f"parameter name {p.name!r} cannot be written in a signature")
        if p.name in hints:
            node = _convert(hints[p.name], ())
        else:
            warnings.warn(
                f"parameter {p.name!r} of {_fn_name(fn)} has no type hint; it becomes :any "
                f"(annotate it, e.g. {p.name}: str, to have it checked)",
                SignatureWarning,
                stacklevel=2,
            )
            node = ANY
        if p.default is not inspect.Parameter.empty and not node.optional:
            node = msgspec.structs.replace(node, optional=True)
        params.append(Param(name=p.name, type=node))
    output = _convert(hints["return"], ()) if "return" in hints else ANY
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        name = None
    return Signature(params=tuple(params), output=output, name=name)


def _fn_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def schema_from_hint(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type hint, saying what a model must send.

    Like the schema of :func:`type_from_hint`'s type, with what the signature language
    leaves out: ``format`` (``date-time``, ``date``, ``time``, ``uuid``, ``decimal``,
    ``path``), ``contentEncoding: base64`` for ``bytes``, ``enum`` values of an ``Enum`` or
    ``Literal``, and ``anyOf`` for unions.

    Raises:
        SignatureError: the hint has no JSON form (as :func:`type_from_hint`).

    Example:
        >>> import datetime
        >>> schema_from_hint(list[datetime.date])
        {'type': 'array', 'items': {'type': 'string', 'format': 'date'}}
    """
    return _schema(hint, ())


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    if not schema:
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _schema(hint: Any, seen: tuple[Any, ...]) -> dict[str, Any]:
    if hint in _ANYS or hint is inspect.Parameter.empty or hint is None or hint is type(None):
        return {}
    if isinstance(hint, typing.NewType):
        return _schema(hint.__supertype__, seen)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _schema(args[0], seen)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            inner = _schema(members[0], seen)
        elif set(members) == {int, float}:
            inner = {"type": "number"}
        elif any(m in _ANYS for m in members):
            inner = {}
        else:
            inner = {"anyOf": [_schema(m, seen) for m in members]}
        return _nullable(inner) if len(members) < len(args) else inner
    if origin is typing.Literal:
        values = [a.value if isinstance(a, enum.Enum) else a for a in args if a is not None]
        out = {**type_schema(_literal(args)), "enum": values}
        out.pop("description", None)
        return _nullable(out) if len(values) < len(args) else out
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        out = {**type_schema(_enum(hint)), "enum": [m.value for m in hint]}
        out.pop("description", None)
        return out
    if isinstance(hint, type) and hint not in _PRIMS:
        found = _string_form(hint)
        if found is not None:
            return dict(found)
    if origin in _SEQS:
        return {"type": "array", "items": _schema(args[0], seen) if args else {}}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _schema(args[0], seen)}
    if isinstance(hint, type) and hint not in seen and _is_record(hint):
        return _record_schema(hint, (*seen, hint))
    return type_schema(_convert(hint, seen))


def _is_record(hint: type) -> bool:
    return (
        typing.is_typeddict(hint)
        or issubclass(hint, msgspec.Struct)
        or dataclasses.is_dataclass(hint)
        or is_pydantic_model(hint)
    )


def _record_schema(hint: type, seen: tuple[Any, ...]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    node = _convert(hint, seen[:-1])  # checks names and recursion, same rules
    assert isinstance(node, Fields)
    for field, (name, field_hint, description) in zip(
        node.fields, _record_fields(hint), strict=True
    ):
        schema = _schema(field_hint, seen)
        if field.type.optional and typing.get_origin(field_hint) not in (
            typing.Union,
            types.UnionType,
        ):
            schema = _nullable(schema) if _admits_none(field_hint) else schema
        if description:
            schema = {**schema, "description": description}
        properties[name] = schema
        if not field.type.optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def _admits_none(hint: Any) -> bool:
    return hint is None or type(None) in typing.get_args(hint)


def _record_fields(hint: type) -> list[tuple[str, Any, str]]:
    """``(json name, hint, description)`` of each field, in :func:`_convert`'s order."""
    if is_pydantic_model(hint):
        out = []
        for key, info in getattr(hint, "model_fields", {}).items():
            alias = getattr(info, "alias", None)
            name = alias if isinstance(alias, str) and alias else key
            out.append((name, info.annotation, getattr(info, "description", None) or ""))
        return out
    hints = _resolve(hint)
    if typing.is_typeddict(hint):
        return [(k, _strip_required(h), "") for k, h in hints.items()]
    if issubclass(hint, msgspec.Struct):
        return [(f.encode_name, hints.get(f.name, Any), "") for f in msgspec.structs.fields(hint)]
    record: Any = hint  # a dataclass (checked by _is_record)
    return [(f.name, hints.get(f.name, Any), "") for f in dataclasses.fields(record)]
