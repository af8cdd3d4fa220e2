"""Validation and coercion, compiled once per type into specialised closures.

Each type is compiled twice over (inputs coerce, outputs do not; strict rejects extra
fields) and cached. A compiled validator has two paths:

* a *fast path*: the type is translated once into an equivalent msgspec type and valid data
  is accepted by ``msgspec.convert`` in C. It only ever accepts values the slow path would
  accept unchanged, so it is an optimisation, never a different answer;
* a *slow path*: Python closures that collect every error with its path, coerce inputs
  (``"42"`` to ``42`` with a warning) and normalise keyword keys to field names. It runs
  when the fast path declines, or always when a fast answer could differ (inputs with
  ``:float``, where ints must become floats).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signature._ast import Fields, ListOf, Prim, Type, contains_prim
from ptcflow.signature._fast import acceptor, to_msgspec
from ptcflow.signature._render import render_type
from ptcflow.signature._values import (
    MISSING,
    PathNode,
    describe,
    format_path,
    is_keyword,
    key_name,
)

__all__ = ("MODES", "Compiled", "Mode", "ValidationResult", "check_mode", "compile_type")

Mode = Literal["enabled", "warn_only", "disabled", "strict"]

#: The validation modes, as the spec names them.
MODES: Final[tuple[str, ...]] = ("enabled", "warn_only", "disabled", "strict")

_INT_RE: Final = re.compile(r"\s*[+-]?\d+\s*")
_FLOAT_RE: Final = re.compile(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)\s*")
_LIST_TYPES: Final = (list, tuple, set, frozenset)
_MAX_TYPE_TEXT: Final = 80
_MAX_ALIASES: Final = 8
_MAX_DIGITS: Final = 4000  # int() refuses longer digit strings (sys.get_int_max_str_digits)


class ValidationResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of validating a value against a signature.

    Attributes:
        ok: ``True`` when the value may be used (always in ``warn_only``/``disabled``).
        value: the coerced value for inputs; the value itself for outputs.
        errors: one message per problem, ``path: expected t, got ...``.
        warnings: coercions made (``limit: coerced string "10" to int``), and in
            ``warn_only`` mode the errors too.
    """

    ok: bool
    value: Any
    errors: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)

    def format(self, label: str = "validation") -> str:
        """Render errors and warnings as the bullet lists fed back to a model.

        Example:
            >>> r = ValidationResult(ok=False, value=None, errors=["a: expected int, got nil"])
            >>> print(r.format("Tool validation"))
            Tool validation errors:
            - a: expected int, got nil
        """
        lines: list[str] = []
        if self.errors:
            lines.append(f"{label} errors:")
            lines.extend(f"- {e}" for e in self.errors)
        if self.warnings:
            lines.append(f"{label} warnings:")
            lines.extend(f"- {w}" for w in self.warnings)
        return "\n".join(lines)


def check_mode(mode: str) -> Mode:
    """Return the canonical mode name (``":strict"`` is accepted too), or raise.

    Raises:
        UsageError: ``mode`` is not one of ``enabled``, ``warn_only``, ``disabled``, ``strict``.
    """
    try:
        return _MODE_NAMES[mode]
    except (KeyError, TypeError):
        raise UsageError(
            f"unknown validation mode {mode!r}: use one of {', '.join(map(repr, MODES))}"
        ) from None


_MODE_NAMES: Final[dict[str, Mode]] = {
    **{name: name for name in MODES},  # type: ignore[misc]
    **{":" + name: name for name in MODES},  # type: ignore[misc]
}


class _Ctx:
    """Collects the messages of one slow-path run."""

    __slots__ = ("errors", "warnings")

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def fail(self, path: PathNode, expected: str, value: object) -> object:
        self.errors.append(f"{format_path(path)}: expected {expected}, got {describe(value)}")
        return value

    def coerced(self, path: PathNode, value: object, to: str, result: object) -> object:
        self.warnings.append(f"{format_path(path)}: coerced {describe(value)} to {to}")
        return result


Check = Callable[[Any, PathNode, _Ctx], Any]


class Compiled:
    """A type compiled for one direction (coerce or not) and strictness.

    Attributes:
        check: the slow path, ``check(value, path, ctx) -> value``.
        fast: the equivalent msgspec type, or ``None`` when there is no fast path.
    """

    __slots__ = ("_accept", "check", "fast")

    def __init__(self, check: Check, fast: Any) -> None:
        self.check = check
        self.fast = fast
        self._accept = acceptor(fast)

    def run(self, value: Any, *, warn_only: bool) -> ValidationResult:
        """Validate ``value``; in ``warn_only`` errors become warnings and ``ok`` is True."""
        accept = self._accept
        if accept is not None:
            try:
                accept(value)
            except (msgspec.ValidationError, TypeError, ValueError, RecursionError):
                pass
            else:
                return ValidationResult(ok=True, value=value, errors=[], warnings=[])
        ctx = _Ctx()
        result = self.check(value, None, ctx)
        if warn_only:
            return ValidationResult(
                ok=True, value=result, errors=[], warnings=ctx.errors + ctx.warnings
            )
        return ValidationResult(
            ok=not ctx.errors, value=result, errors=ctx.errors, warnings=ctx.warnings
        )


@functools.lru_cache(maxsize=1024)
def compile_type(node: Type, coerce: bool, strict: bool) -> Compiled:
    """Compile ``node`` once into a :class:`Compiled` validator (cached by value)."""
    check = _compile(node, coerce, strict)
    fast: Any = None
    if not (coerce and contains_prim(node, "float")):
        try:
            fast = to_msgspec(node, strict)
        except (TypeError, ValueError):  # pragma: no cover - msgspec refused a shape
            fast = None
    return Compiled(check, fast)


# -- the slow path -------------------------------------------------------------------------


def _compile(node: Type, coerce: bool, strict: bool) -> Check:
    if isinstance(node, Prim):
        check = _prim(node.name, coerce)
    elif isinstance(node, ListOf):
        check = _list(_compile(node.item, coerce, strict), node.item)
    elif isinstance(node, Fields):
        check = _fields(node, coerce, strict)
    else:  # pragma: no cover - the Type family is closed
        raise TypeError(f"not a signature type: {node!r}")
    if node.optional and not (isinstance(node, Prim) and node.name == "any"):
        inner = check

        def optional(value: Any, path: PathNode, ctx: _Ctx) -> Any:
            return value if value is None else inner(value, path, ctx)

        return optional
    return check


def _any(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    return value


def _string(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if isinstance(value, str):
        return value
    return ctx.fail(path, "string", value)


def _keyword(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if is_keyword(value):
        return value
    return ctx.fail(path, "keyword", value)


def _map(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return ctx.fail(path, "map", value)


def _int(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return ctx.fail(path, "int", value)


def _int_coerce(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str) and _INT_RE.fullmatch(value) and len(value) < _MAX_DIGITS:
        return ctx.coerced(path, value, "int", int(value))
    if isinstance(value, float) and value.is_integer():
        return ctx.coerced(path, value, "int", int(value))
    return ctx.fail(path, "int", value)


def _float(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if type(value) is float or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    return ctx.fail(path, "float", value)


def _float_coerce(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if type(value) is float:
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and _FLOAT_RE.fullmatch(value):
        return ctx.coerced(path, value, "float", float(value))
    return ctx.fail(path, "float", value)


def _bool(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if value is True or value is False:
        return value
    return ctx.fail(path, "bool", value)


def _bool_coerce(value: Any, path: PathNode, ctx: _Ctx) -> Any:
    if value is True or value is False:
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "false"):
            return ctx.coerced(path, value, "bool", word == "true")
    return ctx.fail(path, "bool", value)


_PRIMS: Final[dict[tuple[str, bool], Check]] = {
    ("any", False): _any,
    ("any", True): _any,
    ("string", False): _string,
    ("string", True): _string,
    ("keyword", False): _keyword,
    ("keyword", True): _keyword,
    ("map", False): _map,
    ("map", True): _map,
    ("int", False): _int,
    ("int", True): _int_coerce,
    ("float", False): _float,
    ("float", True): _float_coerce,
    ("bool", False): _bool,
    ("bool", True): _bool_coerce,
}


def _prim(name: str, coerce: bool) -> Check:
    return _PRIMS[(name, coerce)]


def _exact(node: Type) -> type | None:
    """A type whose instances ``node`` accepts unchanged, checked by ``type(v) is t``.

    Lets containers skip the call (and the path tuple) for the common valid leaf.
    """
    if isinstance(node, Prim):
        return _EXACT.get(node.name)
    return None


_EXACT: Final[dict[str, type]] = {
    "string": str,
    "keyword": str,
    "int": int,
    "float": float,
    "bool": bool,
    "map": dict,
}


class _Nothing:
    """A type no value has: the ``exact`` of a node without a shortcut."""


def _list(item_check: Check, item: Type) -> Check:
    if item_check is _any:

        def any_list(value: Any, path: PathNode, ctx: _Ctx) -> Any:
            if isinstance(value, _LIST_TYPES):
                return value
            return ctx.fail(path, "list", value)

        return any_list

    exact = _exact(item) or _Nothing

    def typed_list(value: Any, path: PathNode, ctx: _Ctx) -> Any:
        if not isinstance(value, _LIST_TYPES):
            return ctx.fail(path, "list", value)
        out: list[Any] | None = None
        for index, old in enumerate(value):
            if type(old) is exact:
                continue
            new = item_check(old, (path, index), ctx)
            if new is not old:
                if out is None:
                    out = list(value)
                out[index] = new
        return value if out is None else out

    return typed_list


def _type_text(node: Type) -> str:
    if isinstance(node, Prim):
        return node.name
    text = render_type(node)
    if len(text) > _MAX_TYPE_TEXT:
        text = text[: _MAX_TYPE_TEXT - 3] + "..."
    return text


def _fields(node: Fields, coerce: bool, strict: bool) -> Check:
    # Each field remembers the key that last matched it (its name, ":id", a keyword
    # object), so maps of one shape are looked up with one dict access per field. Keys
    # other than the name are also learned as aliases for maps that mix key styles.
    specs: tuple[tuple[str, Check, bool, str, list[Any], Any, bool, list[Any]], ...] = tuple(
        (
            f.name,
            _compile(f.type, coerce, strict),
            not f.optional,
            _type_text(f.type),
            [],
            _exact(f.type) or _Nothing,
            isinstance(f.type, Prim) and f.type.name == "any",
            [f.name],
        )
        for f in node.fields
    )
    names = frozenset(f.name for f in node.fields)
    known: set[Any] = set(names)
    allowed = ", ".join(f.name for f in node.fields) or "no fields"

    def fields(value: Any, path: PathNode, ctx: _Ctx) -> Any:
        if type(value) is not dict and not isinstance(value, Mapping):
            return ctx.fail(path, "map", value)
        originals: dict[str, Any] | None = None
        changed: dict[str, Any] | None = None
        get = value.get
        for name, check, required, type_text, aliases, exact, is_any, last in specs:
            key = last[0]
            old = get(key, MISSING)
            if old is MISSING:
                key = name
                old = get(name, MISSING)
                if old is MISSING:
                    for key in aliases:
                        old = get(key, MISSING)
                        if old is not MISSING:
                            break
                    else:
                        if originals is None and not _only_known(value, known):
                            originals = {key_name(k): k for k in value}
                        key = MISSING if originals is None else originals.get(name, MISSING)
                        if key is MISSING:
                            if required:
                                ctx.errors.append(
                                    f"{format_path((path, name))}: missing required field, "
                                    f"expected {type_text}"
                                )
                            continue
                        old = value[key]
                        if len(aliases) < _MAX_ALIASES:
                            aliases.append(key)
                            known.add(key)
                last[0] = key
            if coerce and key is not name:
                if changed is None:
                    changed = {}
                changed[name] = old
            if is_any or type(old) is exact:
                continue
            new = check(old, (path, name), ctx)
            if new is not old and coerce:
                if changed is None:
                    changed = {}
                changed[name] = new
        if strict:
            for key in value:
                if key_name(key) not in names:
                    ctx.errors.append(
                        f"{format_path((path, key_name(key)))}: unexpected field "
                        f"(strict mode allows only: {allowed})"
                    )
        if changed is None:
            return value
        out = {
            (k if type(k) is str and k in names else _declared_or_key(k, names)): v
            for k, v in value.items()
        }
        out.update(changed)
        return out

    return fields


def _only_known(value: Mapping[Any, Any], known: set[Any]) -> bool:
    """Whether every key of ``value`` is a field name or a learned alias."""
    try:
        return value.keys() <= known
    except TypeError:  # a Mapping whose keys() is not a set-like view
        return all(key in known for key in value)


def _declared_or_key(key: Any, names: frozenset[str]) -> Any:
    name = key_name(key)
    return name if name in names else key
