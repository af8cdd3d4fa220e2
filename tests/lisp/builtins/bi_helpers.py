"""Helpers for the builtin tests: run source programs and compare printed values.

Cases compare ``pr-str`` of the actual and of the expected value, which tells apart ``1``,
``1.0`` and ``true``, strings and keywords, vectors and sets.
"""

from __future__ import annotations

from typing import Any

from ptcflow.lisp import run_sync
from ptcflow.lisp.builtins import BUILTINS
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.limits import Budget, Limits


def call(name: str, *args: Any, limits: Limits | None = None) -> Any:
    """Call builtin ``name`` directly with a fresh budget."""
    return BUILTINS[name].bind(Budget(limits or Limits()))(*args)


def check_value(src: str, expected: str) -> None:
    """Run ``src`` and ``expected`` and compare their printed forms."""
    result = run_sync(f"[(pr-str {src}) (pr-str {expected})]")
    assert result.error is None, f"{src}: {result.error}"
    actual, wanted = result.value
    assert actual == wanted, f"{src}: got {actual}, expected {wanted}"


def check_error(src: str, category: str, fragment: str, limits: Limits | None = None) -> None:
    """Run ``src`` and check it fails with ``category`` and a message containing ``fragment``."""
    result = run_sync(src) if limits is None else run_sync(src, limits=limits)
    err = result.error
    assert isinstance(err, LispError), f"{src}: expected an error, got {result.value!r}"
    assert err.category == category, f"{src}: {err}"
    assert fragment in err.message, f"{src}: {err.message!r} lacks {fragment!r}"
    assert "Traceback" not in err.message
