"""Reading callables: default names, docs, async detection, parameters."""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, Any

import pytest
from hypothesis import given, strategies as st

from ptcflow.errors import UsageError
from ptcflow.tools import TOOL_NAME_RE, ToolContext, callable_name
from ptcflow.tools._introspect import (
    callable_doc,
    context_param,
    inspect_params,
    is_async_callable,
)


def plain(a: int, /, b: str, *args: Any, c: int = 1, **kw: Any) -> None:
    """Plain function."""


class Holder:
    class Inner:
        def method(self) -> None:
            """Inner method."""

    async def amethod(self) -> None:
        return None


class NoDocCallable:
    def __call__(self) -> None:
        return None


def test_names() -> None:
    assert callable_name(plain) == "plain"
    assert callable_name(Holder.Inner().method) == "Holder_Inner_method"
    assert callable_name(functools.partial(plain, 1)) == "plain"
    assert callable_name(NoDocCallable()) == "NoDocCallable"
    assert callable_name(lambda: None) == "lambda_tool"
    assert callable_name(len) == "len"

    def outer() -> Any:
        def deeper() -> Any:
            def leaf() -> None:
                return None

            return leaf

        return deeper()

    assert callable_name(outer()) == "leaf"


def test_docs() -> None:
    assert callable_doc(plain) == "Plain function."
    assert callable_doc(Holder.Inner().method) == "Inner method."
    assert callable_doc(NoDocCallable()) is None


def test_async_detection() -> None:
    assert is_async_callable(Holder().amethod)
    assert is_async_callable(functools.partial(Holder().amethod))
    assert not is_async_callable(plain)
    assert not is_async_callable(NoDocCallable())
    assert not is_async_callable(len)


def test_params_kinds_and_defaults() -> None:
    params = inspect_params(plain)
    assert [(p.name, p.kind, p.has_default) for p in params] == [
        ("a", "positional", False),
        ("b", "keyword", False),
        ("args", "var_positional", False),
        ("c", "keyword", True),
        ("kw", "var_keyword", False),
    ]
    assert params[0].hint is int
    assert params[3].default == 1
    assert params[2].default is inspect.Parameter.empty


def test_context_param_through_annotated_and_optional() -> None:
    def f(x: int, context: Annotated[ToolContext | None, "meta"] = None) -> None:
        return None

    assert context_param(inspect_params(f)) == "context"
    assert context_param(inspect_params(plain)) is None


def test_not_callable() -> None:
    with pytest.raises(UsageError, match="needs a callable"):
        inspect_params(3)  # type: ignore[arg-type]


@given(st.text(max_size=80))
def test_default_names_are_always_valid_tool_names(qualname: str) -> None:
    def fn() -> None:
        return None

    fn.__qualname__ = qualname
    assert TOOL_NAME_RE.fullmatch(callable_name(fn))
