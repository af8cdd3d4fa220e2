"""A hand-written, position-tracking parser from signature text to :class:`Signature`.

Grammar (whitespace and commas between entries are free; commas are optional)::

    signature := [name] "(" [param ("," param)*] ")" "->" type  |  type
    param     := [":"] name type
    type      := (":" prim | "[" type "]" | "{" [field ("," field)*] "}") ["?"]
    field     := [":"] name type
    name      := [A-Za-z_][A-Za-z0-9_-]*
"""

from __future__ import annotations

import difflib
import functools
from typing import Final, NoReturn

import msgspec

from ptcflow.signature._ast import NAME_RE, PRIM_NAMES, Field, Fields, ListOf, Param, Prim, Type
from ptcflow.signature._errors import SignatureError
from ptcflow.signature._signature import Signature

__all__ = ("MAX_DEPTH", "parse", "parse_type")

#: Deepest nesting of lists and maps the parser accepts.
MAX_DEPTH: Final = 100

_TYPE_HINT: Final = "a type like :int, :string?, [:string] or {id :int}"

_ALIASES: Final[dict[str, str]] = {
    "str": ":string",
    "text": ":string",
    "integer": ":int",
    "long": ":int",
    "number": ":float",
    "double": ":float",
    "decimal": ":float",
    "boolean": ":bool",
    "atom": ":keyword",
    "enum": ":keyword (enums like :enum[a b] are not supported yet)",
    "symbol": ":keyword",
    "list": "[:any] (or [:t] for a list of t)",
    "array": "[:any] (or [:t] for a list of t)",
    "vector": "[:any] (or [:t] for a list of t)",
    "dict": ":map",
    "object": ":map (or {field :t} for typed fields)",
    "hash": ":map",
    "nil": ":any? (or put ? after a type: :string?)",
    "null": ":any? (or put ? after a type: :string?)",
    "none": ":any? (or put ? after a type: :string?)",
}

_WORD_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def parse(text: str | Signature, *, name: str | None = None) -> Signature:
    """Parse signature text into a :class:`Signature`.

    Accepts the full form ``(query :string, limit :int?) -> [{id :int}]``, a named form
    ``search(query :string) -> [:int]`` and the output-only shorthand ``{count :int}``
    (the same as ``() -> {count :int}``). Map keys may be written ``:id`` or ``id``.

    Args:
        text: the signature text (a :class:`Signature` is returned unchanged).
        name: a name to give the signature (overrides a name written in the text).

    Returns:
        The parsed, immutable signature.

    Raises:
        SignatureError: the text is not a signature; the message shows the text with a
            caret under the problem and says what was expected.

    Example:
        >>> parse("(query :string, limit :int?) -> [{id :int, title :string}]").render()
        '(query :string, limit :int?) -> [{id :int, title :string}]'
    """
    if isinstance(text, Signature):
        sig = text
    elif not isinstance(text, str):
        raise SignatureError(
            f"a signature must be a string like '(query :string) -> [:int]', "
            f"got {type(text).__name__}"
        )
    else:
        sig = _parse_cached(text)
    if name is not None:
        sig = sig.with_name(name)
    return sig


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> Signature:
    """Parse once per distinct text: signatures are immutable, so sharing them is safe."""
    try:
        return _Parser(text).signature()
    except RecursionError:  # only when called from an already deep stack
        raise SignatureError(
            "invalid signature: types nest too deeply; use :map or :any deeper down"
        ) from None


def parse_type(text: str) -> Type:
    """Parse the text of a single type, such as ``[{id :int}]`` or ``:string?``.

    Raises:
        SignatureError: the text is not one type.
    """
    if not isinstance(text, str):
        raise SignatureError(f"a type must be a string like '[:int]', got {type(text).__name__}")
    parser = _Parser(text)
    parser.ws()
    if parser.pos >= len(text):
        parser.fail("empty type: write " + _TYPE_HINT)
    node = parser.type(0)
    parser.ws()
    if parser.pos < len(text):
        parser.fail(f"unexpected {text[parser.pos]!r} after the end of the type")
    return node


class _Parser:
    """Recursive descent over ``text`` with one cursor, ``pos``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # -- helpers -----------------------------------------------------------------------
    def fail(self, reason: str, position: int | None = None) -> NoReturn:
        where = self.pos if position is None else position
        raise SignatureError(f"invalid signature: {reason}", text=self.text, position=where)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos].isspace():
            pos += 1
        self.pos = pos

    def sep(self) -> None:
        """Skip whitespace and at most one comma."""
        self.ws()
        if self.peek() == ",":
            self.pos += 1
            self.ws()

    def word(self) -> str:
        start = self.pos
        text = self.text
        while self.pos < len(text) and text[self.pos] in _WORD_CHARS:
            self.pos += 1
        return text[start : self.pos]

    def describe_here(self) -> str:
        if self.pos >= len(self.text):
            return "the end of the text"
        return repr(self.text[self.pos])

    # -- signature ---------------------------------------------------------------------
    def signature(self) -> Signature:
        text = self.text
        self.ws()
        if self.pos >= len(text):
            self.fail(
                "empty signature: write an output type such as {count :int}, "
                "or inputs and output such as (query :string) -> [:string]"
            )
        sig_name: str | None = None
        match = NAME_RE.match(text, self.pos)
        if match is not None:
            after = match.end()
            if text[after : after + 1] == "(":
                sig_name = match.group()
                self.pos = after
            else:
                self.fail(self.bare_word_reason(match.group()))
        if self.peek() == "(":
            params = self.params()
            self.ws()
            if not text.startswith("->", self.pos):
                self.fail(
                    f"expected -> and the output type after the parameters, found {self.describe_here()}"
                )
            self.pos += 2
            self.ws()
            if self.pos >= len(text):
                self.fail("expected the output type after ->, " + _TYPE_HINT)
            output = self.type(0)
        else:
            params = ()
            output = self.type(0)
            self.ws()
            if text.startswith("->", self.pos):
                self.fail("inputs go in parentheses before ->: write (query :string) -> :int")
        self.ws()
        if self.pos < len(text):
            self.fail(f"unexpected {text[self.pos]!r} after the end of the signature")
        return Signature(params=params, output=output, name=sig_name)

    def params(self) -> tuple[Param, ...]:
        open_at = self.pos
        self.pos += 1  # "("
        params: list[Param] = []
        seen: set[str] = set()
        self.ws()
        while True:
            if self.peek() == ")":
                self.pos += 1
                return tuple(params)
            if self.pos >= len(self.text):
                self.fail(f"expected ) to close the parameters opened at column {open_at + 1}")
            name_at = self.pos
            name = self.name("parameter")
            if name in seen:
                self.fail(
                    f"duplicate parameter {name!r}: each parameter needs its own name", name_at
                )
            seen.add(name)
            self.ws()
            if self.peek() in (",", ")", ""):
                self.fail(f"parameter {name} needs a type, like ({name} :string)")
            params.append(Param(name=name, type=self.type(1)))
            self.after_entry(")", "parameter")

    def after_entry(self, close: str, what: str) -> None:
        self.sep()
        char = self.peek()
        if char == close or char == ":" or char == "" or NAME_RE.match(char):
            return
        self.fail(f"expected , or {close} after the {what}, found {char!r}")

    # -- types -------------------------------------------------------------------------
    def type(self, depth: int) -> Type:
        if depth > MAX_DEPTH:
            self.fail(f"types nest deeper than {MAX_DEPTH} levels; use :map or :any deeper down")
        self.ws()
        start = self.pos
        char = self.peek()
        node: Type
        if char == ":":
            self.pos += 1
            node = self.prim(start)
        elif char == "[":
            node = self.list_type(depth)
        elif char == "{":
            node = self.fields(depth)
        elif char == "":
            self.fail("expected " + _TYPE_HINT + ", but the text ended")
        elif char == "(":
            self.fail("parentheses only hold the parameters at the start: (a :int) -> :string")
        elif NAME_RE.match(char):
            self.fail(self.bare_word_reason(self.word()), start)
        else:
            self.fail(f"expected {_TYPE_HINT}, found {char!r}")
        if self.peek() == "?":
            self.pos += 1
            node = msgspec.structs.replace(node, optional=True)
        if self.peek() == "|":
            self.fail("union types like :string|:int are not supported yet; use :any")
        return node

    def prim(self, start: int) -> Prim:
        word = self.word()
        if not word:
            self.fail(f"expected a type name after ':', like :int (found {self.describe_here()})")
        if word not in PRIM_NAMES:
            self.fail(_unknown_type_reason(word), start)
        if self.peek() == "[":
            self.fail(
                f"refinements like :{word}[...] and enums are not supported yet; "
                f"use :{word} (for enums, :keyword)"
            )
        return Prim(name=word)  # type: ignore[arg-type]

    def list_type(self, depth: int) -> ListOf:
        open_at = self.pos
        self.pos += 1  # "["
        self.ws()
        if self.peek() == "]":
            self.fail("list of what? use [:any] for a list of anything, or [:t] for a list of t")
        item = self.type(depth + 1)
        self.ws()
        char = self.peek()
        if char == "]":
            self.pos += 1
            return ListOf(item=item)
        if char in (":", "[", "{", ","):
            self.fail("a list has one item type: use [:any] for mixed items, or {...} for records")
        self.fail(
            f"expected ] to close the list opened at column {open_at + 1}, found {self.describe_here()}"
        )

    def fields(self, depth: int) -> Fields:
        open_at = self.pos
        self.pos += 1  # "{"
        fields: list[Field] = []
        seen: set[str] = set()
        self.ws()
        while True:
            if self.peek() == "}":
                self.pos += 1
                return Fields(fields=tuple(fields))
            if self.pos >= len(self.text):
                self.fail(f"expected }} to close the map opened at column {open_at + 1}")
            name_at = self.pos
            name = self.name("field")
            if name in seen:
                self.fail(f"duplicate field {name!r} in this map", name_at)
            seen.add(name)
            self.ws()
            if self.peek() in (",", "}", ""):
                self.fail(f"field {name} needs a type, like {{{name} :string}}")
            fields.append(Field(name=name, type=self.type(depth + 1)))
            self.after_entry("}", "field")

    def name(self, what: str) -> str:
        if self.peek() == ":":
            self.pos += 1
        match = NAME_RE.match(self.text, self.pos)
        if match is None:
            char = self.peek()
            if char.isdigit():
                self.fail(f"a {what} name must start with a letter or _, found {char!r}")
            self.fail(f"expected a {what} name like id or user_name, found {self.describe_here()}")
        self.pos = match.end()
        name = match.group()
        if self.peek() == "?":
            self.fail(f"put ? after the type, not the name: {name} :string?", self.pos)
        char = self.peek()
        if char not in ("", ":", "[", "{", ",", "}", ")") and not char.isspace():
            self.fail(f"unexpected {char!r} in {what} name {name!r}")
        return name

    def bare_word_reason(self, word: str) -> str:
        if len(word) > 30:
            word = word[:27] + "..."
        if word in PRIM_NAMES:
            return f"types start with a colon: write :{word}"
        if word in _ALIASES:
            return f"unknown type {word!r}: write {_ALIASES[word]}"
        return (
            f"unexpected {word!r}: a signature is (inputs) -> output, name(inputs) -> output, "
            f"or just an output type like {{count :int}}"
        )


def _unknown_type_reason(word: str) -> str:
    lower = word.lower()
    if lower in PRIM_NAMES:
        return f"unknown type :{word}: type names are lower case, write :{lower}"
    if lower in _ALIASES:
        return f"unknown type :{word}: write {_ALIASES[lower]}"
    close = difflib.get_close_matches(lower, PRIM_NAMES, n=1, cutoff=0.6)
    hint = f"; did you mean :{close[0]}?" if close else ""
    return f"unknown type :{word}{hint} (types: {', '.join(':' + p for p in PRIM_NAMES)})"
