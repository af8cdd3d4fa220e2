"""Python types at the edge: building typed values from plain data and back.

A tool's parameter or an agent's output may be typed with a dataclass, a
``msgspec.Struct``, a ``TypedDict``, a pydantic v2 model, an ``Enum``, a ``Literal``,
``datetime`` / ``date`` / ``time``, ``UUID``, ``Decimal``, ``Path`` or ``bytes`` (and
lists, optionals, unions and nestings of them). Models and programs only ever see plain
JSON data; a :class:`Converter`, built once per type, turns that data into the typed value
(``msgspec.convert``, or the model's own ``model_validate`` for pydantic) and a typed value
back into plain data (``msgspec.to_builtins``, or ``model_dump(mode="json")``).

pydantic is never imported here: a class is a pydantic model when ``pydantic.main`` is
already imported (``sys.modules``) and the class derives from its ``BaseModel``.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import importlib
import pathlib
import re
import sys
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from ptcflow.errors import UsageError

__all__ = (
    "STRING_FORMATS",
    "ConversionError",
    "Converter",
    "format_notes",
    "import_type",
    "is_pydantic_model",
    "is_record",
    "needs_conversion",
    "to_plain",
    "type_path",
)

#: The Python types sent as JSON strings, with the JSON Schema format that says how.
STRING_FORMATS: Final[dict[type, dict[str, Any]]] = {
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    decimal.Decimal: {"type": "string", "format": "decimal"},
    pathlib.Path: {"type": "string", "format": "path"},
    pathlib.PurePath: {"type": "string", "format": "path"},
    pathlib.PurePosixPath: {"type": "string", "format": "path"},
    bytes: {"type": "string", "contentEncoding": "base64"},
}

_FORMAT_HELP: Final[dict[str, str]] = {
    "date-time": 'an ISO 8601 date-time string, e.g. "2026-05-01T09:30:00Z"',
    "date": 'an ISO 8601 date string, e.g. "2026-05-01"',
    "time": 'an ISO 8601 time string, e.g. "09:30:00"',
    "uuid": 'a UUID string, e.g. "6f1c1b9e-2c4e-4f6a-9a53-6d1e8f0b2a77"',
    "decimal": 'a decimal number written as a string, e.g. "12.50"',
    "path": 'a file path string, e.g. "reports/q1.csv"',
}

_PLAIN: Final = frozenset({str, int, float, bool, type(None), dict, list, tuple, set, frozenset})


def is_pydantic_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic v2 model class (pydantic is not imported to tell)."""
    # pydantic.main, not pydantic: the package loads BaseModel lazily, and asking it for
    # BaseModel would import it (in a Temporal workflow sandbox, an import it refuses).
    # No model class exists before pydantic.main is loaded.
    main = sys.modules.get("pydantic.main")
    if main is None or not isinstance(tp, type):
        return False
    base = main.__dict__.get("BaseModel")
    return base is not None and issubclass(tp, base) and hasattr(tp, "model_validate")


def needs_conversion(hint: Any) -> bool:
    """Whether a value of ``hint`` differs from its plain JSON form (a class, an enum, a
    date...): then a :class:`Converter` builds it; plain hints pass values as they are."""
    return _needs(hint, 0)


def _needs(hint: Any, depth: int) -> bool:
    if depth > 32 or hint is Any or hint is object or hint is None:
        return False
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _needs(typing.get_args(hint)[0], depth + 1)
    if origin is typing.Literal:
        return False
    if isinstance(hint, typing.NewType):
        return _needs(hint.__supertype__, depth + 1)
    if origin is not None:
        if origin in (tuple, set, frozenset):
            return True  # JSON gives lists
        return any(_needs(a, depth + 1) for a in typing.get_args(hint) if a is not Ellipsis)
    if not isinstance(hint, type):
        return False
    if hint in (tuple, set, frozenset):
        return True
    if hint in _PLAIN:
        return False
    if typing.is_typeddict(hint):
        hints = _hints_of(hint)
        return any(_needs(h, depth + 1) for h in hints.values())
    # Only the types ptcflow knows how to build; any other class (given an explicit
    # signature) reaches the function as the model sent it, as before.
    return (
        dataclasses.is_dataclass(hint)
        or issubclass(hint, msgspec.Struct | enum.Enum)
        or is_pydantic_model(hint)
        or any(base in STRING_FORMATS for base in hint.__mro__)
    )


def _hints_of(owner: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(owner)
    except Exception:
        return {}


class ConversionError(ValueError):
    """Plain data that does not fit a Python type.

    Attributes:
        path: where, as a signature path (``to.zip``, ``items[2].when``; ``""`` for the
            value itself).
        problem: what is wrong (``expected string, got int``).
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


_MSGSPEC_AT: Final = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_MSGSPEC_NAMES: Final = {
    "`str`": "string",
    "`int`": "int",
    "`float`": "float",
    "`bool`": "bool",
    "`object`": "map",
    "`array`": "list",
    "`null`": "nil",
}
_NESTED: Final = "\x00"
_MSGSPEC_PROBLEMS: Final = {
    "Invalid RFC3339 encoded datetime": "expected " + _FORMAT_HELP["date-time"],
    "Invalid RFC3339 encoded date": "expected " + _FORMAT_HELP["date"],
    "Invalid RFC3339 encoded time": "expected " + _FORMAT_HELP["time"],
    "Invalid UUID": "expected " + _FORMAT_HELP["uuid"],
    "Invalid decimal string": "expected " + _FORMAT_HELP["decimal"],
    "Invalid base64 encoded string": "expected bytes as a base64 string",
}


def _from_msgspec(exc: Exception, prefix: str) -> ConversionError:
    text = str(exc)
    match = _MSGSPEC_AT.match(text)
    problem = match.group("problem") if match else text
    path = (match.group("path") or "") if match else ""
    path = path[1:] if path.startswith(".") else path
    if _NESTED in problem:  # a pydantic error inside: "loc\x00problem"
        inner_path, problem = problem.split(_NESTED, 1)
        path = _join(path, inner_path)
    problem = _MSGSPEC_PROBLEMS.get(problem, problem)
    for raw, name in _MSGSPEC_NAMES.items():
        problem = problem.replace(raw, name)
    problem = problem.replace("`", "")
    if problem[:1].isupper() and not problem[1:2].isupper():
        problem = problem[0].lower() + problem[1:]
    return ConversionError(_join(prefix, path), problem)


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def _pydantic_problem(exc: Exception) -> tuple[str, str]:
    errors = getattr(exc, "errors", None)
    try:
        items = errors(include_url=False) if callable(errors) else []
    except Exception:
        items = []
    if not items:
        return "", str(exc)
    first = items[0]
    path = ""
    for part in first.get("loc", ()):
        path = f"{path}[{part}]" if isinstance(part, int) else _join(path, str(part))
    message = str(first.get("msg", "invalid value"))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if len(items) > 1:
        message += f" (and {len(items) - 1} more problem(s))"
    return path, message[0].lower() + message[1:] if message else message


def _dec_hook(tp: Any, value: Any) -> Any:
    """msgspec's hook for the types it does not know: pydantic models, paths, sets of paths."""
    if is_pydantic_model(tp):
        try:
            return tp.model_validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            path, problem = _pydantic_problem(exc)
            raise ValueError(f"{path}{_NESTED}{problem}") from None
    if isinstance(tp, type) and issubclass(tp, pathlib.PurePath):
        if isinstance(value, str):
            return tp(value)
        raise TypeError(f"expected a path string, got {type(value).__name__}")
    raise TypeError(f"cannot build a {getattr(tp, '__qualname__', tp)!r} from plain data")


def _enc_hook(value: Any) -> Any:
    """msgspec's hook when dumping: pydantic models, paths, and keyword-like objects."""
    dump = getattr(value, "model_dump", None)
    if dump is not None and is_pydantic_model(type(value)):
        return dump(mode="json")
    if isinstance(value, pathlib.PurePath):
        return str(value)
    name = getattr(value, "name", None)
    if type(value).__name__ == "Keyword" and isinstance(name, str):
        return name
    raise TypeError(
        f"a {type(value).__qualname__} is not plain data: use dicts, lists, strings, "
        "numbers, dataclasses, msgspec Structs or pydantic models"
    )


def to_plain(value: Any, *, str_keys: bool = False) -> Any:
    """Return ``value`` as plain JSON data: dataclasses, Structs, TypedDicts and pydantic
    models become dicts, enums their values, dates and UUIDs ISO strings, ``bytes`` base64.

    Raises:
        TypeError: a value with no plain form (the message names its type).

    Example:
        >>> import dataclasses, datetime
        >>> @dataclasses.dataclass
        ... class Meeting:
        ...     at: datetime.date
        >>> to_plain([Meeting(datetime.date(2026, 5, 1))])
        [{'at': '2026-05-01'}]
    """
    return msgspec.to_builtins(value, enc_hook=_enc_hook, str_keys=str_keys)


def is_record(value: Any) -> bool:
    """Whether ``value`` is an instance of a dataclass, a ``msgspec.Struct`` or a pydantic
    model (a typed record whose plain form is a map)."""
    if isinstance(value, type):
        return False
    return (
        dataclasses.is_dataclass(value)
        or isinstance(value, msgspec.Struct)
        or is_pydantic_model(type(value))
    )


class Converter:
    """Builds values of one Python type from plain data, and dumps them back. Decided once.

    Args:
        hint: the type (a class, ``list[Invoice]``, ``Invoice | None``, ...).

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass
        ... class Point:
        ...     x: int
        ...     y: int
        >>> conv = Converter(Point)
        >>> conv.load({"x": 1, "y": 2})
        Point(x=1, y=2)
        >>> conv.dump(Point(1, 2))
        {'x': 1, 'y': 2}
        >>> conv.load({"x": "a", "y": 2})
        Traceback (most recent call last):
        ...
        ptcflow.signature._pytypes.ConversionError: x: expected int, got string
    """

    __slots__ = ("_load", "dump", "hint", "validated")

    def __init__(self, hint: Any) -> None:
        self.hint = hint
        self._load: Callable[[Any], Any]
        self.dump: Callable[[Any], Any]
        #: An instance of exactly ``hint`` was validated when it was built (pydantic).
        self.validated = is_pydantic_model(hint)
        if is_pydantic_model(hint):
            validate = hint.model_validate
            self._load = validate
            self.dump = _pydantic_dump
        elif _msgspec_refuses(hint) and union_args(hint):
            self._load = _union_load([Converter(m) for m in union_args(hint) or ()])
            self.dump = to_plain
        else:
            reason = _msgspec_refuses(hint)
            if reason:
                raise UsageError(
                    f"cannot build {_name(hint)} from plain data: {reason}. Tell the records "
                    "of a union apart with msgspec Structs (class A(msgspec.Struct, "
                    "tag=True)), or make the union the whole parameter or return type"
                )
            self._load = _msgspec_load(hint)
            self.dump = to_plain

    def load(self, value: Any, where: str = "") -> Any:
        """Build the typed value from plain ``value``.

        Args:
            value: the plain data.
            where: the path of ``value`` (a parameter name), the prefix of error paths.

        Raises:
            ConversionError: the data does not fit (the path and the problem).
        """
        try:
            return self._load(value)
        except msgspec.ValidationError as exc:
            raise _from_msgspec(exc, where) from None
        except ValueError as exc:  # pydantic's ValidationError, a validator that raised
            if not is_pydantic_model(self.hint):
                raise ConversionError(where, str(exc)) from None
            path, problem = _pydantic_problem(exc)
            raise ConversionError(_join(where, path), problem) from None
        except TypeError as exc:
            raise ConversionError(where, str(exc)) from None

    def __repr__(self) -> str:
        return f"Converter({getattr(self.hint, '__qualname__', self.hint)!r})"


def _name(hint: Any) -> str:
    return str(getattr(hint, "__qualname__", hint))


def _msgspec_refuses(hint: Any) -> str:
    """Why msgspec cannot convert to ``hint`` (``""`` when it can)."""
    try:
        msgspec.json.Decoder(hint, dec_hook=_dec_hook)
    except TypeError as exc:
        return str(exc).split(" - type ", 1)[0]
    return ""


def _union_load(members: list[Converter]) -> Callable[[Any], Any]:
    """A union msgspec cannot tell apart (two dataclasses, a pydantic model and another
    record): the first member the value fits, in the order written."""
    none_ok = any(m.hint is type(None) for m in members)

    def load(value: Any) -> Any:
        if value is None and none_ok:
            return None
        problems = []
        for member in members:
            if member.hint is type(None):
                continue
            try:
                return member.load(value)
            except ConversionError as exc:
                problems.append(f"as {_name(member.hint)}: {exc}")
        raise ValueError("fits no member of the union (" + "; ".join(problems) + ")")

    return load


def _pydantic_dump(value: Any) -> Any:
    if is_pydantic_model(type(value)):
        return value.model_dump(mode="json")
    return to_plain(value)  # a dict given for the model: leave it plain


def _msgspec_load(hint: Any) -> Callable[[Any], Any]:
    convert = msgspec.convert

    def load(value: Any) -> Any:
        return convert(value, hint, strict=False, dec_hook=_dec_hook)

    return load


# -- types by name, for runs that cross a process (journals, Temporal workers) ----------


_KNOWN: dict[str, Any] = {}
"""The types named in this process: found again without an import (a class defined in a
script, a notebook or a function); another process imports them by name."""


def type_path(tp: Any) -> str:
    """The ``module:qualname`` that :func:`import_type` finds ``tp`` by (in this process
    always; in another one when the class is importable by that name).

    Raises:
        UsageError: ``tp`` is not a class.

    Example:
        >>> import decimal
        >>> type_path(decimal.Decimal)
        'decimal:Decimal'
    """
    module = getattr(tp, "__module__", None)
    qualname = getattr(tp, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise UsageError(f"output_type must be a class, got {tp!r}")
    path = f"{module}:{qualname}"
    _KNOWN[path] = tp
    return path


def import_type(path: str) -> Any:
    """The class :func:`type_path` named.

    Raises:
        UsageError: the module cannot be imported or has no such class (on a Temporal
            worker: the package defining it is not installed there).
    """
    known = _KNOWN.get(path)
    if known is not None:
        return known
    module_name, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(
            f"output_type {path!r} cannot be imported in this process ({exc}): define the "
            "class at module level in a module every process of the run can import (on "
            "Temporal, the workers and the client), or drop output_type and read the plain "
            "step.value"
        ) from None
    return obj


def format_notes(schema: Mapping[str, Any] | None, prefix: str = "") -> list[str]:
    """One line per field of ``schema`` whose JSON form needs explaining: a date, a UUID,
    a decimal, a path, bytes, or an enum's allowed values (``when: an ISO 8601 ...``).

    Example:
        >>> format_notes({"type": "object", "properties": {"at": {"type": "string",
        ...     "format": "date"}}})
        ['at: an ISO 8601 date string, e.g. "2026-05-01"']
    """
    notes: list[str] = []
    _notes(schema, prefix, notes, 0)
    return notes


def _notes(schema: Any, path: str, out: list[str], depth: int) -> None:
    if not isinstance(schema, Mapping) or depth > 16 or len(out) >= 20:
        return
    label = path or "value"
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMAT_HELP:
        out.append(f"{label}: {_FORMAT_HELP[fmt]}")
    elif schema.get("contentEncoding") == "base64":
        out.append(f"{label}: bytes as a base64 string")
    values = schema.get("enum")
    if isinstance(values, list) and values:
        shown = ", ".join(msgspec.json.encode(v).decode() for v in values[:12])
        out.append(f"{label}: one of {shown}")
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list):
            for member in members:
                _notes(member, path, out, depth + 1)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            _notes(sub, _join(path, str(name)), out, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        _notes(items, f"{path}[]" if path else "[]", out, depth + 1)


def union_args(hint: Any) -> tuple[Any, ...] | None:
    """The members of a union hint (``X | Y``, ``Optional[X]``), or ``None``."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(hint)
    return None
