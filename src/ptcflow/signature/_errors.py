"""Errors and warnings of the signature language, with source carets."""

from __future__ import annotations

from ptcflow.errors import UsageError

__all__ = ("SignatureError", "SignatureWarning", "caret_excerpt")

_WINDOW = 60


class SignatureError(UsageError):
    """A signature, type hint or template is malformed.

    The message says what was expected and, when the error comes from a text, shows the
    offending line with a caret under the position.

    Attributes:
        reason: the bare explanation without the excerpt.
        text: the text that failed to parse, or ``None``.
        position: the 0-based character offset of the problem in ``text``, or ``None``.

    Example:
        >>> from ptcflow.signature import parse, SignatureError
        >>> try:
        ...     parse("[]")
        ... except SignatureError as e:
        ...     print(e.position)
        1
    """

    def __init__(self, reason: str, *, text: str | None = None, position: int | None = None):
        self.reason = reason
        self.text = text
        self.position = position
        if text is not None and position is not None:
            message = f"{reason}\n{caret_excerpt(text, position)}"
        else:
            message = reason
        super().__init__(message)

    def __reduce__(self) -> tuple[object, tuple[str, str | None, int | None]]:
        return (_rebuild, (self.reason, self.text, self.position))


def _rebuild(reason: str, text: str | None, position: int | None) -> SignatureError:
    """Unpickle a :class:`SignatureError` (it takes keyword arguments)."""
    return SignatureError(reason, text=text, position=position)


class SignatureWarning(UserWarning):
    """A signature was inferred with a guess (for example a parameter without a type hint)."""


def caret_excerpt(text: str, position: int) -> str:
    """Return the line of ``text`` holding ``position`` with a caret under it.

    Long lines are cut to a window around the position; multi-line texts also name the
    line and column (1-based).

    Args:
        text: the source text.
        position: a 0-based offset into ``text`` (clamped to its length).

    Returns:
        Two (or three) indented lines: optional location, the source line, the caret.
    """
    position = max(0, min(position, len(text)))
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    if end == -1:
        end = len(text)
    line = text[start:end]
    column = position - start
    prefix = ""
    if len(line) > _WINDOW:
        cut = max(0, min(column - _WINDOW // 2, len(line) - _WINDOW))
        shown = line[cut : cut + _WINDOW]
        if cut > 0:
            shown = "..." + shown
            column = column - cut + 3
        else:
            column -= cut
        if cut + _WINDOW < len(line):
            shown += "..."
        line = shown
    if "\n" in text:
        line_no = text.count("\n", 0, start) + 1
        prefix = f"  at line {line_no}, column {position - start + 1}:\n"
    line = line.replace("\t", " ")
    return f"{prefix}  {line}\n  {' ' * column}^"
