"""Errors raised by PTC-Lisp programs; every message is written for the model.

::

    ProgramError                   (ptcflow.errors) a program written by a model is wrong
    └── LispError                  category + message + position (line, column)
        └── LimitExceeded          category "limit"; ``limit`` names the exceeded limit

``category`` is one of :data:`CATEGORIES`. Builtins raise ``LispError(category, message)``
without a position; the compiler attaches the position of the innermost call node with
:meth:`LispError.with_position`. The compiler also wraps unexpected Python exceptions coming
out of a builtin (``ZeroDivisionError`` -> ``arithmetic``, ``TypeError``/``ValueError``/
``KeyError``/``IndexError`` -> ``type``) so a Python traceback never reaches the model.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from ptcflow.errors import ProgramError

__all__ = (
    "CATEGORIES",
    "LimitExceeded",
    "LispError",
    "arity_error",
    "type_error",
)

Category = Literal[
    "parse",
    "analysis",
    "unbound",
    "arity",
    "type",
    "arithmetic",
    "destructure",
    "unknown_tool",
    "tool_error",
    "limit",
    "timeout",
]

CATEGORIES: Final[frozenset[str]] = frozenset(
    {
        "parse",
        "analysis",
        "unbound",
        "arity",
        "type",
        "arithmetic",
        "destructure",
        "unknown_tool",
        "tool_error",
        "limit",
        "timeout",
    }
)


class LispError(ProgramError):
    """A PTC-Lisp program failed; the message tells the model what, where and how to fix.

    Args:
        category: one of :data:`CATEGORIES` (``"type"``, ``"arity"``, ``"limit"``, ...).
        message: what went wrong and how to fix it, written for the model.
        line: 1-based source line, ``None`` until the compiler attaches a position.
        column: 1-based source column, ``None`` until the compiler attaches a position.

    Raises:
        ValueError: ``category`` is not a known category (a bug in the caller).

    Example:
        >>> err = LispError("type", "+ expects numbers, got string \\"a\\"")
        >>> str(err.with_position(3, 7))
        'type error at line 3, column 7: + expects numbers, got string "a"'
    """

    def __init__(
        self,
        category: Category | str,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        if category not in CATEGORIES:
            raise ValueError(f"unknown LispError category {category!r}")
        super().__init__(message)
        self.category: str = category
        self.message: str = message
        self.line: int | None = line
        self.column: int | None = column

    def with_position(self, line: int | None, column: int | None) -> LispError:
        """Return this error with a source position attached (once: an inner one wins).

        Args:
            line: 1-based source line.
            column: 1-based source column.

        Returns:
            ``self`` (the position is set in place when not already set, so the
            innermost call keeps its position while the error propagates outwards).
        """
        if self.line is None:
            self.line = line
            self.column = column
        return self

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f" at line {self.line}"
            if self.column is not None:
                where += f", column {self.column}"
        return f"{self.category} error{where}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.category!r}, {self.message!r}, "
            f"line={self.line!r}, column={self.column!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[LispError], state: dict[str, Any]) -> LispError:
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("message", ""))
    err.__dict__.update(state)
    return err


class LimitExceeded(LispError):
    """A program went past one of its :class:`ptcflow.lisp.limits.Limits`.

    Args:
        limit: the name of the limit field (``"max_steps"``, ``"max_collection_size"``, ...).
        message: what was exceeded and how to stay under it.

    Example:
        >>> LimitExceeded("max_steps", "program took more than 10 steps").limit
        'max_steps'
    """

    def __init__(
        self,
        limit: str,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__("limit", message, line=line, column=column)
        self.limit: str = limit


def _describe(value: object) -> str:
    # Imported lazily: printer imports values, values imports this module.
    from ptcflow.lisp.printer import pr_str, type_name

    if value is None:
        return "nil"
    return f"{type_name(value)} {pr_str(value, limit=60)}"


def type_error(fn_name: str, expected: str, got: object) -> LispError:
    """Build the standard type error of a builtin.

    Args:
        fn_name: the builtin's name as the program wrote it (``"+"``, ``"get-in"``).
        expected: what it expects, plural or with an article (``"numbers"``, ``"a map"``).
        got: the offending value (shown with ``pr_str(got, limit=60)``).

    Returns:
        A ``LispError`` with category ``"type"`` (raise it).

    Example:
        >>> type_error("+", "numbers", "a").message
        '+ expects numbers, got string "a"'
    """
    return LispError("type", f"{fn_name} expects {expected}, got {_describe(got)}")


def arity_error(fn_name: str, n_args: int, expected: str) -> LispError:
    """Build the standard arity error.

    Args:
        fn_name: the called function's name.
        n_args: how many arguments it received.
        expected: the accepted counts or the signature text (``"1 or 2"``, ``"(get m k)"``).

    Returns:
        A ``LispError`` with category ``"arity"`` (raise it).

    Example:
        >>> arity_error("get", 1, "2 or 3").message
        'get called with 1 argument, expects 2 or 3'
    """
    plural = "" if n_args == 1 else "s"
    return LispError(
        "arity", f"{fn_name} called with {n_args} argument{plural}, expects {expected}"
    )
