"""Regular expressions on RE2: re-pattern, re-find, re-matches, re-seq.

Patterns run on RE2 (``google-re2``), which matches in time linear in the input by
construction: no pattern can backtrack catastrophically, so no pattern needs to be judged
unsafe. What RE2 cannot do is refused with a message naming an alternative: backreferences
(``\\1``, ``\\k<name>``), lookahead and lookbehind (``(?=...)``, ``(?<!...)``), atomic groups
and possessive quantifiers. Patterns use Java syntax where it differs from RE2's:
``\\uXXXX`` escapes and ``\\Z`` work. As in Java, ``\\d``, ``\\w`` and ``\\s`` are ASCII
classes (``\\p{L}`` matches any letter).

Inputs longer than ``max_regex_input`` characters are refused (a plain size bound), and so
are patterns longer than :data:`MAX_PATTERN_LENGTH`. RE2's time is linear in the text times
the pattern's program size: that product is bounded too (:data:`MAX_REGEX_WORK`).
"""

from __future__ import annotations

import re
from typing import Any, Final

import re2

from ptcflow.lisp._colls import vec
from ptcflow.lisp.builtins._registry import Registry
from ptcflow.lisp.errors import LimitExceeded, LispError, type_error
from ptcflow.lisp.limits import Budget, active_budget
from ptcflow.lisp.values import Regex

REGISTRY = Registry("regex", "Regular expressions")
add = REGISTRY.add

MAX_PATTERN_LENGTH: Final = 10_000
"""The longest pattern accepted (compiling is linear in it, and bounded by RE2's memory cap)."""

MAX_REGEX_WORK: Final = 2_000_000
"""The most characters x program instructions one match may scan (about 20 ms at worst, 9 ns each)."""

_WORK_PER_STEP: Final = 8192  # characters x instructions that count one step

_COMPILE_STEPS: Final = 64  # steps one compilation counts (about its cost in calls)
_MAX_MEM: Final = 2 << 20  # bytes one compiled pattern may use (RE2's default is 8 MiB)
_CACHE: dict[str, Regex] = {}  # compiled patterns by source; bounded below
_CACHE_MAX: Final = 128


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors are reported to the program, not to stderr
    options.max_mem = _MAX_MEM
    return options


_OPTIONS: Final = _options()

# The Java spellings RE2 does not read, rewritten (an escaped backslash is kept as it is).
_JAVA_ESCAPE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _java_escape(m: re.Match[str]) -> str:
    esc = m.group(1)
    if esc[0] == "u" and len(esc) == 5:
        return "\\x{" + esc[1:] + "}"
    if esc == "Z":
        return "\\z"
    return m.group(0)


_ALTERNATIVES: Final = (
    (
        ("invalid escape sequence: \\1", "invalid escape sequence: \\2",
         "invalid escape sequence: \\3", "invalid escape sequence: \\4",
         "invalid escape sequence: \\5", "invalid escape sequence: \\6",
         "invalid escape sequence: \\7", "invalid escape sequence: \\8",
         "invalid escape sequence: \\9", "invalid escape sequence: \\k",
         "invalid perl operator: (?P="),
        "backreferences (\\1, \\k<name>) are not supported; capture both parts and compare "
        'them: (let [[_ a b] (re-find #"(\\w+) (\\w+)" s)] (= a b))',
    ),
    (
        ("invalid perl operator: (?=", "invalid perl operator: (?!"),
        "lookahead (?=...) (?!...) is not supported; match the following text too and take "
        'a group: (second (re-find #"(\\d+)px" s)), or test it with a second regex',
    ),
    (
        ("invalid perl operator: (?<=", "invalid perl operator: (?<!"),
        "lookbehind (?<=...) (?<!...) is not supported; match the preceding text too and "
        'take a group: (second (re-find #"\\$(\\d+)" s)), or test it with a second regex',
    ),
    (
        ("invalid perl operator: (?>",),
        "atomic groups (?>...) are not needed: matching never backtracks; write (?:...)",
    ),
    (
        ("bad repetition operator: *+", "bad repetition operator: ++",
         "bad repetition operator: ?+", "bad repetition operator: }+"),
        "possessive quantifiers (*+ ++ ?+) are not needed: matching never backtracks; "
        "write * + ? instead",
    ),
    (
        ("invalid perl operator: (?x",),
        "free-spacing mode (?x) is not supported; remove the spaces and comments",
    ),
)  # fmt: skip


def _refusal(source: str, message: str) -> LispError:
    if message == "invalid perl operator: (?P" and "(?P=" in source:
        message += "="  # RE2 names only the start of Python's named backreference
    for prefixes, advice in _ALTERNATIVES:
        if message.startswith(prefixes):
            return LispError("type", f'regex #"{source}" is not supported: {advice}')
    return LispError("type", f'invalid regex #"{source}": {message}')


def compile_regex(source: str) -> Regex:
    """Compile ``source`` (Java syntax) on RE2.

    Args:
        source: the pattern text.

    Returns:
        The :class:`~ptcflow.lisp.values.Regex`.

    Raises:
        LispError: the pattern is invalid or uses what RE2 cannot do (category ``type``;
            the message names an alternative), or is longer than :data:`MAX_PATTERN_LENGTH`
            (``limit``).

    Example:
        >>> compile_regex(r"(?<year>\\d{4})").source
        '(?<year>\\\\d{4})'
    """
    cached = _CACHE.get(source)
    if cached is not None:
        return cached
    budget = active_budget()
    if budget is not None:  # compiling takes tens of µs: (map re-pattern strings) is work
        budget.step(_COMPILE_STEPS + len(source) // 16)
    if len(source) > MAX_PATTERN_LENGTH:
        raise LimitExceeded(
            "max_regex_pattern",
            f"a regex of {len(source)} characters is over the limit of {MAX_PATTERN_LENGTH}; "
            "write a shorter pattern (or test the parts with includes?)",
        )
    text = _JAVA_ESCAPE.sub(_java_escape, source) if "\\" in source else source
    try:
        compiled = re2.compile(text, _OPTIONS)
    except re2.error as e:
        raw = e.args[0] if e.args else ""
        message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise _refusal(source, message) from None
    rx = Regex(compiled, source)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[source] = rx
    return rx


def as_regex(fn: str, x: Any) -> Any:
    """The compiled RE2 pattern of a regex value (or of a string, compiled)."""
    if type(x) is Regex:
        return x.pattern
    if type(x) is str:
        return compile_regex(x).pattern
    raise type_error(fn, 'a regex such as #"\\d+"', x)


def regex_input(budget: Budget, fn: str, p: Any, s: Any) -> str:
    """``s`` when it is a string the pattern ``p`` may scan, charged to the budget.

    RE2 matches in time proportional to the text times the size of the pattern's program
    (a search that must report groups over a long match runs RE2's NFA: about 10 ns per
    character and instruction, in C, without a break). So besides ``max_regex_input``,
    the product is bounded by :data:`MAX_REGEX_WORK`, and counts steps.

    Raises:
        LispError: ``s`` is not a string (``type``) or is too long for the pattern (``limit``).
    """
    if type(s) is not str:
        raise type_error(fn, "a string to match", s)
    budget.check_regex_input(s, fn)
    size = p.programsize
    work = len(s) * size
    if work > MAX_REGEX_WORK:
        raise LimitExceeded(
            "max_regex_input",
            f'{fn}: #"{p.pattern}" on a string of {len(s)} characters is too much work (the '
            f"time grows with the text times the pattern's size, {size} here: at most "
            f"{MAX_REGEX_WORK // size} characters for it); match a shorter slice "
            "(subs, split-lines) or a simpler pattern",
        )
    budget.step(1 + work // _WORK_PER_STEP)
    return s


def groups_of(m: Any) -> Any:
    """A match as ``re-find`` returns it: the string, or ``[whole group1 ...]``."""
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
    m = p.search(regex_input(budget, "re-find", p, s))
    return None if m is None else groups_of(m)


@add(
    "re-matches",
    "(re-matches re s)",
    "Like re-find, but re must match the whole of s.",
    needs_budget=True,
)
def re_matches(budget: Budget, rx: Any, s: Any) -> Any:
    p = as_regex("re-matches", rx)
    m = p.fullmatch(regex_input(budget, "re-matches", p, s))
    return None if m is None else groups_of(m)


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
    for m in p.finditer(regex_input(budget, "re-seq", p, s)):
        out.append(groups_of(m))
        if len(out) > limit:
            break
    budget.check_size(len(out), "re-seq")
    return vec(out) or None
