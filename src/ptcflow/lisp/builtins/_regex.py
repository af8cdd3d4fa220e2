"""Regular expressions: re-pattern, re-find, re-matches, re-seq, and the safety rule.

Python's regex engine backtracks and cannot be interrupted, so a pattern is refused
(a ``limit`` error) when it risks catastrophic backtracking. The rule, checked on the parsed
pattern:

1. no backreferences (``\\1``, ``(?P=name)``) and no conditional groups ``(?(1)...)``;
2. no quantified group that contains an unbounded quantifier, such as ``(a+)+``, ``(a*)*``,
   ``(\\w+\\s?)*`` or ``(.*a){3}``: write the repetition without nesting;
3. no unbounded quantifier over an alternation that can match the same text in two ways:
   branches that start with the same character, two empty branches, or an empty branch
   next to one that starts like the next repetition, such as ``(a|a)*``, ``(ab|a.)+`` or
   ``(a|aa)+``.

Inputs longer than ``max_regex_input`` characters are refused as well, and so are inputs
longer than the pattern's own cap: polynomial backtracking (``\\w+@``, ``\\d+\\d+x``)
is still slow on long hostile input, see :mod:`._regex_cost`. Patterns use Java
syntax where it differs from Python's: ``(?<name>...)`` named groups and ``\\z`` work.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any

from ptcflow.lisp._colls import vec
from ptcflow.lisp.builtins._regex_cost import max_input
from ptcflow.lisp.builtins._registry import Registry
from ptcflow.lisp.errors import LimitExceeded, LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Regex

C: ModuleType = importlib.import_module("re._constants")  # the parsed-pattern opcodes
P: ModuleType = importlib.import_module("re._parser")  # the stdlib regex parser

REGISTRY = Registry("regex", "Regular expressions")
add = REGISTRY.add

_CACHE: dict[str, Regex] = {}  # compiled-and-checked patterns; bounded below
_CACHE_MAX = 512
_ANY = "any"


def _unsafe(pattern: str, why: str) -> LimitExceeded:
    return LimitExceeded(
        "regex_safety",
        f'regex #"{pattern}" is refused: {why}. Patterns may not nest quantifiers like '
        "(a+)+, repeat overlapping alternatives like (a|a)*, or use backreferences",
    )


def _first_set(items: list[Any]) -> set[Any] | str | None:
    """The characters a parsed sequence can start with; ``_ANY`` when unknown; ``None`` when
    the sequence can match the empty string."""
    for op, av in items:
        if op is C.LITERAL:
            return {av}
        if op is C.IN or op is C.ANY or op is C.NOT_LITERAL:
            if op is C.IN and all(o is C.LITERAL for o, _ in av):
                return {v for _, v in av}
            return _ANY
        if op is C.SUBPATTERN:
            s = _first_set(av[-1])
            if s is not None:
                return s
            continue
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, _hi, body = av
            s = _first_set(body)
            if lo > 0 and s is not None:
                return s
            return _ANY  # optional prefix: be conservative
        if op is C.AT or op is C.ASSERT or op is C.ASSERT_NOT:
            continue
        return _ANY
    return None


def _has_unbounded(items: list[Any]) -> bool:
    for op, av in items:
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            if av[1] is C.MAXREPEAT or _has_unbounded(av[2]):
                return True
        elif op is C.SUBPATTERN:
            if _has_unbounded(av[-1]):
                return True
        elif op is C.BRANCH:
            if any(_has_unbounded(b) for b in av[1]):
                return True
        elif op in (C.ASSERT, C.ASSERT_NOT, C.ATOMIC_GROUP) and _has_unbounded(av[-1]):
            return True
    return False


def _overlaps(a: set[Any] | str | None, b: set[Any] | str | None) -> bool:
    if a is None or b is None:
        return False
    if a == _ANY or b == _ANY:
        return True
    return bool(a & b)  # type: ignore[operator]


def _ambiguous(items: list[Any], follow: set[Any] | str | None) -> bool:
    """Whether an alternation in ``items`` can match the same text in two ways: two branches
    start alike, two are empty, or an empty branch competes with a branch that starts like
    what follows it (``follow``: the next iteration of the enclosing repeat)."""
    for i, (op, av) in enumerate(items):
        if op is not C.SUBPATTERN and op is not C.BRANCH:
            continue
        rest = _first_set(items[i + 1 :])
        after = follow if rest is None else rest
        if op is C.SUBPATTERN:
            if _ambiguous(av[-1], after):
                return True
            continue
        firsts = [_first_set(branch) for branch in av[1]]
        starts = [f for f in firsts if f is not None]
        if len(firsts) - len(starts) > 1:
            return True
        if any(_overlaps(x, y) for j, x in enumerate(starts) for y in starts[j + 1 :]):
            return True
        if len(starts) < len(firsts) and any(_overlaps(x, after) for x in starts):
            return True
        if any(_ambiguous(list(branch), after) for branch in av[1]):
            return True
    return False


def _check(pattern: str, items: list[Any]) -> None:
    for op, av in items:
        if op is C.GROUPREF or op is C.GROUPREF_EXISTS:
            raise _unsafe(pattern, "backreferences and conditional groups are not allowed")
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            _lo, hi, body = av
            if (hi is C.MAXREPEAT or hi > 1) and _has_unbounded(body):
                raise _unsafe(pattern, "a repeated group contains an unbounded quantifier")
            if hi is C.MAXREPEAT and _ambiguous(body, _first_set(body) or _ANY):
                raise _unsafe(pattern, "a repeated alternation has overlapping branches")
            _check(pattern, body)
        elif op is C.SUBPATTERN:
            _check(pattern, av[-1])
        elif op is C.BRANCH:
            for b in av[1]:
                _check(pattern, b)
        elif op in (C.ASSERT, C.ASSERT_NOT, C.ATOMIC_GROUP):
            _check(pattern, av[-1])


_JAVA_NAMED = re.compile(r"(?<!\\)\(\?<(?![=!])")


def compile_regex(source: str) -> Regex:
    """Check ``source`` against the safety rule and compile it (Java syntax accepted).

    Args:
        source: the pattern text.

    Returns:
        The :class:`~ptcflow.lisp.values.Regex`.

    Raises:
        LispError: the pattern is invalid (``type``) or unsafe (``limit``).
    """
    cached = _CACHE.get(source)
    if cached is not None:
        return cached
    text = _JAVA_NAMED.sub("(?P<", source).replace("\\z", "\\Z")
    try:
        parsed = P.parse(text)
    except re.error as e:
        raise LispError("type", f'invalid regex #"{source}": {e}') from None
    _check(source, list(parsed))
    try:
        rx = Regex(re.compile(text))
    except (re.error, OverflowError, RecursionError) as e:
        raise LispError("type", f'invalid regex #"{source}": {e}') from None
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[source] = rx
    return rx


def as_regex(fn: str, x: Any) -> re.Pattern[str]:
    """The compiled pattern of a regex value (or of a string, checked and compiled)."""
    if type(x) is Regex:
        return x.pattern
    if type(x) is str:
        return compile_regex(x).pattern
    raise type_error(fn, 'a regex such as #"\\d+"', x)


def check_input(
    budget: Budget, fn: str, p: re.Pattern[str], s: str, anchored: bool = False
) -> None:
    """Refuse inputs over ``max_regex_input``, or over what this pattern can search quickly
    (see :mod:`._regex_cost`): polynomial backtracking cannot be interrupted once started.

    Raises:
        LimitExceeded: the input is too long for the limit or for the pattern.
    """
    budget.check_regex_input(s, fn)
    cap = max_input(p.pattern, p.flags, anchored)
    if cap is not None and len(s) > cap:
        raise LimitExceeded(
            "max_regex_input",
            f'{fn}: #"{p.pattern}" can take very long on a string of {len(s)} characters '
            f"(this pattern is limited to {cap}, as it backtracks); split the text first, "
            "e.g. (mapcat #(re-seq re %) (split-lines text)), or use a simpler pattern "
            "(includes?, starts-with?, a pattern without two adjacent + or * parts)",
        )


def _input(budget: Budget, fn: str, p: re.Pattern[str], s: Any, anchored: bool = False) -> str:
    if type(s) is not str:
        raise type_error(fn, "a string to match", s)
    check_input(budget, fn, p, s, anchored)
    return s


def _groups(m: re.Match[str]) -> Any:
    if m.re.groups == 0:
        return m.group(0)
    return vec((m.group(0), *m.groups()))


@add("re-pattern", "(re-pattern s)", "A regex compiled from the string s.")
def re_pattern(s: Any) -> Regex:
    if type(s) is Regex:
        return s
    if type(s) is not str:
        raise type_error("re-pattern", "a string", s)
    return compile_regex(s)


@add(
    "re-find",
    "(re-find re s)",
    "The first match of re in s: the matched string, or [whole group1 ...] when re has "
    "groups; nil when there is none.",
    needs_budget=True,
)
def re_find(budget: Budget, rx: Any, s: Any) -> Any:
    p = as_regex("re-find", rx)
    m = p.search(_input(budget, "re-find", p, s))
    return None if m is None else _groups(m)


@add(
    "re-matches",
    "(re-matches re s)",
    "Like re-find, but re must match the whole of s.",
    needs_budget=True,
)
def re_matches(budget: Budget, rx: Any, s: Any) -> Any:
    p = as_regex("re-matches", rx)
    m = p.fullmatch(_input(budget, "re-matches", p, s, anchored=True))
    return None if m is None else _groups(m)


@add(
    "re-seq",
    "(re-seq re s)",
    "All matches of re in s (as re-find returns them); nil when there are none.",
    needs_budget=True,
)
def re_seq(budget: Budget, rx: Any, s: Any) -> Any:
    p = as_regex("re-seq", rx)
    out = []
    limit = budget.limits.max_collection_size
    for m in p.finditer(_input(budget, "re-seq", p, s)):
        out.append(_groups(m))
        if len(out) > limit:
            break
    budget.check_size(len(out), "re-seq")
    return vec(out) or None
