"""The lenient front end: find the one PTC-Lisp program in a model's response.

Models wrap code in Markdown fences, add prose around it, and sometimes type typographic
quotes or invisible characters. :func:`extract_code` accepts one ```` ```clojure ```` (or
``lisp``/``clj``/unlabelled) fenced block, or bare text that starts with ``(``, and
:func:`normalize` repairs the characters. Several blocks are an error that says so: the model
must send one program per response.
"""

from __future__ import annotations

import re
from typing import Final

from ptcflow.lisp.errors import LispError

__all__ = ("extract_code", "normalize")

_TRANSLATE: Final = str.maketrans(
    {
        "\u201c": '"',  # left double quotation mark
        "\u201d": '"',  # right double quotation mark
        "\u201e": '"',  # double low-9 quotation mark
        "\u201f": '"',
        "\u2033": '"',  # double prime
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u00a0": " ",  # no-break space
        "\u2007": " ",  # figure space
        "\u202f": " ",  # narrow no-break space
        "\u2002": " ",
        "\u2003": " ",
        "\u2009": " ",
        "\u3000": " ",
        "\u200b": None,  # zero-width space
        "\u200c": None,  # zero-width non-joiner
        "\u200d": None,  # zero-width joiner
        "\u2060": None,  # word joiner
        "\ufeff": None,  # byte-order mark / zero-width no-break space
        "\u00ad": None,  # soft hyphen
        "\u2028": "\n",
        "\u2029": "\n",
    }
)
_FENCE_RE: Final = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.#-]*)[^\n]*\n", re.MULTILINE)
_LISP_LANGS: Final = frozenset({"", "clojure", "clj", "lisp", "edn", "cljs", "ptc", "ptc-lisp"})


def normalize(text: str) -> str:
    """Replace typographic quotes and odd spaces, drop zero-width characters, fix newlines.

    Example:
        >>> normalize("(str \u201chi\u201d)\u200b")
        '(str "hi")'
    """
    return text.replace("\r\n", "\n").translate(_TRANSLATE)


def _blocks(text: str) -> list[tuple[str, str]]:
    """Return ``(language, body)`` for every fenced block (an unclosed fence runs to the end)."""
    out: list[tuple[str, str]] = []
    pos = 0
    while True:
        m = _FENCE_RE.search(text, pos)
        if m is None:
            return out
        fence, lang = m.group(1), m.group(2).lower()
        close = re.compile(
            r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$", re.MULTILINE
        )
        end = close.search(text, m.end())
        if end is None:
            out.append((lang, text[m.end() :]))
            return out
        out.append((lang, text[m.end() : end.start()]))
        pos = end.end()


def extract_code(text: str) -> str:
    """Extract the single PTC-Lisp program from a model's response.

    Accepts one fenced block labelled ``clojure``, ``lisp``, ``clj`` (or unlabelled), or bare
    text starting with ``(``. Smart quotes, non-breaking spaces and zero-width characters are
    normalized first.

    Args:
        text: the model's response.

    Returns:
        The program text.

    Raises:
        LispError: category ``"parse"``: no program found, or more than one code block.

    Example:
        >>> extract_code("Here you go:\\n```clojure\\n(return 1)\\n```\\n")
        '(return 1)'
    """
    text = normalize(text)
    blocks = _blocks(text)
    lisp = [body for lang, body in blocks if lang in _LISP_LANGS]
    if len(lisp) > 1:
        raise LispError(
            "parse",
            f"found {len(lisp)} code blocks; send exactly one ```clojure block per response "
            "(combine the steps in one program, e.g. inside (do ...) or let)",
        )
    if lisp:
        code = lisp[0].strip()
        if not code:
            raise LispError("parse", "the ```clojure block is empty: put the program inside it")
        return code
    if blocks:
        langs = ", ".join(sorted({lang for lang, _ in blocks}))
        raise LispError(
            "parse",
            f"found a code block in {langs}, but programs must be PTC-Lisp: write one "
            "```clojure block",
        )
    stripped = text.strip()
    if stripped.startswith("("):
        return stripped
    raise LispError(
        "parse",
        "no program found: answer with one ```clojure block containing a PTC-Lisp program, "
        'e.g. (return {:answer 42}) or (call "tool" {:arg 1})',
    )
