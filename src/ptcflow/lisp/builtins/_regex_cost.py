"""Worst-case cost of a regex search, to cap the input length per pattern.

Python's ``re`` backtracks and cannot be interrupted, and even patterns without nesting are
polynomial on hostile input: searching ``\\w+@`` in 20,000 word characters tries every start
and re-scans the run from each (quadratic, seconds), and ``\\d+\\d+x`` is cubic. So each
pattern gets a *degree* (the exponent of its worst case in the input length ``n``):

* 1: no unbounded quantifier is followed by something that can fail (``\\d+``, ``error.*``);
* 2: some unbounded quantifier is followed by something that can fail (``\\w+@\\w+``);
* 3: two unbounded quantifiers can match the same characters next to each other
  (``\\d+\\d+``, ``.*a.*b``).

A search anchored at one position (``re-matches``, or a pattern starting with ``^``) costs one
degree less. Inputs are capped at ``WORK ** (1 / degree)`` characters (5,000 for degree 2,
about 290 for degree 3) besides ``max_regex_input``: the error tells the model to split the
text (``split-lines``) or to use a plainer pattern. The estimate is conservative (``\\b\\w+\\b``
is degree 2 although it never backtracks far).
"""

from __future__ import annotations

import functools
import importlib
import unicodedata
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

C: ModuleType = importlib.import_module("re._constants")
P: ModuleType = importlib.import_module("re._parser")

WORK: Final = 25_000_000  # backtracking steps accepted in the worst case (a fraction of a second)

_SAMPLE: Final = [chr(c) for c in range(0x250)] + [
    chr(c) for c in (0x00A0, 0x0660, 0x1680, 0x2028, 0x3000, 0x4E00)
]
_INDEX: Final = {c: i for i, c in enumerate(_SAMPLE)}
_OTHER: Final = 1 << len(_SAMPLE)  # stands for every character outside the sample
FULL: Final = (_OTHER << 1) - 1


def _bits(pred: Callable[[str], bool], other: bool = True) -> int:
    mask = _OTHER if other else 0
    for i, c in enumerate(_SAMPLE):
        if pred(c):
            mask |= 1 << i
    return mask


# The sample holds a few non-Latin letters, digits and spaces, so classes need no _OTHER bit.
_DIGIT: Final = _bits(lambda c: unicodedata.category(c) == "Nd", other=False)
_WORD: Final = _bits(lambda c: c.isalnum() or c == "_", other=False)
_SPACE: Final = _bits(str.isspace, other=False)
_CATEGORIES: Final = {
    "CATEGORY_DIGIT": _DIGIT,
    "CATEGORY_NOT_DIGIT": (FULL & ~_DIGIT) | _OTHER,
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": (FULL & ~_WORD) | _OTHER,
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": (FULL & ~_SPACE) | _OTHER,
}


def _char(code: int, fold: bool) -> int:
    c = chr(code)
    mask = 0
    for v in {c, c.lower(), c.upper()} if fold else {c}:
        i = _INDEX.get(v)
        mask |= _OTHER if i is None else 1 << i
    return mask


def _class(items: list[Any], fold: bool) -> int:
    mask = 0
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            mask |= _char(av, fold)
        elif op is C.RANGE:
            lo, hi = av

            def inside(c: str, lo: int = lo, hi: int = hi) -> bool:
                variants = {c, c.swapcase()} if fold else {c}
                return any(len(v) == 1 and lo <= ord(v) <= hi for v in variants)

            mask |= _bits(inside, other=hi > 0x24F)
        elif op is C.CATEGORY:
            mask |= _CATEGORIES.get(str(av), FULL)
        else:
            mask = FULL
    return ((FULL & ~mask) | _OTHER) if negate else mask


def _first(items: list[Any], fold: bool) -> int:
    """The characters a sequence can start with (all of them when it can be empty)."""
    mask = 0
    for op, av in items:
        if op is C.LITERAL:
            return mask | _char(av, fold)
        if op is C.NOT_LITERAL:
            return (FULL & ~_char(av, fold)) | _OTHER
        if op is C.ANY:
            return FULL
        if op is C.IN:
            return mask | _class(av, fold)
        if op is C.SUBPATTERN or op is C.ATOMIC_GROUP:
            return mask | _first(av[-1], fold)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            mask |= _first(av[2], fold)
            if av[0] > 0:
                return mask
            continue
        if op is C.BRANCH:
            return mask | functools.reduce(int.__or__, (_first(b, fold) for b in av[1]), 0)
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        return FULL
    return FULL


def _tokens(items: list[Any], fold: bool, out: list[tuple[str, int, int]]) -> None:
    """Flatten into ("q", mask, min) unbounded quantifiers, ("m", mask, 1) items that can
    fail, and ("start", 0, 0) for a leading ``^``."""
    for op, av in items:
        if op is C.MAX_REPEAT or op is C.MIN_REPEAT:
            lo, hi, body = av
            if hi is C.MAXREPEAT:
                out.append(("q", _first(body, fold), lo))
            elif lo > 0:
                _tokens(body, fold, out)
        elif op is C.POSSESSIVE_REPEAT or op is C.ATOMIC_GROUP:
            body = av[2] if op is C.POSSESSIVE_REPEAT else av
            if op is C.ATOMIC_GROUP or av[0] > 0:
                out.append(("m", _first(body, fold), 1))
        elif op is C.SUBPATTERN:
            _tokens(av[-1], fold, out)
        elif op is C.BRANCH:
            sub: list[tuple[str, int, int]] = []
            for branch in av[1]:
                _tokens(branch, fold, sub)
            kind = "q" if any(t[0] == "q" for t in sub) else "m"
            empty = any(not branch for branch in av[1])
            if kind == "q" or not empty:
                out.append((kind, _first([(op, av)], fold), 0 if empty else 1))
        elif op is C.AT:
            name = str(av)
            out.append(("start", 0, 0) if name in _STARTS else ("m", FULL, 1))
        elif op in (C.ASSERT, C.ASSERT_NOT):
            out.append(("m", FULL, 1))
        elif op is C.LITERAL:
            out.append(("m", _char(av, fold), 1))
        elif op is C.IN or op is C.NOT_LITERAL:
            out.append(("m", _first([(op, av)], fold), 1))
        else:
            out.append(("m", FULL, 1))


_STARTS: Final = frozenset({"AT_BEGINNING", "AT_BEGINNING_STRING"})


def _competing(tokens: list[tuple[str, int, int]]) -> bool:
    open_: list[int] = []  # unbounded quantifiers nothing mandatory has separated yet
    for kind, mask, lo in tokens:
        if kind == "q":
            if any(o & mask for o in open_):
                return True
            open_ = [mask] if lo > 0 else [*open_, mask]
        elif kind == "m":
            open_ = [o for o in open_ if o & mask]
    return False


@functools.lru_cache(maxsize=512)
def degree(source: str, flags: int, anchored: bool) -> int:
    """The worst-case exponent of searching with the pattern (1 = linear).

    Args:
        source: the Python pattern text (already translated from Java syntax).
        flags: the compiled pattern's flags (``re.I`` widens literals, ``re.M`` unanchors ``^``).
        anchored: the search tries one start position only (``fullmatch``).
    """
    fold = bool(flags & 2)  # re.IGNORECASE
    tokens: list[tuple[str, int, int]] = []
    _tokens(list(P.parse(source, flags)), fold, tokens)
    fails_after = [  # an item that can fail after an unbounded quantifier makes it backtrack
        kind == "q" and any(t[0] == "m" or (t[0] == "q" and t[2] > 0) for t in tokens[i + 1 :])
        for i, (kind, _m, _lo) in enumerate(tokens)
    ]
    if not any(fails_after):
        return 1
    d = 3 if _competing(tokens) else 2
    if anchored or (tokens[0][0] == "start" and not flags & 8):  # re.MULTILINE
        d -= 1
    return max(d, 1)


def max_input(source: str, flags: int, anchored: bool) -> int | None:
    """The longest input the pattern may search, or ``None`` for no extra cap."""
    d = degree(source, flags, anchored)
    if d <= 1:
        return None
    return int(WORK ** (1 / d))
