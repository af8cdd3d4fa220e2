"""The reader: PTC-Lisp text to forms with line and column.

Dispatch is table-driven on the opening character (:data:`_DISPATCH`); ``#`` has its own
table (:data:`_HASH_DISPATCH`). Everything else is a token: a number, ``nil``/``true``/
``false``, a keyword or a symbol. Errors are ``LispError("parse", ...)`` with the position of
the offending character and a message that says how to fix the text.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp._forms import Form, ListForm, Lit, MapForm, SetForm, Sym, VecForm, form_to_value
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.values import Keyword

__all__ = ("MAX_NESTING", "read", "read_data", "read_one")

MAX_NESTING: Final = 256
"""Deepest bracket nesting the reader accepts (deeper text is a ``parse`` error)."""

_WHITESPACE: Final = frozenset(" \t\n\r\f\v,")
_DELIMS: Final = frozenset("()[]{}\"';@^`~\\")
_TOKEN_RE: Final = re.compile(r"[^\s,()\[\]{}\"';@^`~\\]+")
_INT_RE: Final = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_HEX_RE: Final = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]+)")
_FLOAT_RE: Final = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")
_RATIO_RE: Final = re.compile(r"[+-]?[0-9]+/[0-9]+")
_STRING_ESCAPES: Final = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    '"': '"',
    "\\": "\\",
    "b": "\b",
    "f": "\f",
    "0": "\0",
}
_CHAR_NAMES: Final = {
    "newline": "\n",
    "space": " ",
    "tab": "\t",
    "return": "\r",
    "formfeed": "\f",
    "backspace": "\b",
}
_SYMBOLIC: Final = {"Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
_CLOSERS: Final = {"(": ")", "[": "]", "{": "}"}
_REJECTED: Final = {
    "'": (
        "quote (') is not supported: write data literally instead, e.g. [1 2 3] instead of "
        "'(1 2 3), and a keyword :x or a string \"x\" instead of 'x"
    ),
    "@": (
        "deref (@) is not supported: there are no atoms or refs; keep state with "
        "(memory/put :k v) and read it with (memory/get :k)"
    ),
    "`": "syntax-quote (`) is not supported: there are no macros; write the code directly",
    "~": "unquote (~) is not supported: there are no macros; write the code directly",
    "^": "metadata (^) is not supported: remove the ^... annotation",
}


class _Reader:
    __slots__ = ("anon", "depth", "line_starts", "pos", "src")

    def __init__(self, src: str) -> None:
        self.src = src
        self.pos = 0
        self.depth = 0
        self.anon = False
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", src)]

    # -- positions and errors ---------------------------------------------------------
    def where(self, pos: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, pos)
        return line, pos - self.line_starts[line - 1] + 1

    def error(self, message: str, pos: int | None = None) -> LispError:
        line, col = self.where(self.pos if pos is None else pos)
        return LispError("parse", message, line=line, column=col)

    # -- driver -------------------------------------------------------------------------
    def skip_ws(self) -> None:
        src, n = self.src, len(self.src)
        pos = self.pos
        while pos < n:
            ch = src[pos]
            if ch in _WHITESPACE:
                pos += 1
            elif ch == ";":
                end = src.find("\n", pos)
                pos = n if end < 0 else end + 1
            elif ch == "#" and src.startswith("#_", pos):
                self.pos = pos + 2
                self.skip_ws()
                if self.pos >= n or src[self.pos] in ")]}":
                    raise self.error("#_ must be followed by a form to discard", pos)
                self.read_form()
                pos = self.pos
            else:
                break
        self.pos = pos

    def read_form(self) -> Form:
        """Read one form at ``pos`` (whitespace already skipped)."""
        ch = self.src[self.pos]
        handler = _DISPATCH.get(ch)
        if handler is not None:
            return handler(self)
        return self.read_token()

    def read_seq(self, opener: str, start: int) -> tuple[Form, ...]:
        closer = _CLOSERS[opener]
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"forms are nested more than {MAX_NESTING} deep: flatten the data")
        items: list[Form] = []
        src, n = self.src, len(self.src)
        while True:
            self.skip_ws()
            if self.pos >= n:
                line, col = self.where(start)
                raise self.error(
                    f"unclosed {opener} opened at line {line}, column {col}: add a closing {closer}",
                    start,
                )
            ch = src[self.pos]
            if ch == closer:
                self.pos += 1
                self.depth -= 1
                return tuple(items)
            if ch in ")]}":
                line, col = self.where(start)
                raise self.error(
                    f"expected {closer} to close {opener} opened at line {line}, column {col}, "
                    f"found {ch}: check the brackets"
                )
            items.append(self.read_form())

    # -- handlers -----------------------------------------------------------------------
    def read_list(self) -> Form:
        start = self.pos
        self.pos += 1
        return ListForm(self.read_seq("(", start), *self.where(start))

    def read_vector(self) -> Form:
        start = self.pos
        self.pos += 1
        return VecForm(self.read_seq("[", start), *self.where(start))

    def read_map(self) -> Form:
        start = self.pos
        self.pos += 1
        items = self.read_seq("{", start)
        if len(items) % 2:
            raise self.error(
                f"a map literal needs an even number of forms (key value pairs), got {len(items)}",
                start,
            )
        _check_unique(self, items[::2], "map key", start)
        return MapForm(items, *self.where(start))

    def read_unexpected_close(self) -> Form:
        ch = self.src[self.pos]
        raise self.error(f"unexpected {ch} with no matching opening bracket: remove it")

    def read_rejected(self) -> Form:
        raise self.error(_REJECTED[self.src[self.pos]])

    def read_string(self) -> Form:
        start = self.pos
        text = self.scan_string(start, regex=False)
        return Lit(text, *self.where(start))

    def scan_string(self, start: int, *, regex: bool) -> str:
        src, n = self.src, len(self.src)
        pos = self.pos + 1
        out: list[str] = []
        while True:
            end = src.find('"', pos)
            bs = src.find("\\", pos)
            if end < 0:
                raise self.error('unterminated string: add the closing "', start)
            if bs < 0 or bs > end:
                out.append(src[pos:end])
                self.pos = end + 1
                return "".join(out)
            out.append(src[pos:bs])
            if bs + 1 >= n:
                raise self.error('unterminated string: add the closing "', start)
            esc = src[bs + 1]
            if regex:
                out.append('"' if esc == '"' else "\\" + esc)
                pos = bs + 2
            elif esc == "u":
                digits = src[bs + 2 : bs + 6]
                if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    raise self.error("\\u in a string needs four hex digits, e.g. \\u00e9", bs)
                out.append(chr(int(digits, 16)))
                pos = bs + 6
            elif esc in _STRING_ESCAPES:
                out.append(_STRING_ESCAPES[esc])
                pos = bs + 2
            else:
                raise self.error(
                    f'unknown escape \\{esc} in a string: use \\n \\t \\r \\" \\\\ or \\uXXXX',
                    bs,
                )

    def read_char(self) -> Form:
        start = self.pos
        src = self.src
        if start + 1 >= len(src):
            raise self.error("\\ must be followed by a character, e.g. \\a or \\space")
        end = start + 2
        while end < len(src) and (src[end].isalnum() or src[end] == "-"):
            end += 1
        name = src[start + 1 : end]
        self.pos = end
        if len(name) == 1:
            return Lit(name, *self.where(start))
        if name in _CHAR_NAMES:
            return Lit(_CHAR_NAMES[name], *self.where(start))
        if name[0] == "u" and len(name) == 5:
            try:
                return Lit(chr(int(name[1:], 16)), *self.where(start))
            except ValueError:
                pass
        raise self.error(
            f"unknown character \\{name}: use one character (\\a), \\newline, \\space, "
            "\\tab or \\uXXXX",
            start,
        )

    def read_hash(self) -> Form:
        start = self.pos
        nxt = self.src[start + 1 : start + 2]
        handler = _HASH_DISPATCH.get(nxt)
        if handler is None:
            raise self.error(
                f'unknown dispatch #{nxt}: use #{{...}} for sets, #"..." for regexes, '
                "#(...) for short functions, #_ to discard a form, ##Inf ##-Inf ##NaN"
            )
        return handler(self)

    def read_set(self) -> Form:
        start = self.pos
        self.pos += 2
        items = self.read_seq("{", start)
        _check_unique(self, items, "set element", start)
        return SetForm(items, *self.where(start))

    def read_regex(self) -> Form:
        start = self.pos
        self.pos += 1
        pattern = self.scan_string(start, regex=True)
        from ptcflow.lisp.builtins import compile_regex

        try:
            value = compile_regex(pattern)
        except LispError as exc:
            line, col = self.where(start)
            category = "parse" if exc.category == "type" else exc.category
            raise LispError(category, exc.message, line=line, column=col) from None
        return Lit(value, *self.where(start))

    def read_symbolic(self) -> Form:
        start = self.pos
        m = _TOKEN_RE.match(self.src, start + 2)
        name = m.group() if m else ""
        if name not in _SYMBOLIC:
            raise self.error(f"unknown symbolic value ##{name}: use ##Inf, ##-Inf or ##NaN")
        self.pos = start + 2 + len(name)
        return Lit(_SYMBOLIC[name], *self.where(start))

    def read_anon_fn(self) -> Form:
        start = self.pos
        if self.anon:
            raise self.error(
                "#(...) functions cannot be nested: use (fn [x] ...) for the inner one"
            )
        self.pos += 2
        line, col = self.where(start)
        self.anon = True
        try:
            body = ListForm(self.read_seq("(", start), line, col)
        finally:
            self.anon = False
        info = _AnonArgs()
        body_form = info.rewrite(self, body)
        params: list[Form] = [Sym(f"%{i}", line, col) for i in range(1, info.max_index + 1)]
        if info.rest:
            params += [Sym("&", line, col), Sym("%&", line, col)]
        return ListForm(
            (Sym("fn", line, col), VecForm(tuple(params), line, col), body_form), line, col
        )

    def read_token(self) -> Form:
        start = self.pos
        m = _TOKEN_RE.match(self.src, start)
        if m is None:  # pragma: no cover - every non-delimiter char starts a token
            raise self.error(f"unexpected character {self.src[start]!r}")
        tok = m.group()
        self.pos = m.end()
        line, col = self.where(start)
        return _classify(self, tok, start, line, col)


def _classify(r: _Reader, tok: str, start: int, line: int, col: int) -> Form:
    c0 = tok[0]
    if c0.isdigit() or (c0 in "+-" and len(tok) > 1 and tok[1].isdigit()):
        return Lit(_number(r, tok, start), line, col)
    if tok == "nil":
        return Lit(None, line, col)
    if tok == "true":
        return Lit(True, line, col)
    if tok == "false":
        return Lit(False, line, col)
    if c0 == ":":
        name = tok[1:]
        if not name or name.startswith((":", "/")) or name.endswith("/"):
            hint = " (auto-resolved ::keywords are not supported)" if name.startswith(":") else ""
            raise r.error(f"invalid keyword {tok}{hint}: write :name or :ns/name", start)
        return Lit(Keyword(name), line, col)
    if "#" in tok[:1] or (tok.endswith("/") and tok != "/"):
        raise r.error(f"invalid symbol {tok}", start)
    return Sym(tok, line, col)


def _number(r: _Reader, tok: str, start: int) -> int | float:
    if _INT_RE.fullmatch(tok):
        return int(tok)
    m = _HEX_RE.fullmatch(tok)
    if m:
        return int(m.group(1) + m.group(2), 16)
    if _FLOAT_RE.fullmatch(tok):
        return float(tok)
    if tok.endswith(("N", "M")) and _FLOAT_RE.fullmatch(tok[:-1]):
        return _number(r, tok[:-1], start)
    if _RATIO_RE.fullmatch(tok):
        num, den = tok.split("/")
        raise r.error(f"ratios like {tok} are not supported: write (/ {num} {den})", start)
    raise r.error(f"invalid number {tok}", start)


def _check_unique(r: _Reader, keys: tuple[Form, ...], what: str, start: int) -> None:
    if len(keys) < 2 or not all(isinstance(k, Lit) for k in keys):
        return
    seen: set[Any] = set()
    for k in keys:
        assert isinstance(k, Lit)
        v = k.value
        marker = (type(v), v) if not isinstance(v, float) or v == v else (float, id(k))
        try:
            if marker in seen:
                raise r.error(f"duplicate {what} {_show(v)} in a literal: remove one", k_pos(r, k))
            seen.add(marker)
        except TypeError:  # unhashable literal (cannot happen for Lit) - no check
            return


def k_pos(r: _Reader, form: Form) -> int:
    """Offset of a form's start (the inverse of :meth:`_Reader.where`)."""
    return r.line_starts[form.line - 1] + form.column - 1


def _show(v: Any) -> str:
    return str(v) if isinstance(v, Keyword) else repr(v)


class _AnonArgs:
    """Finds ``%``, ``%n`` and ``%&`` in a ``#(...)`` body and renames ``%`` to ``%1``."""

    __slots__ = ("max_index", "rest")

    def __init__(self) -> None:
        self.max_index = 0
        self.rest = False

    def rewrite(self, r: _Reader, form: Form) -> Form:
        if isinstance(form, Sym):
            name = form.name
            if not name.startswith("%"):
                return form
            if name == "%":
                self.max_index = max(self.max_index, 1)
                return Sym("%1", form.line, form.column)
            if name == "%&":
                self.rest = True
                return form
            if name[1:].isdigit() and 0 < int(name[1:]) <= 20:
                self.max_index = max(self.max_index, int(name[1:]))
                return form
            raise r.error(f"invalid #() argument {name}: use %, %1 ... %20 or %&", k_pos(r, form))
        if isinstance(form, ListForm | VecForm | MapForm | SetForm):
            items = tuple(self.rewrite(r, f) for f in form.items)
            return type(form)(items, form.line, form.column)
        return form


_DISPATCH: Final[dict[str, Callable[[_Reader], Form]]] = {
    "(": _Reader.read_list,
    "[": _Reader.read_vector,
    "{": _Reader.read_map,
    ")": _Reader.read_unexpected_close,
    "]": _Reader.read_unexpected_close,
    "}": _Reader.read_unexpected_close,
    '"': _Reader.read_string,
    "\\": _Reader.read_char,
    "#": _Reader.read_hash,
    "'": _Reader.read_rejected,
    "@": _Reader.read_rejected,
    "`": _Reader.read_rejected,
    "~": _Reader.read_rejected,
    "^": _Reader.read_rejected,
}

_HASH_DISPATCH: Final[dict[str, Callable[[_Reader], Form]]] = {
    "{": _Reader.read_set,
    '"': _Reader.read_regex,
    "(": _Reader.read_anon_fn,
    "#": _Reader.read_symbolic,
}


def read(src: str) -> tuple[Form, ...]:
    """Read every top-level form of ``src``.

    Args:
        src: PTC-Lisp source text.

    Returns:
        The forms, in order (an empty tuple for blank text).

    Raises:
        LispError: category ``"parse"`` with the line and column of the problem.

    Example:
        >>> read("(+ 1 2) :done")
        (ListForm[Sym(+), Lit(1), Lit(2)], Lit(Keyword('done')))
    """
    r = _Reader(src)
    forms: list[Form] = []
    while True:
        r.skip_ws()
        if r.pos >= len(src):
            return tuple(forms)
        forms.append(r.read_form())


def read_one(src: str) -> Form:
    """Read exactly one form (a ``parse`` error when there are none or several)."""
    forms = read(src)
    if len(forms) != 1:
        raise LispError("parse", f"expected exactly one form, found {len(forms)}", line=1, column=1)
    return forms[0]


def read_data(src: str) -> Any:
    """Read one data literal (no symbols) and return it as a runtime value.

    Example:
        >>> read_data('{:a [1 2.5 "x"]}')
        {Keyword('a'): (1, 2.5, 'x')}
    """
    form = read_one(src)
    try:
        return form_to_value(form)
    except ValueError:
        raise LispError(
            "parse", "expected a data literal, found a symbol", line=form.line, column=form.column
        ) from None
