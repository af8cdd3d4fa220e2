"""Prompt templates: ``{{a.b}}`` placeholders and ``{{#list}}...{{/list}}`` sections.

The syntax is a small Mustache subset. ``{{name}}`` inserts a value, ``{{a.b.c}}`` walks
into maps, ``{{#items}}...{{/items}}`` repeats its body for every item of a list (an empty
list gives an empty string; a map or a true value renders the body once), ``{{^items}}``
renders its body when the value is missing, nil, false or empty, and ``{{.}}`` is the current
item inside a section. Names start with a letter and may contain letters, digits, ``-`` and
``_``; whitespace inside the braces is ignored. There is no escape syntax.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signature._ast import Fields, ListOf, Prim, Type
from ptcflow.signature._errors import SignatureError
from ptcflow.signature._signature import Signature
from ptcflow.signature._values import MISSING, is_keyword, key_name

__all__ = ("Template", "check_placeholders")

_SEGMENT: Final = re.compile(r"[^\W\d_][\w\-]*")  # a letter first
_DOT: Final = (".",)

Path = tuple[str, ...]


class _Text(msgspec.Struct, frozen=True):
    text: str


class _Var(msgspec.Struct, frozen=True):
    path: Path
    position: int


class _Section(msgspec.Struct, frozen=True):
    path: Path
    position: int
    inverted: bool
    body: tuple[_Text | _Var | _Section, ...]


_Node = _Text | _Var | _Section


class Template:
    """A parsed prompt template.

    Args:
        text: the template text.

    Attributes:
        text: the original text.
        placeholders: the path of every variable and section, in order of first
            appearance (``{{user.name}}`` is ``("user", "name")``); ``{{.}}`` is left out.

    Raises:
        SignatureError: the template is malformed (empty or badly named placeholder,
            unclosed ``{{`` or section); the message shows a caret under the problem.

    Example:
        >>> t = Template("Hi {{user.name}}! {{#tags}}#{{.}} {{/tags}}")
        >>> t.placeholders
        (('user', 'name'), ('tags',))
        >>> t.render({"user": {"name": "Ada"}, "tags": ["a", "b"]})
        'Hi Ada! #a #b '
    """

    __slots__ = ("_nodes", "placeholders", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise SignatureError(f"a template must be a string, got {type(text).__name__}")
        self.text = text
        self._nodes = _parse(text)
        found: dict[Path, None] = {}
        _collect(self._nodes, found)
        self.placeholders: tuple[Path, ...] = tuple(found)

    def __repr__(self) -> str:
        return f"Template({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Template) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("Template", self.text))

    def render(
        self, values: Mapping[Any, Any], *, missing: Literal["error", "empty"] = "error"
    ) -> str:
        """Expand the template with ``values`` (keys may be str, ``":k"`` or keywords).

        Strings are inserted as they are, nil as nothing, booleans as ``true``/``false``,
        keywords as ``:name``, lists and maps as JSON.

        Args:
            values: the values, usually the agent's input map.
            missing: ``"error"`` (default) raises for a variable with no value;
                ``"empty"`` renders it as an empty string.

        Returns:
            The expanded text.

        Raises:
            SignatureError: a variable has no value and ``missing="error"``.
            UsageError: ``missing`` is neither ``"error"`` nor ``"empty"``.
        """
        if missing not in ("error", "empty"):
            raise UsageError(f"missing must be 'error' or 'empty', got {missing!r}")
        out: list[str] = []
        self._render(self._nodes, [values], out, missing == "error")
        return "".join(out)

    def _render(
        self, nodes: Sequence[_Node], scopes: list[Any], out: list[str], strict: bool
    ) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                out.append(node.text)
            elif isinstance(node, _Var):
                value = _lookup(node.path, scopes)
                if value is MISSING:
                    if strict:
                        raise SignatureError(
                            f"template placeholder {{{{{'.'.join(node.path)}}}}} has no value: "
                            "pass it in the values, or render with missing='empty'",
                            text=self.text,
                            position=node.position,
                        )
                    continue
                out.append(_format(value))
            else:
                value = _lookup(node.path, scopes)
                empty = (
                    value is MISSING
                    or value is None
                    or value is False
                    or (
                        isinstance(value, Sequence | Mapping)
                        and not isinstance(value, str)
                        and not value
                    )
                )
                if node.inverted:
                    if empty:
                        self._render(node.body, scopes, out, strict)
                elif empty:
                    continue
                elif isinstance(value, list | tuple):
                    for item in value:
                        self._render(node.body, [*scopes, item], out, strict)
                else:
                    self._render(node.body, [*scopes, value], out, strict)


def _parse(text: str) -> tuple[_Node, ...]:
    stack: list[tuple[Path, int, bool, list[_Node]]] = []
    nodes: list[_Node] = []
    pos = 0
    while True:
        start = text.find("{{", pos)
        if start == -1:
            if pos < len(text):
                nodes.append(_Text(text[pos:]))
            break
        if start > pos:
            nodes.append(_Text(text[pos:start]))
        end = text.find("}}", start + 2)
        if end == -1:
            _fail("unclosed {{: close the placeholder with }}", text, start)
        inner = text[start + 2 : end]
        nested = inner.find("{{")
        if nested != -1:
            _fail("unclosed {{: a placeholder cannot contain {{", text, start)
        pos = end + 2
        body = inner.strip()
        if body[:1] in ("#", "^"):
            path = _path(body[1:].strip(), text, start, in_section=False)
            stack.append((path, start, body[0] == "^", nodes))
            nodes = []
        elif body[:1] == "/":
            path = _path(body[1:].strip(), text, start, in_section=False)
            if not stack:
                _fail(
                    f"{{{{/{'.'.join(path)}}}}} closes a section that was never opened", text, start
                )
            open_path, open_at, inverted, parent = stack.pop()
            if open_path != path:
                _fail(
                    f"{{{{/{'.'.join(path)}}}}} does not match the open section "
                    f"{{{{#{'.'.join(open_path)}}}}}: close it with {{{{/{'.'.join(open_path)}}}}}",
                    text,
                    start,
                )
            parent.append(_Section(open_path, open_at, inverted, tuple(nodes)))
            nodes = parent
        else:
            nodes.append(_Var(_path(body, text, start, in_section=bool(stack)), start))
    if stack:
        open_path, open_at, _, _ = stack[-1]
        name = ".".join(open_path)
        _fail(f"section {{{{#{name}}}}} is never closed: add {{{{/{name}}}}}", text, open_at)
    return tuple(nodes)


def _path(body: str, text: str, at: int, *, in_section: bool) -> Path:
    if not body:
        _fail("empty placeholder {{}}: write a name, like {{name}}", text, at)
    if body == ".":
        if in_section:
            return _DOT
        _fail("{{.}} means the current item and only works inside {{#list}}...{{/list}}", text, at)
    segments = tuple(s.strip() for s in body.split("."))
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            if not segment:
                _fail(f"placeholder {{{{{body}}}}} has an empty part: write {{{{a.b}}}}", text, at)
            _fail(
                f"invalid placeholder {{{{{body}}}}}: names must start with a letter and use "
                "only letters, digits, - and _",
                text,
                at,
            )
    return segments


def _fail(reason: str, text: str, position: int) -> Any:
    raise SignatureError(f"invalid template: {reason}", text=text, position=position)


def _collect(nodes: Sequence[_Node], found: dict[Path, None]) -> None:
    for node in nodes:
        if isinstance(node, _Var):
            if node.path != _DOT:
                found.setdefault(node.path, None)
        elif isinstance(node, _Section):
            found.setdefault(node.path, None)
            _collect(node.body, found)


def _get(container: Any, name: str) -> Any:
    if not isinstance(container, Mapping):
        return MISSING
    value = container.get(name, MISSING)
    if value is MISSING:
        for key, item in container.items():
            if key_name(key) == name:
                return item
    return value


def _lookup(path: Path, scopes: list[Any]) -> Any:
    if path == _DOT:
        return scopes[-1]
    value: Any = MISSING
    for scope in reversed(scopes):
        value = _get(scope, path[0])
        if value is not MISSING:
            break
    for segment in path[1:]:
        if value is MISSING:
            break
        value = _get(value, segment)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key_name(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if is_keyword(value) and not isinstance(value, str):
        return ":" + key_name(value)
    return value


def _format(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        if isinstance(value, int | float):
            return repr(value)
        plain = _plain(value)
        if isinstance(plain, str):
            return plain
        return msgspec.json.encode(plain, enc_hook=str).decode()
    except (ValueError, TypeError, OverflowError):  # huge ints, unencodable leaves
        return f"<{type(value).__name__}>"


# -- checking templates against signatures --------------------------------------------------


def check_placeholders(template: str | Template, signature: str | Signature) -> list[str]:
    """List the problems of a template's placeholders against a signature's inputs.

    Every ``{{a.b}}`` must name a parameter (and fields inside it); inside a section over
    a list of maps, names may also refer to the items' fields.

    Args:
        template: the template text or a :class:`Template`.
        signature: a :class:`Signature` or signature text.

    Returns:
        One message per problem (``placeholder {{unknown}} not found in signature``), or
        an empty list. A malformed template gives its parse error as the only message.

    Raises:
        SignatureError: ``signature`` is text that does not parse.

    Example:
        >>> check_placeholders("Hello {{unknown}}", "(name :string) -> {greeting :string}")
        ['placeholder {{unknown}} not found in signature']
    """
    from ptcflow.signature._parser import parse

    sig = parse(signature)
    try:
        parsed = template if isinstance(template, Template) else Template(template)
    except SignatureError as exc:
        return [str(exc)]
    problems: dict[str, None] = {}
    _check(parsed._nodes, [sig.input_type], problems)
    return list(problems)


def _check(nodes: Sequence[_Node], scopes: list[Type], problems: dict[str, None]) -> None:
    for node in nodes:
        if isinstance(node, _Text) or (isinstance(node, _Var) and node.path == _DOT):
            continue
        resolved, problem = _resolve(node.path, scopes)
        if problem:
            problems.setdefault(problem, None)
        if isinstance(node, _Section):
            inner: Type = Prim(name="any")
            if resolved is not None:
                inner = resolved.item if isinstance(resolved, ListOf) else resolved
            _check(node.body, [*scopes, inner], problems)


def _opens(node: Type) -> bool:
    """Whether any name may be looked up inside a value of this type."""
    return isinstance(node, Prim) and node.name in ("any", "map")


def _resolve(path: Path, scopes: list[Type]) -> tuple[Type | None, str]:
    shown = "{{" + ".".join(path) + "}}"
    current: Type | None = None
    for scope in reversed(scopes):
        if _opens(scope):
            return Prim(name="any"), ""
        if isinstance(scope, Fields):
            field = scope.get(path[0])
            if field is not None:
                current = field.type
                break
    if current is None:
        names = [f.name for f in scopes[0].fields] if isinstance(scopes[0], Fields) else []
        close = difflib.get_close_matches(path[0], names, n=1, cutoff=0.8)
        hint = f" (did you mean {{{{{close[0]}}}}}?)" if close else ""
        return None, f"placeholder {shown} not found in signature{hint}"
    walked = path[0]
    for segment in path[1:]:
        if _opens(current):
            return Prim(name="any"), ""
        if isinstance(current, Fields):
            field = current.get(segment)
            if field is None:
                known = ", ".join(f.name for f in current.fields) or "no fields"
                return (
                    None,
                    f"placeholder {shown} not found in signature ({walked} has fields: {known})",
                )
            current = field.type
        elif isinstance(current, ListOf):
            return None, (
                f"placeholder {shown}: {walked} is a list; "
                f"use a section {{{{#{walked}}}}}...{{{{/{walked}}}}}"
            )
        else:
            return None, f"placeholder {shown} not found in signature ({walked} has no fields)"
        walked += "." + segment
    return current, ""
