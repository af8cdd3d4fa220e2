"""dispatch / dispatch_sync: success, coercion, validation, unknown tools, failures, context,
cancellation; on asyncio and trio."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.signals import Err, ErrorEnvelope, Ok
from ptcflow.tools import (
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    dispatch,
    dispatch_sync,
    for_agent,
    tool,
)

pytestmark = pytest.mark.anyio


def add(x: int, y: int) -> int:
    return x + y


async def aadd(x: int, y: int) -> int:
    await anyio.lowlevel.checkpoint()
    return x + y


def boom(x: int) -> int:
    raise ValueError(f"bad x {x}")


async def aboom() -> int:
    raise RuntimeError("async failure")


def wrong_output() -> int:
    return "not an int"  # type: ignore[return-value]


def search(query: str, limit: int = 2, exact: bool | None = None) -> dict[str, Any]:
    return {"query": query, "limit": limit, "exact": exact}


def whoami(ctx: ToolContext, prefix: str) -> list[Any]:
    return [prefix, ctx.run_id, ctx.call_id, ctx.tool_name, ctx.metadata]


def positional(a: int, b: int = 5, /, c: int = 7) -> list[int]:
    return [a, b, c]


def raw(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


def succeed_with_effects() -> Ok[int]:
    return Ok(payload=3, effects=("note",))


def fail_quietly() -> Err:
    return Err(error=ErrorEnvelope.make("not_found", "no such user"))


TOOLS = for_agent(
    [
        add,
        aadd,
        boom,
        aboom,
        wrong_output,
        search,
        whoami,
        positional,
        succeed_with_effects,
        fail_quietly,
        tool(raw, name="raw", pass_input=True, signature="(n :int) -> :map"),
    ]
)


def call(name: str, **input: Any) -> ToolCall:
    return ToolCall(id=f"id-{name}", name=name, input=input)


async def test_seed_dispatch_example() -> None:
    result = await dispatch(TOOLS, ToolCall(id="call_1", name="add", input={"x": 2, "y": 3}))
    assert result == ToolResult(id="call_1", output=5, is_error=False, name="add")


@pytest.mark.parametrize("name", ["add", "aadd"])
async def test_sync_and_async_tools(name: str) -> None:
    result = await dispatch(TOOLS, call(name, x=2, y=40))
    assert (result.id, result.output, result.is_error) == (f"id-{name}", 42, False)


async def test_coercion_warnings_are_kept() -> None:
    result = await dispatch(TOOLS, call("add", x="2", y=3))
    assert result.output == 5
    assert result.warnings == ('x: coerced string "2" to int',)


async def test_validation_error_is_not_retryable_and_lists_every_problem() -> None:
    result = await dispatch(TOOLS, call("add", x="two"))
    assert result.is_error
    error = result.error
    assert error is not None
    assert (error.type, error.retryable) == ("validation", False)
    assert error.message.startswith("invalid arguments for tool 'add': x: expected int")
    assert error.message.endswith("(expected add(x :int, y :int) -> :int)")
    assert error.details["errors"] == [
        'x: expected int, got string "two"',
        "y: missing required field, expected int",
    ]


async def test_input_must_be_a_map() -> None:
    bad = ToolCall(id="c", name="add", input=[1, 2])  # type: ignore[arg-type]
    result = await dispatch(TOOLS, bad)
    assert result.error is not None
    assert result.error.type == "validation"
    assert "takes a map of named arguments" in result.error.message


async def test_unknown_tool_lists_names_and_suggests() -> None:
    result = await dispatch(TOOLS, call("serch", query="x"))
    error = result.error
    assert error is not None
    assert (result.id, error.type, error.retryable) == ("id-serch", "unknown_tool", False)
    assert "unknown tool 'serch'; available tools: add, aadd, boom" in error.message
    assert error.message.endswith("Did you mean 'search'?")
    assert error.details["suggestions"] == ["search"]
    empty = await dispatch([], call("x"))
    assert empty.error is not None and "available tools: (none)" in empty.error.message


@pytest.mark.parametrize(("name", "text"), [("boom", "bad x 1"), ("aboom", "async failure")])
async def test_exceptions_become_tool_errors(name: str, text: str) -> None:
    result = await dispatch(TOOLS, call(name, **({"x": 1} if name == "boom" else {})))
    error = result.error
    assert error is not None
    assert (error.type, error.retryable) == ("tool_error", False)
    assert text in error.message and f"tool {name!r} raised" in error.message
    assert error.details["tool"] == name
    assert "Traceback" not in error.message


async def test_output_is_validated_against_the_declared_type() -> None:
    result = await dispatch(TOOLS, call("wrong_output"))
    error = result.error
    assert error is not None
    assert error.type == "validation"
    assert error.details["where"] == "output"
    assert error.details["errors"] == ['$: expected int, got string "not an int"']
    lenient = await dispatch(TOOLS, call("wrong_output"), validation="warn_only")
    assert (lenient.is_error, lenient.output) == (False, "not an int")
    assert lenient.warnings == ('$: expected int, got string "not an int"',)


async def test_defaults_nulls_and_extra_arguments() -> None:
    result = await dispatch(TOOLS, call("search", query="q", limit=None, exact=None, color=1))
    assert result.output == {"query": "q", "limit": 2, "exact": None}
    assert result.warnings == ("color: ignored, search takes no such argument",)
    strict = await dispatch(TOOLS, call("search", query="q", color=1), validation="strict")
    assert strict.error is not None and strict.error.type == "validation"


async def test_validation_disabled_still_reports_missing_arguments() -> None:
    result = await dispatch(TOOLS, call("add", x=1), validation="disabled")
    assert result.error is not None
    assert result.error.message == (
        "invalid arguments for tool 'add': y: missing required argument "
        "(expected add(x :int, y :int) -> :int)"
    )
    loose = await dispatch(TOOLS, call("add", x="1", y="2"), validation="disabled")
    assert loose.output == "12", "no coercion when validation is disabled"


async def test_positional_only_parameters() -> None:
    assert (await dispatch(TOOLS, call("positional", a=1))).output == [1, 5, 7]
    assert (await dispatch(TOOLS, call("positional", a=1, b=2, c=3))).output == [1, 2, 3]


async def test_pass_input_gives_the_validated_map() -> None:
    result = await dispatch(TOOLS, call("raw", n="4", extra=True))
    assert result.output == {"n": 4, "extra": True}
    assert result.warnings == ('n: coerced string "4" to int',)


async def test_schema_only_tools_are_validated_too() -> None:
    def forward(payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    mcp = Tool("forecast", forward, input_schema=schema, pass_input=True)
    ok = await dispatch([mcp], call("forecast", city="Oslo", days="3"))
    assert ok.output == {"city": "Oslo", "days": 3}
    assert ok.warnings == ('days: coerced string "3" to int',)
    bad = await dispatch([mcp], call("forecast", days=3))
    assert bad.error is not None
    assert bad.error.details["errors"] == ["city: missing required field, expected string"]


async def test_context_injection() -> None:
    context = ToolContext(run_id="run-1", call_id="ignored", metadata={"user": "u1"})
    result = await dispatch(TOOLS, call("whoami", prefix="p"), context=context)
    assert result.output == ["p", "run-1", "id-whoami", "whoami", {"user": "u1"}]
    default = await dispatch(TOOLS, call("whoami", prefix="p"))
    assert default.output == ["p", "", "id-whoami", "whoami", {}]
    sneaky = await dispatch(TOOLS, call("whoami", prefix="p", ctx="forged"))
    assert sneaky.output[2] == "id-whoami", "the model cannot supply the context"


async def test_ok_and_err_returns_are_unwrapped() -> None:
    ok = await dispatch(TOOLS, call("succeed_with_effects"))
    assert (ok.output, ok.effects, ok.is_error) == (3, ("note",), False)
    err = await dispatch(TOOLS, call("fail_quietly"))
    assert err.is_error and err.error == ErrorEnvelope.make("not_found", "no such user")


async def test_sequence_of_tools_and_unknown_mode() -> None:
    result = await dispatch([tool(add)], call("add", x=1, y=1))
    assert result.output == 2
    with pytest.raises(UsageError, match="unknown validation mode 'loose'"):
        await dispatch(TOOLS, call("add", x=1, y=1), validation="loose")


async def test_sync_tools_run_in_a_thread_under_the_limiter() -> None:
    limiter = anyio.CapacityLimiter(1)
    main_thread = threading.get_ident()

    def probe() -> list[Any]:
        borrowed = anyio.from_thread.run_sync(lambda: limiter.borrowed_tokens)
        return [threading.get_ident() != main_thread, borrowed]

    result = await dispatch([tool(probe)], call("probe"), limiter=limiter)
    assert result.output == [True, 1]


async def test_non_blocking_sync_tools_run_inline() -> None:
    main_thread = threading.get_ident()

    def where() -> bool:
        return threading.get_ident() == main_thread

    inline = await dispatch([tool(where, blocking=False)], call("where"))
    threaded = await dispatch([tool(where)], call("where"))
    assert (inline.output, threaded.output) == (True, False)


async def test_non_blocking_tool_is_not_started_when_already_cancelled() -> None:
    ran: list[bool] = []

    def record() -> None:
        ran.append(True)

    with anyio.CancelScope() as scope:
        scope.cancel()
        await dispatch([tool(record, blocking=False)], call("record"))
    assert scope.cancelled_caught and ran == []


async def test_cancellation_of_an_async_tool_propagates() -> None:
    started = anyio.Event()
    results: list[ToolResult] = []

    async def hang() -> int:
        started.set()
        await anyio.sleep_forever()
        return 0  # pragma: no cover

    async def run() -> None:
        results.append(await dispatch([tool(hang)], call("hang")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert results == [], "dispatch must not turn cancellation into a result"
    assert tg.cancel_scope.cancelled_caught


async def test_cancellation_while_a_sync_tool_runs_propagates() -> None:
    started = anyio.Event()
    release = threading.Event()
    results: list[ToolResult] = []

    def block() -> int:
        anyio.from_thread.run_sync(started.set)
        release.wait()
        return 1

    async def run() -> None:
        results.append(await dispatch([tool(block)], call("block")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
        release.set()
    assert results == []


async def test_tool_raising_cancellation_like_base_exceptions_is_not_swallowed() -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dispatch_sync([tool(interrupt)], call("interrupt"))


# -- dispatch_sync ---------------------------------------------------------------------------


def test_dispatch_sync_runs_sync_and_async_tools() -> None:
    assert dispatch_sync(TOOLS, call("add", x=1, y="2")).output == 3
    assert dispatch_sync(TOOLS, call("aadd", x=1, y=2)).output == 3
    failed = dispatch_sync(TOOLS, call("aboom"))
    assert failed.error is not None and failed.error.type == "tool_error"
    assert dispatch_sync(TOOLS, call("nope")).error is not None
    assert dispatch_sync(TOOLS, call("wrong_output")).is_error


async def test_dispatch_sync_refuses_async_tools_inside_a_running_loop() -> None:
    with pytest.raises(UsageError, match=r"cannot run the async tool 'aadd' inside a running"):
        dispatch_sync(TOOLS, call("aadd", x=1, y=2))
    assert dispatch_sync(TOOLS, call("add", x=1, y=2)).output == 3, "sync tools are fine"


def test_dispatch_sync_awaits_awaitables_returned_by_sync_callables() -> None:
    def wrapper(x: int) -> Any:
        return aadd(x, 1)

    t = Tool("wrapper", wrapper, signature="(x :int) -> :int")
    assert dispatch_sync([t], call("wrapper", x=1)).output == 2


async def test_dispatch_awaits_awaitables_returned_by_sync_callables() -> None:
    def wrapper(x: int) -> Any:
        return aadd(x, 1)

    t = Tool("wrapper", wrapper, signature="(x :int) -> :int")
    assert (await dispatch([t], call("wrapper", x=1))).output == 2


def test_direct_tool_without_signature_passes_arguments_by_name() -> None:
    web = Tool("web", search, input_schema={"type": "object"})
    assert dispatch_sync([web], call("web", query="q")).output == {
        "query": "q",
        "limit": 2,
        "exact": None,
    }


# -- property: dispatch never raises ---------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
_names = st.sampled_from([*sorted(TOOLS), "missing", ""])
_inputs = st.dictionaries(
    st.sampled_from(
        ["x", "y", "query", "limit", "exact", "prefix", "n", "a", "b", "c", "ctx", ":x"]
    )
    | st.text(max_size=4),
    _json,
    max_size=5,
)
_modes = st.sampled_from(["enabled", "strict", "warn_only", "disabled"])


@settings(max_examples=300, deadline=None)
@given(name=_names, data=_inputs | _json, mode=_modes)
def test_dispatch_never_raises(name: str, data: Any, mode: str) -> None:
    result = dispatch_sync(TOOLS, ToolCall(id="h", name=name, input=data), validation=mode)
    assert result.id == "h"
    assert isinstance(result, ToolResult)
    if result.is_error:
        assert isinstance(result.output, ErrorEnvelope)
        result.content()  # always renders to JSON for the model
