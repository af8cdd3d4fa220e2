"""call_tool: the same envelope as dispatch(...).to_result() for every input, the fast path
really taken for the common call, cancellation, threads and context; asyncio and trio."""

from __future__ import annotations

import math
import threading
import types
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

import ptcflow.tools._call as call_module
import ptcflow.tools._dispatch as dispatch_module
from ptcflow.errors import UsageError
from ptcflow.signals import Err, ErrorEnvelope, Ok
from ptcflow.tools import Tool, ToolCall, ToolContext, call_tool, dispatch, tool

pytestmark = pytest.mark.anyio


# -- tools with different shapes -------------------------------------------------------------


async def add(x: int, y: int) -> int:
    return x + y


def add_sync(x: int, y: int) -> int:
    return x + y


async def search(query: str, limit: int = 2, exact: bool | None = None) -> dict[str, Any]:
    return {"query": query, "limit": limit, "exact": exact}


async def scale(x: float, factor: float = 2.0) -> float:
    return x * factor


async def echo(value: Any, tag: str = "") -> Any:
    return value


def loose(v: Any, d: int = 3) -> list[Any]:
    return [v, d]


def mismatched(b: int = 0) -> int:
    return b


def mismatched_default(b: int | None, c: str = "") -> int:
    return b or 0


async def whoami(ctx: ToolContext, prefix: str) -> list[Any]:
    return [prefix, ctx.run_id, ctx.call_id, ctx.tool_name, ctx.metadata, ctx.state]


async def keywords(a: int, **rest: Any) -> dict[str, Any]:
    return {"a": a, **rest}


def positional(a: int, b: int = 5, /, c: int = 7) -> list[int]:
    return [a, b, c]


def raw(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


async def nothing() -> str:
    return "nothing"


async def shaped(items: list[str], opts: dict[str, Any]) -> list[str]:
    return [*items, *opts]


async def named(k: str, n: int) -> str:
    return f"{k}{n}"


async def flag(on: bool, note: str, level: int) -> bool:
    return on


async def outcome(mode: str, value: Any = None) -> Any:
    """Return or raise whatever ``mode`` says: every shape a tool can answer with."""
    if mode == "ok":
        return Ok(payload=value, effects=("note",))
    if mode == "err":
        return Err(error=ErrorEnvelope.make("not_found", "no such thing"), effects=(1,))
    if mode == "envelope":
        return ErrorEnvelope.make("busy", "try later", retryable=True)
    if mode == "pair":
        return (True, value)
    if mode == "raise":
        raise ValueError(f"bad {value!r}")
    if mode == "timeout":
        raise TimeoutError("too slow")
    if mode == "tuple":
        return (1, (2, value))
    if mode == "nan":
        return math.nan
    return value


async def mapped(key: str) -> dict[str, Any]:
    return {key: (1, {"t": (2,)})}


async def typed_out(kind: str) -> int:
    values: dict[str, Any] = {"int": 1, "bool": True, "float": 1.0, "str": "1", "none": None}
    return values.get(kind, 0)  # type: ignore[no-any-return]


def listed(n: int) -> list[str]:
    # at most 8 elements: Hypothesis draws any integer, and ["a"] * 2**32 took 24 GB
    return ["a"] * min(n, 8) if n % 2 == 0 else [n]  # type: ignore[list-item]


def strict_float(x: float) -> float:
    return x if x >= 0 else int(x)


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        tool(add),
        tool(add_sync),
        tool(add_sync, name="add_inline", blocking=False),
        tool(search),
        tool(scale),
        tool(echo),
        Tool("loose", loose, signature="(v :any, d :any) -> :any"),
        Tool("mismatched", mismatched, signature="(a :int) -> :int"),
        tool(whoami),
        tool(keywords),
        tool(positional),
        tool(raw, name="raw", pass_input=True, signature="(n :int) -> :map"),
        tool(nothing),
        tool(shaped),
        Tool("named", named, signature="(k :keyword, n :int) -> :string"),
        tool(flag),
        tool(outcome),
        tool(typed_out),
        tool(mapped),
        Tool("no_default", mismatched_default, signature="(b :int?, c :string) -> :int"),
        tool(listed, blocking=False),
        tool(strict_float, blocking=False),
        Tool(
            "schema_only",
            search,
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        ),
    ]
}

CONTEXT = ToolContext(run_id="run-1", call_id="ignored", state={"s": 1}, metadata={"u": 2})


async def reference(
    t: Tool, call_id: str, arguments: Mapping[str, Any], **options: Any
) -> Ok[Any] | Err:
    """What call_tool promises to equal, spelled out."""
    call = ToolCall(id=call_id, name=t.name, input=dict(arguments))
    return (await dispatch({t.name: t}, call, **options)).to_result()


def same(a: object, b: object) -> bool:
    """Equal envelopes; NaN (in error details) compares by its JSON encoding."""
    if type(a) is not type(b):
        return False
    return a == b or ("NaN" in repr(a) and msgspec.json.encode(a) == msgspec.json.encode(b))


async def check_equivalent(t: Tool, arguments: Mapping[str, Any], **options: Any) -> Ok[Any] | Err:
    expected = await reference(t, "call-1", arguments, **options)
    got = await call_tool(t, "call-1", arguments, **options)
    assert same(got, expected), (t.name, arguments, options, got, expected)
    return got


# -- explicit cases --------------------------------------------------------------------------

CASES: list[tuple[str, dict[str, Any]]] = [
    ("add", {"x": 2, "y": 3}),
    ("add", {"x": "2", "y": 3}),
    ("add", {"x": 2.0, "y": 3}),
    ("add", {"x": True, "y": 3}),
    ("add", {"x": 2}),
    ("add", {"x": 2, "y": 3, "z": 4}),
    ("add", {":x": 2, "y": 3}),
    ("add", {"x": None, "y": 3}),
    ("add", {}),
    ("add_sync", {"x": 2, "y": 3}),
    ("add_sync", {"x": "a", "y": 3}),
    ("add_inline", {"x": 2, "y": 3}),
    ("add_inline", {"x": 2, "y": "3"}),
    ("search", {"query": "q", "limit": 5, "exact": True}),
    ("search", {"query": "q", "limit": 5, "exact": None}),
    ("search", {"query": "q", "limit": None, "exact": False}),
    ("search", {"query": "q"}),
    ("search", {"query": "q", "limit": 1, "exact": True, "color": 1}),
    ("scale", {"x": 1.5, "factor": 2.0}),
    ("scale", {"x": 1, "factor": 2}),
    ("scale", {"x": "1.5", "factor": 2.0}),
    ("scale", {"x": 1e308, "factor": 10.0}),
    ("echo", {"value": None, "tag": "t"}),
    ("echo", {"value": (1, 2), "tag": "t"}),
    ("echo", {"value": {"a": (1, {2})}, "tag": ""}),
    ("echo", {"value": math.inf, "tag": ""}),
    ("echo", {"value": b"bytes", "tag": ""}),
    ("echo", {"value": Ok(payload=1), "tag": ""}),
    ("loose", {"v": 1, "d": None}),
    ("loose", {"v": None, "d": 4}),
    ("loose", {"v": 1, "d": 4}),
    ("mismatched", {"a": 1}),
    ("mismatched", {"b": 1}),
    ("no_default", {"b": 1, "c": "x"}),
    ("no_default", {"c": "x"}),
    ("no_default", {"b": 1}),
    ("no_default", {}),
    ("search", {"exact": True}),
    ("search", {"query": "q", "color": 1}),
    ("search", {"query": "q", "exact": False}),
    ("echo", {"value": 1}),
    ("echo", {"tag": "t"}),
    ("whoami", {"prefix": "p"}),
    ("whoami", {"prefix": "p", "ctx": "forged"}),
    ("whoami", {"prefix": 1}),
    ("keywords", {"a": 1}),
    ("keywords", {"a": 1, "b": 2}),
    ("positional", {"a": 1}),
    ("positional", {"a": 1, "b": 2, "c": 3}),
    ("raw", {"n": 4}),
    ("raw", {"n": "4", "extra": True}),
    ("nothing", {}),
    ("nothing", {"x": 1}),
    ("shaped", {"items": ["a"], "opts": {"b": 1}}),
    ("shaped", {"items": "a", "opts": {}}),
    ("named", {"k": "kw", "n": 1}),
    ("named", {"k": 3, "n": 1}),
    ("flag", {"on": True, "note": "", "level": 0}),
    ("flag", {"on": "true", "note": "", "level": 0}),
    ("flag", {"on": 1, "note": "", "level": 0}),
    ("typed_out", {"kind": "int"}),
    ("typed_out", {"kind": "bool"}),
    ("typed_out", {"kind": "float"}),
    ("typed_out", {"kind": "str"}),
    ("typed_out", {"kind": "none"}),
    ("mapped", {"key": "k"}),
    ("listed", {"n": 2}),
    ("listed", {"n": 3}),
    ("strict_float", {"x": 1.5}),
    ("strict_float", {"x": -2.0}),
    ("schema_only", {"query": "q", "limit": 3}),
    ("schema_only", {"query": "q", "limit": "3"}),
    *[
        ("outcome", {"mode": mode, "value": value})
        for mode in ("ok", "err", "envelope", "pair", "raise", "timeout", "tuple", "nan", "x")
        for value in (None, 1, [1, (2,)])
    ],
]


@pytest.mark.parametrize(("name", "arguments"), CASES)
@pytest.mark.parametrize("mode", ["enabled", "strict", "warn_only", "disabled"])
async def test_explicit_cases_match_dispatch(
    name: str, arguments: dict[str, Any], mode: str
) -> None:
    await check_equivalent(TOOLS[name], arguments, validation=mode)
    await check_equivalent(TOOLS[name], arguments, validation=mode, context=CONTEXT)


async def test_the_common_call_gives_the_plain_envelope() -> None:
    assert await call_tool(TOOLS["add"], "c", {"x": 2, "y": 3}) == Ok(payload=5)
    result = await call_tool(TOOLS["add"], "c", {"x": "two", "y": 3})
    assert isinstance(result, Err) and result.error.type == "validation"
    assert "x: expected int" in result.error.message


async def test_results_keep_effects_and_errors_from_the_tool() -> None:
    ok = await call_tool(TOOLS["outcome"], "c", {"mode": "ok", "value": (1, 2)})
    assert ok == Ok(payload=[1, 2], effects=("note",))
    err = await call_tool(TOOLS["outcome"], "c", {"mode": "err"})
    assert err == Err(error=ErrorEnvelope.make("not_found", "no such thing"), effects=(1,))
    raised = await call_tool(TOOLS["outcome"], "c", {"mode": "timeout"})
    assert isinstance(raised, Err)
    assert (raised.error.type, raised.error.retryable) == ("timeout", True)
    assert raised.error.details["tool"] == "outcome"


async def test_output_validation_failures_are_errors() -> None:
    result = await call_tool(TOOLS["typed_out"], "c", {"kind": "str"})
    assert isinstance(result, Err)
    assert result.error.details["errors"] == ['$: expected int, got string "1"']
    lenient = await call_tool(TOOLS["typed_out"], "c", {"kind": "str"}, validation="warn_only")
    assert lenient == Ok(payload="1")


async def test_context_is_injected_with_the_call_id_and_tool_name() -> None:
    result = await call_tool(TOOLS["whoami"], "call-9", {"prefix": "p"}, context=CONTEXT)
    assert result == Ok(payload=["p", "run-1", "call-9", "whoami", {"u": 2}, {"s": 1}])
    default = await call_tool(TOOLS["whoami"], "call-9", {"prefix": "p"})
    assert default == Ok(payload=["p", "", "call-9", "whoami", {}, None])


async def test_mappings_that_are_not_dicts() -> None:
    frozen = types.MappingProxyType({"x": 2, "y": 3})
    assert await check_equivalent(TOOLS["add"], frozen) == Ok(payload=5)


async def test_a_key_equal_to_a_name_but_not_a_str() -> None:
    class Key:
        def __hash__(self) -> int:
            return hash("x")

        def __eq__(self, other: object) -> bool:
            return other == "x"

    for name in ("add", "add_sync", "add_inline"):
        weird: dict[Any, Any] = {Key(): 2, "y": 3}
        assert await check_equivalent(TOOLS[name], weird) == Ok(payload=5)


async def test_unknown_validation_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown validation mode 'loose'"):
        await call_tool(TOOLS["add"], "c", {"x": 1, "y": 1}, validation="loose")
    with pytest.raises(UsageError, match="unknown validation mode 'loose'"):
        await call_tool(TOOLS["add"], "c", {"x": "1"}, validation="loose")


async def test_arguments_that_are_no_mapping_fail_like_the_reference() -> None:
    bad: Any = 42
    with pytest.raises(TypeError):
        await reference(TOOLS["add"], "c", bad, validation="loose")
    with pytest.raises(TypeError):
        await call_tool(TOOLS["add"], "c", bad, validation="loose")
    pairs: Any = [("x", 1), ("y", 2)]
    assert await check_equivalent(TOOLS["add"], pairs) == Ok(payload=3)


# -- the fast path is really taken -----------------------------------------------------------


async def test_common_calls_skip_validation_and_binding(monkeypatch: pytest.MonkeyPatch) -> None:
    prepared: list[str] = []
    original = dispatch_module._prepare_tool

    def spy(t: Tool, call: ToolCall, context: Any, validation: str) -> Any:
        prepared.append(t.name)
        return original(t, call, context, validation)

    monkeypatch.setattr(call_module, "_prepare_tool", spy)
    assert await call_tool(TOOLS["add"], "c", {"x": 2, "y": 3}) == Ok(payload=5)
    assert await call_tool(TOOLS["add_sync"], "c", {"x": 2, "y": 3}) == Ok(payload=5)
    assert await call_tool(TOOLS["add_inline"], "c", {"x": 2, "y": 3}) == Ok(payload=5)
    assert await call_tool(TOOLS["whoami"], "c", {"prefix": "p"}) == Ok(
        payload=["p", "", "c", "whoami", {}, None]
    )
    assert await call_tool(TOOLS["nothing"], "c", {}) == Ok(payload="nothing")
    assert await call_tool(TOOLS["search"], "c", {"query": "q"}) == Ok(
        payload={"query": "q", "limit": 2, "exact": None}
    )
    assert await call_tool(TOOLS["search"], "c", {"query": "q", "exact": True}) == Ok(
        payload={"query": "q", "limit": 2, "exact": True}
    )
    assert await call_tool(TOOLS["echo"], "c", {"value": (1,), "tag": ""}) == Ok(payload=[1])
    assert prepared == []
    assert await call_tool(TOOLS["add"], "c", {"x": "2", "y": 3}) == Ok(payload=5)
    assert prepared == ["add"], "a coercion takes the long way"


def test_plans_are_decided_when_the_tool_is_built() -> None:
    assert TOOLS["add"]._plan.accepts is not None and TOOLS["add"]._plan.output is int
    assert TOOLS["echo"]._plan.output is None
    for name in ("positional", "raw", "shaped", "mismatched"):
        assert TOOLS[name]._plan.accepts is None, name
    assert "fast_input=2 argument(s)" in repr(TOOLS["add"]._plan)
    assert tool(add) == tool(add), "the plan does not take part in equality"


# -- threads, cancellation -------------------------------------------------------------------


async def test_sync_tools_run_in_a_thread_under_the_limiter() -> None:
    limiter = anyio.CapacityLimiter(1)
    main_thread = threading.get_ident()

    def probe(tag: str) -> list[Any]:
        borrowed = anyio.from_thread.run_sync(lambda: limiter.borrowed_tokens)
        return [tag, threading.get_ident() != main_thread, borrowed]

    result = await call_tool(tool(probe), "c", {"tag": "t"}, limiter=limiter)
    assert result == Ok(payload=["t", True, 1])


async def test_arguments_are_read_when_the_call_starts() -> None:
    """Like dispatch, a sync tool waiting for a thread sees the arguments as they were
    when it was called, not as the caller changed them meanwhile."""
    limiter = anyio.CapacityLimiter(1)
    results: list[object] = []
    arguments = {"x": 1, "y": 2}

    async def run() -> None:
        results.append(await call_tool(TOOLS["add_sync"], "c", arguments, limiter=limiter))

    async with anyio.create_task_group() as tg:
        await limiter.acquire()
        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        arguments["x"] = 100
        limiter.release()
    assert results == [Ok(payload=3)]


async def test_non_blocking_tools_run_inline_and_not_when_cancelled() -> None:
    main_thread = threading.get_ident()
    ran: list[str] = []

    def where(tag: str) -> bool:
        ran.append(tag)
        return threading.get_ident() == main_thread

    inline = tool(where, blocking=False)
    assert await call_tool(inline, "c", {"tag": "a"}) == Ok(payload=True)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await call_tool(inline, "c", {"tag": "b"})
    assert scope.cancelled_caught and ran == ["a"]


async def test_cancelling_an_async_tool_propagates() -> None:
    started = anyio.Event()
    results: list[object] = []

    async def hang(x: int) -> int:
        started.set()
        await anyio.sleep_forever()
        return x  # pragma: no cover

    async def run() -> None:
        results.append(await call_tool(tool(hang), "c", {"x": 1}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert results == [] and tg.cancel_scope.cancelled_caught


async def test_cancelling_while_a_sync_tool_runs_propagates() -> None:
    started = anyio.Event()
    release = threading.Event()
    results: list[object] = []

    def block(x: int) -> int:
        anyio.from_thread.run_sync(started.set)
        release.wait()
        return x

    async def run() -> None:
        results.append(await call_tool(tool(block), "c", {"x": 1}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
        release.set()
    assert results == []


async def test_base_exceptions_from_tools_are_not_caught() -> None:
    async def interrupt(x: int) -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await call_tool(tool(interrupt), "c", {"x": 1})


# -- property: the same answer as dispatch for random arguments ------------------------------

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=6)
    | st.sampled_from(["1", "2.5", "true", "ok", "err", "raise", "pair", "int", "str", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_NAMES = "x y query limit exact factor value tag v d a b prefix ctx n k on note level mode kind key"
_keys = st.sampled_from([*_NAMES.split(), "items", "opts", ":x", "extra"]) | st.text(max_size=3)
_arguments = st.dictionaries(_keys, _values, max_size=4)


def _matching(t: Tool) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments naming the tool's parameters (all, or some), so the fast path is tried
    often."""
    names = [p.name for p in t.signature.params] if t.signature is not None else []
    every = dict.fromkeys(names, _values)
    return st.fixed_dictionaries(every) | st.fixed_dictionaries({}, optional=every)


@st.composite
def _calls(draw: st.DrawFn) -> tuple[Tool, dict[str, Any]]:
    t = draw(st.sampled_from(list(TOOLS.values())))
    return t, draw(_matching(t) | _arguments)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=400)
@given(
    case=_calls(),
    mode=st.sampled_from(["enabled", "strict", "warn_only", "disabled"]),
    context=st.sampled_from([None, CONTEXT]),
)
def test_call_tool_equals_dispatch(
    backend: str, case: tuple[Tool, dict[str, Any]], mode: str, context: ToolContext | None
) -> None:
    t, arguments = case

    async def compare() -> None:
        await check_equivalent(t, arguments, validation=mode, context=context)

    anyio.run(compare, backend=backend)
