"""The reader: PTC-Lisp text to forms with line and column.

One regular expression (:data:`_TOKEN`) splits the text into tokens, each classified by its
opening character: brackets (``( [ { #{ #(``), strings ``"``, characters ``\\``, regexes
``#"``, discards ``#_``, and atoms (numbers, ``nil``/``true``/``false``, keywords, symbols,
``##Inf``). Dispatch is table-driven: :data:`_LEAVES` builds a leaf form per token kind and
:data:`_COLLECTIONS` builds a collection per opener. An explicit stack replaces recursion, so
deeply nested text cannot exhaust the Python stack. Errors are ``LispError("parse", ...)``
with the position of the offending character and a message that says how to fix the text.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp._forms import Form, ListForm, Lit, MapForm, SetForm, Sym, VecForm, form_to_value
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Keyword

__all__ = ("MAX_NESTING", "Forms", "read", "read_data", "read_one")

_TICK: Final = 256  # tokens read between two charges to the budget
_TICK_MASK: Final = _TICK - 1

MAX_NESTING: Final = 256
"""Deepest bracket nesting the reader accepts (deeper text is a ``parse`` error)."""

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
_SURROGATE: Final = (
    "\\u{} is half of a UTF-16 surrogate pair, which is not a character on its own: write "
    'the character itself, e.g. "😀"'
)
_SYMBOLIC: Final = {"Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
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
    """Error positions for one source text (line starts computed only when needed)."""

    __slots__ = ("_line_starts", "defs", "src")

    def __init__(self, src: str) -> None:
        self.src = src
        self._line_starts: list[int] | None = None
        self.defs: set[str] = set()  # names of every (def x ...) / (defn x ...) read

    def where(self, pos: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.src)]
        line = bisect.bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    def error(self, message: str, pos: int) -> LispError:
        line, col = self.where(pos)
        return LispError("parse", message, line=line, column=col)


class _Open:
    """A collection being read: its opener, start, position and items so far."""

    __slots__ = ("column", "discard", "discard_pos", "items", "line", "opener", "start")

    def __init__(self, opener: str, start: int, line: int, column: int) -> None:
        self.opener = opener
        self.start = start
        self.line = line
        self.column = column
        self.items: list[Form] = []
        self.discard = 0  # pending #_ in this collection
        self.discard_pos = 0


_TOKEN: Final = re.compile(
    r"""
    [\s,]*(?:;[^\n]*[\s,]*)*  # whitespace, commas and comments before every token
    (?:(?P<atom>\#\#[^\s,()\[\]{}"';@^`~\\]*|[^\s,()\[\]{}"';@^`~\\\#][^\s,()\[\]{}"';@^`~\\]*)
    |(?P<open>[(\[{]|\#[{(])
    |(?P<close>[)\]}])
    |(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")  # unrolled: no backtracking state per character
    |(?P<rx>\#"[^"\\]*(?:\\.[^"\\]*)*")
    |(?P<disc>\#_)
    |(?P<var>\#')
    |(?P<char>\\(?:.(?:[^\W_]|-)*)?)
    |(?P<eof>\Z)
    |(?P<other>.))
    """,
    re.VERBOSE | re.DOTALL,
)
_DEF_FORMS: Final = frozenset({"def", "defn", "defn-", "defonce"})


class Forms(tuple[Form, ...]):
    """The forms of a program, plus ``defs``: every name a ``def``/``defn`` defines."""

    defs: frozenset[str]


_CLOSER_OF: Final = {"(": ")", "[": "]", "{": "}", "#{": "}", "#(": ")"}
_NAME_OF: Final = {"(": "(", "[": "[", "{": "{", "#{": "#{", "#(": "#("}


# Group numbers of _TOKEN (``m.lastindex`` is cheaper than ``m.lastgroup``).
_G_OPEN, _G_CLOSE, _G_DISC, _G_ATOM, _G_EOF = (
    _TOKEN.groupindex[g] for g in ("open", "close", "disc", "atom", "eof")
)
_G_VAR: Final = _TOKEN.groupindex["var"]
_LEAF_OF: Final = {_TOKEN.groupindex[g]: g for g in ("str", "rx", "char")}
_SYMBOL: Final[Any] = object()  # marks an atom token that reads as a symbol
_MISS: Final[Any] = object()
_ATOMS: dict[str, Any] = {}
"""Atom text -> its literal value (or ``_SYMBOL``): most tokens repeat across programs."""
_MAX_ATOMS: Final = 8192


def _atom(r: _Reader, text: str, pos: int, line: int, col: int) -> Form:
    """The form of an atom token, through the cache of :data:`_ATOMS`."""
    value = _ATOMS.get(text, _MISS)
    if value is _SYMBOL:
        return Sym(text, line, col)
    if value is not _MISS:
        return Lit(value, line, col)
    form = _classify(r, text, pos, line, col)
    if len(_ATOMS) >= _MAX_ATOMS:
        _ATOMS.clear()
    _ATOMS[text] = _SYMBOL if type(form) is Sym else form.value  # type: ignore[attr-defined]
    return form


def _read_forms(src: str, budget: Budget | None) -> Forms:
    """Tokenize with one regex and build forms with an explicit stack (no recursion).

    With a ``budget``, every token counts a step (charged every :data:`_TICK` tokens), so
    reading a long text is bounded by the run's steps and time, and yields to the event loop.
    """
    r = _Reader(src)
    top = _Open("", 0, 1, 1)
    stack = [top]
    cur = top
    append = cur.items.append
    line, line_start, last = 1, 0, 0
    count, rfind = src.count, src.rfind
    atoms, symbol, miss = _ATOMS, _SYMBOL, _MISS
    g_atom, g_open, g_close = _G_ATOM, _G_OPEN, _G_CLOSE
    anon_depth = 0
    discards = 0  # pending #_ at every level (most programs have none)
    n = 0
    for n, m in enumerate(_TOKEN.finditer(src), 1):
        if not n & _TICK_MASK and budget is not None:
            budget.step(_TICK)
        kind = m.lastindex
        if kind == _G_EOF or kind is None:
            break
        pos = m.start(kind)
        nl = count("\n", last, pos)
        if nl:
            line += nl
            line_start = rfind("\n", last, pos) + 1
        last = pos
        col = pos - line_start + 1
        text = m[kind]
        form: Form
        if kind == g_atom:
            value = atoms.get(text, miss)
            if value is symbol:
                form = Sym(text, line, col)
            elif value is miss:
                form = _atom(r, text, pos, line, col)
            else:
                form = Lit(value, line, col)
        elif kind == g_open:
            if text == "#(":
                if anon_depth:
                    raise r.error(
                        "#(...) functions cannot be nested: use (fn [x] ...) for the inner one",
                        pos,
                    )
                anon_depth += 1
            cur = _Open(text, pos, line, col)
            append = cur.items.append
            stack.append(cur)
            if len(stack) > MAX_NESTING + 1:
                raise r.error(
                    f"forms are nested more than {MAX_NESTING} deep: flatten the data", pos
                )
            continue
        elif kind == g_close:
            if cur is top:
                raise r.error(f"unexpected {text} with no matching opening bracket: remove it", pos)
            closer = _CLOSER_OF[cur.opener]
            if text != closer:
                raise r.error(
                    f"expected {closer} to close {_NAME_OF[cur.opener]} opened at line "
                    f"{cur.line}, column {cur.column}, found {text}: check the brackets",
                    pos,
                )
            if discards and cur.discard:
                raise r.error("#_ must be followed by a form to discard", cur.discard_pos)
            stack.pop()
            done = cur
            cur = stack[-1]
            append = cur.items.append
            form = _COLLECTIONS[done.opener](r, done, tuple(done.items))
            if done.opener == "#(":
                anon_depth -= 1
        elif kind in _LEAF_OF:
            form = _LEAVES[_LEAF_OF[kind]](r, text, pos, line, col)
        elif kind == _G_VAR:  # #'x reads as x: a var is its value (no mutation)
            continue
        elif kind == _G_DISC:
            cur.discard += 1
            cur.discard_pos = pos
            discards += 1
            continue
        else:
            raise _other_error(r, text, pos)
        if discards and cur.discard:
            cur.discard -= 1
            discards -= 1
        else:
            append(form)
    if cur is not top:
        raise r.error(
            f"unclosed {_NAME_OF[cur.opener]} opened at line {cur.line}, column {cur.column}: "
            f"add a closing {_CLOSER_OF[cur.opener]}",
            cur.start,
        )
    if top.discard:
        raise r.error("#_ must be followed by a form to discard", top.discard_pos)
    forms = Forms(top.items)
    forms.defs = frozenset(r.defs)
    if budget is not None:
        budget.step(n & _TICK_MASK)
    return forms


def _list(r: _Reader, done: _Open, items: tuple[Form, ...]) -> Form:
    if len(items) > 1 and type(items[0]) is Sym and items[0].name in _DEF_FORMS:
        name = items[1]
        if type(name) is Sym:
            r.defs.add(name.name)
    return ListForm(items, done.line, done.column)


def _vector(r: _Reader, done: _Open, items: tuple[Form, ...]) -> Form:
    return VecForm(items, done.line, done.column)


def _map(r: _Reader, done: _Open, items: tuple[Form, ...]) -> Form:
    if len(items) % 2:
        raise r.error(
            f"a map literal needs an even number of forms (key value pairs), got {len(items)}",
            done.start,
        )
    _check_unique(r, items[::2], "map key", done.start)
    return MapForm(items, done.line, done.column)


def _set(r: _Reader, done: _Open, items: tuple[Form, ...]) -> Form:
    _check_unique(r, items, "set element", done.start)
    return SetForm(items, done.line, done.column)


def _anon_fn(r: _Reader, done: _Open, items: tuple[Form, ...]) -> Form:
    """``#(...)`` becomes ``(fn [%1 ... & %&] (...))``."""
    line, col = done.line, done.column
    info = _AnonArgs()
    body_form = info.rewrite(r, ListForm(items, line, col))
    params: list[Form] = [Sym(f"%{i}", line, col) for i in range(1, info.max_index + 1)]
    if info.rest:
        params += [Sym("&", line, col), Sym("%&", line, col)]
    return ListForm((Sym("fn", line, col), VecForm(tuple(params), line, col), body_form), line, col)


def _unescape(r: _Reader, text: str, start: int, *, regex: bool = False) -> str:
    body = text[2:-1] if regex else text[1:-1]
    if "\\" not in body:
        return body
    offset = start + (2 if regex else 1)
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        bs = body.find("\\", i)
        if bs < 0:
            out.append(body[i:])
            break
        out.append(body[i:bs])
        esc = body[bs + 1]
        if regex:
            out.append('"' if esc == '"' else "\\" + esc)
            i = bs + 2
        elif esc == "u":
            digits = body[bs + 2 : bs + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise r.error("\\u in a string needs four hex digits, e.g. \\u00e9", offset + bs)
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF:
                raise r.error(_SURROGATE.format(digits), offset + bs)
            out.append(chr(code))
            i = bs + 6
        elif esc in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[esc])
            i = bs + 2
        else:
            raise r.error(
                f'unknown escape \\{esc} in a string: use \\n \\t \\r \\" \\\\ or \\uXXXX',
                offset + bs,
            )
    return "".join(out)


def _char(r: _Reader, text: str, start: int, line: int, col: int) -> Form:
    name = text[1:]
    if not name:
        raise r.error("\\ must be followed by a character, e.g. \\a or \\space", start)
    if len(name) == 1:
        return Lit(name, line, col)
    if name in _CHAR_NAMES:
        return Lit(_CHAR_NAMES[name], line, col)
    if name[0] == "u" and len(name) == 5:
        try:
            code = int(name[1:], 16)
        except ValueError:
            pass
        else:
            if 0xD800 <= code <= 0xDFFF:
                raise r.error(_SURROGATE.format(name[1:]), start)
            return Lit(chr(code), line, col)
    raise r.error(
        f"unknown character \\{name}: use one character (\\a), \\newline, \\space, "
        "\\tab or \\uXXXX",
        start,
    )


def _regex(r: _Reader, text: str, start: int, line: int, col: int) -> Form:
    from ptcflow.lisp.builtins import compile_regex

    pattern = _unescape(r, text, start, regex=True)
    try:
        value = compile_regex(pattern)
    except LispError as exc:
        category = "parse" if exc.category == "type" else exc.category
        raise LispError(category, exc.message, line=line, column=col) from None
    return Lit(value, line, col)


def _string(r: _Reader, text: str, start: int, line: int, col: int) -> Form:
    return Lit(_unescape(r, text, start), line, col)


def _other_error(r: _Reader, ch: str, pos: int) -> LispError:
    if ch in _REJECTED:
        return r.error(_REJECTED[ch], pos)
    if ch == '"':
        return r.error('unterminated string: add the closing "', pos)
    if ch == "#":
        nxt = r.src[pos + 1 : pos + 2]
        if nxt == '"':
            return r.error('unterminated regex: add the closing "', pos)
        return r.error(
            f'unknown dispatch #{nxt}: use #{{...}} for sets, #"..." for regexes, '
            "#(...) for short functions, #_ to discard a form, ##Inf ##-Inf ##NaN",
            pos,
        )
    return r.error(f"unexpected character {ch!r}", pos)  # pragma: no cover


def _classify(r: _Reader, tok: str, start: int, line: int, col: int) -> Form:
    c0 = tok[0]
    if c0 == "#":
        value = _SYMBOLIC.get(tok[2:])
        if value is None:
            raise r.error(f"unknown symbolic value {tok}: use ##Inf, ##-Inf or ##NaN", start)
        return Lit(value, line, col)
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
    if tok.endswith("/") and tok != "/":
        raise r.error(f"invalid symbol {tok}", start)
    return Sym(tok, line, col)


_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**63 - 1


def _int(r: _Reader, tok: str, digits: str, base: int, start: int) -> int:
    """An integer literal, which must fit in 64 bits (a ``parse`` error otherwise; the
    digits are not even converted when there are too many of them)."""
    n = int(digits, base) if len(digits) <= 24 else None
    if n is None or not _MIN_INT <= n <= _MAX_INT:
        short = tok if len(tok) <= 30 else tok[:27] + "..."
        raise r.error(
            f"the integer {short} does not fit in 64 bits (from {_MIN_INT} to {_MAX_INT}); "
            "write a float such as 1e20 for a very large number",
            start,
        )
    return n


def _number(r: _Reader, tok: str, start: int) -> int | float:
    if _INT_RE.fullmatch(tok):
        return _int(r, tok, tok, 10, start)
    m = _HEX_RE.fullmatch(tok)
    if m:
        return _int(r, tok, m.group(1) + m.group(2), 16, start)
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
    r.where(0)
    assert r._line_starts is not None
    return r._line_starts[form.line - 1] + form.column - 1


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


_LEAVES: Final[dict[str | None, Callable[[_Reader, str, int, int, int], Form]]] = {
    "atom": _classify,
    "str": _string,
    "char": _char,
    "rx": _regex,
}
"""Leaf tokens, by kind (the kind comes from the token's opening character)."""

_COLLECTIONS: Final[dict[str, Callable[[_Reader, _Open, tuple[Form, ...]], Form]]] = {
    "(": _list,
    "[": _vector,
    "{": _map,
    "#{": _set,
    "#(": _anon_fn,
}
"""Collections, by opening bracket."""


def read(src: str, budget: Budget | None = None) -> tuple[Form, ...]:
    """Read every top-level form of ``src``.

    Args:
        src: PTC-Lisp source text.
        budget: a run's budget: each token counts a step (the runner reads in the program's
            greenlet, so a long text yields to the event loop and respects the deadline).

    Returns:
        The forms, in order (an empty tuple for blank text).

    Raises:
        LispError: category ``"parse"`` with the line and column of the problem.

    Example:
        >>> read("(+ 1 2) :done")
        (ListForm[Sym(+), Lit(1), Lit(2)], Lit(Keyword('done')))
    """
    return _read_forms(src, budget)


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
