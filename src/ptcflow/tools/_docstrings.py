"""A small docstring parser: summary, per-parameter docs and return docs.

Understands the three common styles, detected per docstring:

* Google (``Args:`` / ``Returns:`` sections, indented entries ``name (type): text``),
* NumPy (``Parameters`` underlined with dashes, ``name : type`` then indented text),
* Sphinx / reST fields (``:param name: text``, ``:param type name: text``, ``:returns:``).

It never raises: text it does not understand ends up in the description.
"""

from __future__ import annotations

import inspect
import re

import msgspec

__all__ = ("DocInfo", "parse_docstring")


class DocInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What a docstring says about a function.

    Attributes:
        summary: the first paragraph, joined into one line ("" when there is none).
        description: every paragraph before the first section, joined with blank lines.
        params: parameter name -> its documentation, one line per paragraph.
        returns: the documentation of the return value ("" when there is none).
    """

    summary: str = ""
    description: str = ""
    params: dict[str, str] = msgspec.field(default_factory=dict)
    returns: str = ""


_GOOGLE_PARAM_HEADERS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
        "kwargs",
    }
)
_RETURN_HEADERS = frozenset({"returns", "return", "yields", "yield"})
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_NAME = re.compile(r"\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*")
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ENTRY = re.compile(
    r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)(?:\s*:.*)?$"
)
_SPHINX_FIELD = re.compile(r"^:([A-Za-z]+)((?:\s+[^:]+?)?)\s*:(.*)$")
_SPHINX_PARAM_KINDS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})
_SPHINX_RETURN_KINDS = frozenset({"return", "returns", "yield", "yields"})


def parse_docstring(doc: str | None) -> DocInfo:
    """Parse a docstring written in Google, NumPy or Sphinx style.

    Args:
        doc: the raw docstring (``fn.__doc__``); ``None`` gives an empty ``DocInfo``.

    Returns:
        The summary, description, parameter docs and return docs found.

    Example:
        >>> info = parse_docstring('''Add numbers.
        ...
        ... Args:
        ...     x: the first number.
        ... ''')
        >>> (info.summary, info.params)
        ('Add numbers.', {'x': 'the first number.'})
    """
    if not doc or not doc.strip():
        return DocInfo()
    lines = inspect.cleandoc(doc).splitlines()
    if any(_SPHINX_FIELD.match(line.strip()) for line in lines):
        body, params, returns = _parse_sphinx(lines)
    elif _is_numpy(lines):
        body, params, returns = _parse_numpy(lines)
    else:
        body, params, returns = _parse_google(lines)
    paragraphs = _paragraphs(body)
    return DocInfo(
        summary=paragraphs[0] if paragraphs else "",
        description="\n\n".join(paragraphs),
        params=params,
        returns=returns,
    )


_NUMPY_SECTIONS = frozenset(
    {*_GOOGLE_PARAM_HEADERS, *_RETURN_HEADERS, "raises", "see also", "notes", "examples"}
)


def _is_numpy(lines: list[str]) -> bool:
    """NumPy style: a known section title directly underlined with dashes."""
    return any(
        lines[i].strip().lower() in _NUMPY_SECTIONS and _NUMPY_UNDERLINE.match(lines[i + 1])
        for i in range(len(lines) - 1)
    )


def _paragraphs(lines: list[str]) -> list[str]:
    """Group lines into paragraphs, each joined into one line."""
    out: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            out.append(" ".join(current))
            current = []
    return out


def _join(parts: list[str]) -> str:
    """Join the lines of one entry: paragraphs become lines, wrapped lines are rejoined."""
    return "\n".join(_paragraphs(parts))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse_google(lines: list[str]) -> tuple[list[str], dict[str, str], str]:
    body: list[str] = []
    params: dict[str, str] = {}
    returns: list[str] = []
    i = 0
    in_sections = False
    while i < len(lines):
        line = lines[i]
        header = _GOOGLE_HEADER.match(line) if _indent(line) == 0 else None
        if header is None:
            if not in_sections:
                body.append(line)
            i += 1
            continue
        in_sections = True
        name = header.group(1).strip().lower()
        i += 1
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
            block.append(lines[i])
            i += 1
        if name in _GOOGLE_PARAM_HEADERS:
            params.update(_google_entries(block))
        elif name in _RETURN_HEADERS:
            returns.extend(block)
    return body, params, _join(returns)


def _google_entries(block: list[str]) -> dict[str, str]:
    entries: dict[str, list[str]] = {}
    indents = [_indent(line) for line in block if line.strip()]
    if not indents:
        return {}
    base = min(indents)
    current: list[str] | None = None
    for line in block:
        if line.strip() and _indent(line) == base:
            entry = _google_entry(line.strip())
            if entry is None:
                current = None
                continue
            current = entries.setdefault(entry[0], [])
            current.append(entry[1])
        elif current is not None:
            current.append(line)
    return {name: _join(parts) for name, parts in entries.items()}


def _google_entry(text: str) -> tuple[str, str] | None:
    """Split ``name (type): text`` (the type may nest parentheses) into name and text."""
    match = _GOOGLE_NAME.match(text)
    if match is None:
        return None
    rest = text[match.end() :]
    if rest.startswith("("):
        depth = 0
        for index, char in enumerate(rest):
            depth += (char == "(") - (char == ")")
            if depth == 0:
                rest = rest[index + 1 :].lstrip()
                break
        else:
            return None
    if not rest.startswith(":"):
        return None
    return match.group(1), rest[1:]


def _parse_numpy(lines: list[str]) -> tuple[list[str], dict[str, str], str]:
    body: list[str] = []
    entries: list[tuple[list[str], list[str]]] = []
    returns: list[str] = []
    i = 0
    section: str | None = None
    current: list[str] | None = None
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and _indent(line) == 0 and _NUMPY_UNDERLINE.match(nxt):
            section = line.strip().lower()
            current = None
            i += 2
            continue
        i += 1
        if section is None:
            body.append(line)
        elif section in _GOOGLE_PARAM_HEADERS:
            if line.strip() and _indent(line) == 0:
                match = _NUMPY_ENTRY.match(line.strip())
                current = None
                if match is not None:
                    current = []
                    names = [name.strip().lstrip("*") for name in match.group(1).split(",")]
                    entries.append((names, current))
            elif current is not None:
                current.append(line)
        elif section in _RETURN_HEADERS:
            returns.append(line)
    params = {name: _join(parts) for names, parts in entries for name in names}
    return body, params, _join(_numpy_return_text(returns))


def _numpy_return_text(lines: list[str]) -> list[str]:
    """NumPy returns are ``name : type`` (or just ``type``) then indented text; keep the text."""
    indented = [line for line in lines if line.strip() and _indent(line) > 0]
    if indented:
        return indented
    return lines


def _parse_sphinx(lines: list[str]) -> tuple[list[str], dict[str, str], str]:
    body: list[str] = []
    params: dict[str, list[str]] = {}
    returns: list[str] = []
    current: list[str] | None = None
    in_fields = False
    for line in lines:
        match = _SPHINX_FIELD.match(line.strip())
        if match is not None and _indent(line) == 0:
            in_fields = True
            kind = match.group(1).lower()
            words = match.group(2).split()
            current = None
            if kind in _SPHINX_PARAM_KINDS and words:
                current = params.setdefault(words[-1].lstrip("*"), [])
                current.append(match.group(3))
            elif kind in _SPHINX_RETURN_KINDS:
                current = returns
                current.append(match.group(3))
            continue
        if not in_fields:
            body.append(line)
        elif current is not None and line.strip() and _indent(line) > 0:
            current.append(line)
        elif not line.strip():
            current = None
    return body, {name: _join(parts) for name, parts in params.items()}, _join(returns)
