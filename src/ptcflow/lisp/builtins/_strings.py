"""Strings: str, subs, join, split, trim, case, search and replace (also ``clojure.string/``
and ``str/`` where Clojure has them), plus name, keyword, parse-long and parse-double.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ptcflow.lisp._colls import EMPTY_VEC, Map, Vector, vec
from ptcflow.lisp.builtins._regex import as_regex, groups_of, regex_input
from ptcflow.lisp.builtins._registry import MISSING, Registry, integer, iterate, string
from ptcflow.lisp.errors import LimitExceeded, LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.printer import render
from ptcflow.lisp.values import Keyword, Regex, lookup, to_fn

REGISTRY = Registry("strings", "Strings")
add = REGISTRY.add


def _ns(name: str) -> tuple[str, str]:
    return (f"clojure.string/{name}", f"str/{name}")


@add(
    "str",
    "(str & xs)",
    'The concatenation of the values as text (strings as they are, nil as "").',
    needs_budget=True,
)
def str_(budget: Budget, *xs: Any) -> str:
    if len(xs) == 1 and type(xs[0]) is str:
        return xs[0]
    if len(xs) <= 8:  # (str first " " last): a few strings, joined at most 8 x the limit
        try:
            text = "".join(xs)
        except TypeError:  # not all strings: printed under the budget
            return render(xs, budget, what="str")
        n = len(text)
        if n > budget.limits.max_string_length:
            budget.check_string_length(n, "str")
        if n > 1024:
            budget.work(n >> 2)  # copied: a loop growing a string copies it every time
        return text
    return render(xs, budget, what="str")


@add("subs", "(subs s start) (subs s start end)", "The substring from start to end.")
def subs(s: Any, start: Any, end: Any = None) -> str:
    text = string("subs", s)
    a = integer("subs", start, "integer indexes")
    b = len(text) if end is None else integer("subs", end, "integer indexes")
    if not 0 <= a <= b <= len(text):
        raise LispError(
            "type",
            f"subs: indexes {a}..{b} are out of range for a string of {len(text)} characters",
        )
    return text[a:b]


@add(
    "join",
    "(join coll) (join sep coll)",
    "The elements of coll as text, with sep between them.",
    aliases=_ns("join"),
    needs_budget=True,
)
def join(budget: Budget, a: Any, b: Any = MISSING) -> str:
    sep, coll = ("", a) if b is MISSING else (a, b)
    sep_text = sep if type(sep) is str else render((sep,), budget, what="join")
    items = iterate("join", coll)
    if type(coll) is Vector and all(type(x) is str for x in coll):  # sized, then built once
        n = sum(map(len, coll)) + len(sep_text) * max(len(coll) - 1, 0)
        budget.check_string_length(n, "join")
        return sep_text.join(coll)
    return render(items, budget, what="join", sep=sep_text)


@add(
    "split",
    "(split s re) (split s re limit)",
    "The parts of s between matches of re (a regex or a plain string); trailing empty "
    "parts are dropped.",
    aliases=_ns("split"),
    needs_budget=True,
)
def split(budget: Budget, s: Any, sep: Any, limit: Any = None) -> Any:
    text = string("split", s)
    n = 0 if limit is None else integer("split", limit, "an integer limit")
    if type(sep) is str:
        spans = _literal_spans(text, sep)
    else:
        p = as_regex("split", sep)
        spans = ((m.start(), m.end()) for m in p.finditer(regex_input(budget, "split", p, text)))
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        if n > 0 and len(parts) == n - 1:
            break
        if end == 0:
            continue  # Java drops a leading empty match
        if start == end and start >= len(text):
            break
        parts.append(text[pos:start])
        pos = end
    parts.append(text[pos:])
    if n == 0:
        while len(parts) > 1 and parts[-1] == "":
            parts.pop()
    if parts == [""] and text:
        return EMPTY_VEC
    budget.check_size(len(parts), "split")
    return vec(parts)


def _literal_spans(text: str, sep: str) -> Iterator[tuple[int, int]]:
    """Where the plain string ``sep`` occurs in ``text`` (every position when empty)."""
    if not sep:
        yield from ((i, i) for i in range(1, len(text) + 1))
        return
    i = text.find(sep)
    while i >= 0:
        yield i, i + len(sep)
        i = text.find(sep, i + len(sep))


@add("split-lines", "(split-lines s)", "The lines of s.", aliases=_ns("split-lines"))
def split_lines(s: Any) -> Any:
    parts = re.split(r"\r?\n", string("split-lines", s))
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return vec(parts)


@add("trim", "(trim s)", "s without leading and trailing whitespace.", aliases=_ns("trim"))
def trim(s: Any) -> str:
    return string("trim", s).strip()


@add("triml", "(triml s)", "s without leading whitespace.", aliases=_ns("triml"))
def triml(s: Any) -> str:
    return string("triml", s).lstrip()


@add("trimr", "(trimr s)", "s without trailing whitespace.", aliases=_ns("trimr"))
def trimr(s: Any) -> str:
    return string("trimr", s).rstrip()


@add(
    "trim-newline",
    "(trim-newline s)",
    "s without trailing newlines.",
    aliases=_ns("trim-newline"),
)
def trim_newline(s: Any) -> str:
    return string("trim-newline", s).rstrip("\r\n")


@add("upper-case", "(upper-case s)", "s in upper case.", aliases=_ns("upper-case"))
def upper_case(s: Any) -> str:
    return string("upper-case", s).upper()


@add("lower-case", "(lower-case s)", "s in lower case.", aliases=_ns("lower-case"))
def lower_case(s: Any) -> str:
    return string("lower-case", s).lower()


@add(
    "capitalize",
    "(capitalize s)",
    "s with the first character upper case and the rest lower case.",
    aliases=_ns("capitalize"),
)
def capitalize(s: Any) -> str:
    text = string("capitalize", s)
    return text[:1].upper() + text[1:].lower()


@add("blank?", "(blank? s)", "True when s is nil, empty or only whitespace.", aliases=_ns("blank?"))
def is_blank(s: Any) -> bool:
    return s is None or not string("blank?", s).strip()


@add(
    "starts-with?",
    "(starts-with? s prefix)",
    "True when s starts with prefix.",
    aliases=_ns("starts-with?"),
)
def starts_with(s: Any, prefix: Any) -> bool:
    return string("starts-with?", s).startswith(string("starts-with?", prefix))


@add(
    "ends-with?",
    "(ends-with? s suffix)",
    "True when s ends with suffix.",
    aliases=_ns("ends-with?"),
)
def ends_with(s: Any, suffix: Any) -> bool:
    return string("ends-with?", s).endswith(string("ends-with?", suffix))


@add(
    "includes?",
    "(includes? s sub)",
    "True when s contains sub.",
    aliases=_ns("includes?"),
)
def includes(s: Any, sub: Any) -> bool:
    return string("includes?", sub) in string("includes?", s)


@add(
    "index-of",
    "(index-of s value) (index-of s value from)",
    "The index of the first occurrence of value in s, or nil.",
    aliases=_ns("index-of"),
)
def index_of(s: Any, value: Any, start: Any = 0) -> int | None:
    text, sub = string("index-of", s), string("index-of", value)
    i = text.find(sub, max(integer("index-of", start), 0))
    return None if i < 0 else i


@add(
    "last-index-of",
    "(last-index-of s value) (last-index-of s value from)",
    "The index of the last occurrence of value in s, or nil.",
    aliases=_ns("last-index-of"),
)
def last_index_of(s: Any, value: Any, start: Any = None) -> int | None:
    text, sub = string("last-index-of", s), string("last-index-of", value)
    end = len(text) if start is None else integer("last-index-of", start) + len(sub)
    i = text.rfind(sub, 0, max(end, 0))
    return None if i < 0 else i


_DOLLAR = re.compile(r"\\(.)|\$(\d+|\{(\w+)\})", re.S)


def _template(fn: str, replacement: str) -> Callable[[Any], list[Any]]:
    """A match -> pieces function for a Java-style replacement (``$1``, ``${name}``, ``\\$``):
    each piece is literal text, or the number or name of a group (:func:`_fill` sizes and
    joins them)."""
    pieces: list[str | tuple[int | str]] = []
    pos = 0
    for m in _DOLLAR.finditer(replacement):
        pieces.append(replacement[pos : m.start()])
        if m.group(1) is not None:
            pieces.append(m.group(1))
        elif m.group(3) is not None:
            pieces.append((m.group(3),))
        else:  # a group number too long to exist is missing, like any other
            digits = m.group(2)
            pieces.append((int(digits) if len(digits) < 6 else -1,))
        pos = m.end()
    pieces.append(replacement[pos:])
    return lambda m: pieces


def _fill(fn: str, m: Any, pieces: list[Any], room: int, cap: int) -> str:
    """The replacement text for match ``m``, refused before it is built when longer than
    ``room`` characters (what is left of ``cap``, ``max_string_length``)."""
    spans: list[str | tuple[int, int]] = []
    size = 0
    for p in pieces:
        if type(p) is str:
            spans.append(p)
            size += len(p)
            continue
        try:
            start, end = m.span(p[0] if type(p[0]) is int else m.re.groupindex[p[0]])
        except (IndexError, KeyError):
            raise LispError(
                "type",
                f"{fn}: the replacement refers to group {p[0]}, which the pattern does not have",
            ) from None
        if start >= 0:
            spans.append((start, end))
            size += end - start
    if size > room:
        raise LimitExceeded(
            "max_string_length",
            f"{fn} would build a string of more than {cap} characters, over the limit; build "
            "a shorter string",
        )
    text = m.string
    return "".join([p if type(p) is str else text[p[0] : p[1]] for p in spans])


def _replace(budget: Budget, fn: str, s: Any, match: Any, rep: Any, count: int) -> str:
    text = string(fn, s)
    if type(match) is str:
        if type(rep) is not str:
            raise type_error(fn, "a string replacement for a string match", rep)
        if match == "":
            raise LispError("type", f"{fn}: the string to replace must not be empty")
        n = text.count(match) if count == 0 else min(text.count(match), 1)
        budget.check_string_length(len(text) + n * (len(rep) - len(match)), fn)
        return text.replace(match, rep, -1 if count == 0 else 1)
    if type(match) is not Regex:
        raise type_error(fn, "a string or regex to match", match)
    regex_input(budget, fn, match.pattern, text)
    if type(rep) is str:
        pieces_of = _template(fn, rep)
    elif callable(rep) or type(rep) is Keyword:
        f = to_fn(rep, fn)

        def pieces_of(m: Any) -> list[Any]:
            limit = room + m.end() - m.start()
            return [render((f(groups_of(m)),), budget, what=fn, limit=limit)]

    else:
        raise type_error(fn, "a string or function replacement", rep)
    cap = budget.limits.max_string_length
    room = cap - len(text)

    def fill(m: Any) -> str:  # the text outside matches is kept: count only what grows
        nonlocal room
        piece = _fill(fn, m, pieces_of(m), room + m.end() - m.start(), cap)
        room -= len(piece) - (m.end() - m.start())
        return piece

    out: str = match.pattern.sub(fill, text, count=count)
    budget.charge(len(out), fn)
    return out


@add(
    "replace",
    "(replace s match replacement) (replace smap coll)",
    "s with every match (a string or regex) replaced; with a regex, the replacement may use "
    "$1 for groups or be a function of the match. (replace smap coll) maps coll via smap.",
    aliases=_ns("replace"),
    needs_budget=True,
)
def replace(budget: Budget, s: Any, match: Any, rep: Any = MISSING) -> Any:
    if rep is MISSING:  # core (replace smap coll)
        smap = s
        if type(smap) is not dict and type(smap) is not Map:
            raise type_error("replace", "a string and a match and a replacement", smap)
        return vec([lookup(smap, x, x) for x in iterate("replace", match)])
    return _replace(budget, "replace", s, match, rep, 0)


@add(
    "replace-first",
    "(replace-first s match replacement)",
    "s with the first match replaced.",
    aliases=_ns("replace-first"),
    needs_budget=True,
)
def replace_first(budget: Budget, s: Any, match: Any, rep: Any) -> str:
    return _replace(budget, "replace-first", s, match, rep, 1)


@add(
    "clojure.string/reverse",
    "(clojure.string/reverse s)",
    "s with its characters in reverse order.",
    aliases=("str/reverse",),
)
def reverse_str(s: Any) -> str:
    return string("str/reverse", s)[::-1]


@add("name", "(name x)", "The name of a keyword (without namespace) or the string itself.")
def name(x: Any) -> str:
    if type(x) is Keyword:
        n: str = x.name
        i = n.find("/")
        return n[i + 1 :] if 0 < i < len(n) - 1 else n
    if type(x) is str:
        return x
    raise type_error("name", "a keyword or string", x)


@add("namespace", "(namespace k)", "The namespace of a keyword such as :user/id, or nil.")
def namespace(x: Any) -> str | None:
    if type(x) is not Keyword:
        raise type_error("namespace", "a keyword", x)
    n: str = x.name
    i = n.find("/")
    return n[:i] if 0 < i < len(n) - 1 else None


@add("keyword", "(keyword name) (keyword ns name)", "The keyword with that name, or nil for nil.")
def keyword(a: Any, b: Any = MISSING) -> Keyword | None:
    if b is not MISSING:
        ns = string("keyword", a) if a is not None else None
        n = string("keyword", b)
        return Keyword(n if ns is None else f"{ns}/{n}")
    if type(a) is Keyword:
        return a
    if a is None:
        return None
    return Keyword(string("keyword", a))


_LONG = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[dDfF]?")


@add("parse-long", "(parse-long s)", "The integer written in s, or nil when s is not one.")
def parse_long(s: Any) -> int | None:
    text = string("parse-long", s)
    if len(text) > 20 or not _LONG.fullmatch(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


@add("parse-double", "(parse-double s)", "The number written in s as a float, or nil.")
def parse_double(s: Any) -> float | None:
    text = string("parse-double", s).strip()
    if len(text) > 400 or not _DOUBLE.fullmatch(text):
        return None
    text = text.rstrip("dDfF").replace("Infinity", "inf")
    return float(text)
