"""Agent forms with fake async tools, on asyncio and trio: call, ctx, return/fail, memory,
pmap/pcalls."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ptcflow.errors import UsageError
from ptcflow.lisp import Keyword, Limits, run, run_sync

pytestmark = pytest.mark.anyio


class Recorder:
    """Fake tools that record their calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str, result: Any = None) -> Any:
        async def call(args: dict[str, Any]) -> Any:
            self.calls.append((name, args))
            await anyio.lowlevel.checkpoint()
            return args if result is None else result

        return call


async def test_call_passes_string_keys_and_plain_values() -> None:
    rec = Recorder()
    r = await run(
        '(call "echo" {:q "x" :n 2 :tags [:a "b"] :nested {:k :v} "raw" nil})',
        tools={"echo": rec.tool("echo")},
    )
    assert r.error is None
    assert rec.calls == [
        ("echo", {"q": "x", "n": 2, "tags": ["a", "b"], "nested": {"k": "v"}, "raw": None})
    ]
    assert r.value == {"q": "x", "n": 2, "tags": ["a", "b"], "nested": {"k": "v"}, "raw": None}


async def test_tool_results_become_lisp_data_with_keyword_keys() -> None:
    rec = Recorder()
    users = [{"id": 1, "name": "ann", "roles": ["admin"]}, {"id": 2, "name": "bob", "roles": []}]
    r = await run(
        '(let [us (call "users" {})] (return (mapv :name (filter #(seq (:roles %)) us))))',
        tools={"users": rec.tool("users", users)},
    )
    assert (r.error, r.value, r.returned) == (None, ["ann"], True)


async def test_ctx_name_calls_a_tool_with_a_map() -> None:
    rec = Recorder()
    r = await run(
        "(ctx/search {:q ctx/topic})", ctx={"topic": "t"}, tools={"search": rec.tool("search", [1])}
    )
    assert r.value == [1]
    assert rec.calls == [("search", {"q": "t"})]


async def test_call_without_arguments_sends_an_empty_map() -> None:
    rec = Recorder()
    r = await run('(call "now")', tools={"now": rec.tool("now", 5)})
    assert (r.value, rec.calls) == (5, [("now", {})])


async def test_dynamic_tool_name_is_checked_at_run_time() -> None:
    rec = Recorder()
    r = await run('(let [t (str "ec" "ho")] (call t {:a 1}))', tools={"echo": rec.tool("echo")})
    assert r.value == {"a": 1}
    r = await run('(let [t "nope"] (call t {:a 1}))', tools={"echo": rec.tool("echo")})
    assert r.error is not None and r.error.category == "unknown_tool"
    r = await run('(let [t "echo" a [1]] (call t a))', tools={"echo": rec.tool("echo")})
    assert r.error is not None and r.error.category == "type"
    assert "map of named arguments" in r.error.message


RETURN_FAIL = [
    ("(return 42)", True, False, 42),
    ('(call "return" {:answer 1})', True, False, {"answer": 1}),
    ("(return)", True, False, None),
    ('(do (return :early) (call "echo" {}))', True, False, Keyword("early")),
    (
        '(fail {:reason :not-found :message "no"})',
        False,
        True,
        {"reason": Keyword("not-found"), "message": "no"},
    ),
    (
        '(call "fail" {:reason :bad :message "m"})',
        False,
        True,
        {"reason": Keyword("bad"), "message": "m"},
    ),
    ("(map (fn [x] (if (= x 2) (return x) x)) [1 2 3])", True, False, 2),
    ("(loop [i 0] (if (= i 3) (return i) (recur (inc i))))", True, False, 3),
    ("(pmap (fn [x] (when (= x 1) (fail x))) [0 1 2])", False, True, 1),
]


@pytest.mark.parametrize(("source", "returned", "failed", "value"), RETURN_FAIL)
async def test_return_and_fail_end_the_program_at_once(
    source: str, returned: bool, failed: bool, value: Any
) -> None:
    rec = Recorder()
    r = await run(source, tools={"echo": rec.tool("echo")})
    assert r.error is None
    assert (r.returned, r.failed) == (returned, failed)
    assert (r.fail_value if failed else r.value) == value
    assert rec.calls == []


async def test_tool_exception_becomes_a_tool_error() -> None:
    async def boom(args: dict[str, Any]) -> Any:
        raise RuntimeError("database is down")

    r = await run('(let [x 1]\n  (call "boom" {:a x}))', tools={"boom": boom})
    assert r.error is not None
    assert r.error.category == "tool_error"
    assert "database is down" in r.error.message
    assert (r.error.line, r.error.column) == (2, 3)
    [record] = r.tool_calls
    assert (record.name, record.args, record.error) == ("boom", {"a": 1}, "database is down")


async def test_error_envelope_dict_is_a_tool_error() -> None:
    async def env(args: dict[str, Any]) -> Any:
        return {"ok": False, "error": {"type": "not_found", "message": "no user 7"}}

    r = await run('(call "env" {})', tools={"env": env})
    assert r.error is not None and r.error.category == "tool_error"
    assert "not_found: no user 7" in r.error.message


async def test_error_envelope_object_is_a_tool_error() -> None:
    class Envelope:
        type = "timeout"
        message = "upstream slow"
        retryable = True

    async def env(args: dict[str, Any]) -> Any:
        return Envelope()

    r = await run('(call "env" {})', tools={"env": env})
    assert r.error is not None and r.error.category == "tool_error"
    assert "timeout: upstream slow" in r.error.message
    assert r.tool_calls[0].error == "timeout: upstream slow"


async def test_tool_returning_unsupported_objects_is_a_tool_error() -> None:
    async def weird(args: dict[str, Any]) -> Any:
        return object()

    r = await run('(call "weird" {})', tools={"weird": weird})
    assert r.error is not None and r.error.category == "tool_error"
    assert "object" in r.error.message


async def test_tool_call_records() -> None:
    rec = Recorder()
    r = await run(
        '(call "a" {:x 1}) (call "b" {:y [1]})',
        tools={"a": rec.tool("a", 10), "b": rec.tool("b", {"z": 2})},
    )
    assert [(c.name, c.args, c.result, c.error) for c in r.tool_calls] == [
        ("a", {"x": 1}, 10, None),
        ("b", {"y": [1]}, {"z": 2}, None),
    ]
    assert all(c.duration_ms >= 0 for c in r.tool_calls)
    assert r.value == {"z": 2}


async def test_tool_call_limit() -> None:
    rec = Recorder()
    r = await run(
        '(dotimes [i 5] (call "a" {:i i}))',
        tools={"a": rec.tool("a")},
        limits=Limits(max_tool_calls=3),
    )
    assert r.error is not None and r.error.category == "limit"
    assert r.error.limit == "max_tool_calls"  # type: ignore[attr-defined]
    assert len(rec.calls) == 3


# -- memory ---------------------------------------------------------------------------


async def test_def_and_memory_put_persist_across_turns() -> None:
    first = await run("(def total 10) (memory/put :seen [1 2]) (defn double [x] (* 2 x)) :ok")
    assert first.error is None
    assert set(first.memory) == {"total", "seen", "double"}
    second = await run(
        "[(double total) memory/seen (memory/get :seen) (memory/get :nope 0)]", memory=first.memory
    )
    assert second.value == [20, [1, 2], [1, 2], 0]


async def test_failed_turn_leaves_memory_unchanged() -> None:
    before = {"n": 1}
    r = await run("(memory/put :n 2) (def extra 3) (inc nil)", memory=before)
    assert r.error is not None
    assert r.memory == {"n": 1}
    assert before == {"n": 1}


async def test_fail_leaves_memory_unchanged_and_return_commits() -> None:
    r = await run("(memory/put :n 2) (fail :stop)", memory={"n": 1})
    assert (r.failed, r.memory) == (True, {"n": 1})
    r = await run("(memory/put :n 2) (return :done)", memory={"n": 1})
    assert (r.returned, r.memory) == (True, {"n": 2})


async def test_timeout_leaves_memory_unchanged() -> None:
    async def slow(args: dict[str, Any]) -> Any:
        await anyio.sleep_forever()

    r = await run(
        '(memory/put :n 2) (call "slow" {})',
        memory={"n": 1},
        tools={"slow": slow},
        limits=Limits(timeout_ms=50),
    )
    assert r.error is not None and r.error.category == "timeout"
    assert r.memory == {"n": 1}


async def test_memory_values_stay_lisp_values() -> None:
    r = await run('(memory/put :m {"s" 1 :k :v})')
    r2 = await run('[(get memory/m "s") (:k memory/m)]', memory=r.memory)
    assert r2.value == [1, Keyword("v")]


async def test_memory_is_read_only_for_ctx() -> None:
    r = await run("ctx/x", ctx={"x": {"a": [1, 2]}})
    assert r.value == {"a": [1, 2]}


async def test_plain_data_is_required_at_the_boundary() -> None:
    with pytest.raises(UsageError, match="plain data"):
        await run("1", ctx={"x": object()})


# -- pmap / pcalls --------------------------------------------------------------------


async def test_pmap_preserves_order() -> None:
    async def slow_echo(args: dict[str, Any]) -> Any:
        for _ in range(10 - args["i"]):
            await anyio.lowlevel.checkpoint()
        return args["i"] * 10

    r = await run('(pmap (fn [i] (call "e" {:i i})) (range 10))', tools={"e": slow_echo})
    assert r.value == [i * 10 for i in range(10)]


async def test_pmap_runs_tool_calls_concurrently() -> None:
    n = 6
    in_flight = 0
    all_started = anyio.Event()

    async def barrier(args: dict[str, Any]) -> Any:
        nonlocal in_flight
        in_flight += 1
        if in_flight == n:
            all_started.set()
        await all_started.wait()  # deadlocks unless every call is in flight at once
        return args["i"]

    with anyio.fail_after(5):
        r = await run(f'(pmap #(call "b" {{:i %}}) (range {n}))', tools={"b": barrier})
    assert r.value == list(range(n))


async def test_pmap_concurrency_is_bounded() -> None:
    in_flight = peak = 0

    async def track(args: dict[str, Any]) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        in_flight -= 1
        return args["i"]

    r = await run(
        '(pmap #(call "t" {:i %}) (range 20))',
        tools={"t": track},
        limits=Limits(max_pmap_concurrency=4),
    )
    assert r.value == list(range(20))
    assert peak == 4


async def test_pmap_without_tools_is_a_plain_map() -> None:
    r = await run("(pmap inc [1 2 3])")
    assert r.value == [2, 3, 4]
    r = await run("(pmap :a [{:a 1} {:a 2}])")
    assert r.value == [1, 2]


async def test_pmap_elements_make_several_sequential_calls() -> None:
    rec = Recorder()
    r = await run(
        '(pmap (fn [i] [(call "a" {:i i}) (call "a" {:j i})]) [1 2])', tools={"a": rec.tool("a")}
    )
    assert r.value == [[{"i": 1}, {"j": 1}], [{"i": 2}, {"j": 2}]]
    assert len(rec.calls) == 4


async def test_nested_pmap() -> None:
    rec = Recorder()
    r = await run(
        '(pmap (fn [i] (pmap (fn [j] (call "a" {:v [i j]})) [0 1])) [0 1])',
        tools={"a": rec.tool("a")},
    )
    assert r.value == [[{"v": [0, 0]}, {"v": [0, 1]}], [{"v": [1, 0]}, {"v": [1, 1]}]]


async def test_pmap_error_in_one_element_ends_the_program() -> None:
    async def maybe(args: dict[str, Any]) -> Any:
        if args["i"] == 2:
            raise ValueError("bad item 2")
        return args["i"]

    r = await run('(pmap #(call "m" {:i %}) (range 5))', tools={"m": maybe})
    assert r.error is not None and r.error.category == "tool_error"
    assert "bad item 2" in r.error.message


async def test_pcalls() -> None:
    rec = Recorder()
    r = await run(
        '(pcalls #(call "a" {:n 1}) (fn [] (call "a" {:n 2})) (constantly 3))',
        tools={"a": rec.tool("a")},
    )
    assert r.value == [{"n": 1}, {"n": 2}, 3]


async def test_thousands_of_programs_wait_on_tools_concurrently() -> None:
    n = 1000
    waiting = 0
    release = anyio.Event()

    async def gate(args: dict[str, Any]) -> Any:
        nonlocal waiting
        waiting += 1
        if waiting == n:
            release.set()
        await release.wait()
        return args["i"]

    results: list[Any] = [None] * n

    async def one(i: int) -> None:
        r = await run(f'(inc (call "gate" {{:i {i}}}))', tools={"gate": gate})
        results[i] = r.value

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
    assert results == [i + 1 for i in range(n)]


async def test_cancelling_a_run_stops_the_program() -> None:
    started = anyio.Event()
    after: list[str] = []

    async def hang(args: dict[str, Any]) -> Any:
        started.set()
        await anyio.sleep_forever()

    async def note(args: dict[str, Any]) -> Any:
        after.append("ran")
        return None

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: run('(call "hang" {}) (call "note" {})', tools={"hang": hang, "note": note})
            )
            await started.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert after == []


def test_run_sync() -> None:
    r = run_sync('(println "hi" 1) (+ 1 2)')
    assert (r.value, r.prints, r.ok) == (3, ["hi 1\n"], True)


async def test_a_plain_function_works_as_a_tool_too() -> None:
    def add(args: dict[str, Any]) -> Any:
        return args["a"] + args["b"]

    r = await run('(call "add" {:a 1 :b 2})', tools={"add": add})
    assert (r.value, r.error) == (3, None)


async def test_timeout_during_pmap_stops_every_element() -> None:
    started = 0

    async def hang(args: dict[str, Any]) -> Any:
        nonlocal started
        started += 1
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        r = await run(
            '(pmap #(call "h" {:i %}) (range 4))', tools={"h": hang}, limits=Limits(timeout_ms=100)
        )
    assert r.error is not None and r.error.category == "timeout"
    assert started == 4
    assert r.tool_calls == []


async def test_tool_error_inside_nested_fn_carries_the_call_position() -> None:
    async def bad(args: dict[str, Any]) -> Any:
        raise KeyError("missing")

    r = await run('(defn get-it [k]\n  (call "bad" {:k k}))\n(map get-it [1])', tools={"bad": bad})
    assert r.error is not None and r.error.category == "tool_error"
    assert (r.error.line, r.error.column) == (2, 3)


async def test_memory_from_earlier_turns_never_shadows_builtins() -> None:
    first = await run("(memory/put :count 5) (def total 1) (def str 3) (defn double [x] [x x])")
    second = await run("[(count [1 2]) total memory/count (str 1) (double 2)]", memory=first.memory)
    assert second.value == [2, 1, 5, "1", [2, 2]]
    same_turn = await run("(def inc 10) inc")
    assert same_turn.value == 10


async def test_a_tool_may_run_another_program() -> None:
    async def child(args: dict[str, Any]) -> Any:
        inner = await run(
            '(* 2 (call "leaf" {:x ctx/x}))', ctx={"x": args["x"]}, tools={"leaf": leaf}
        )
        return inner.value

    async def leaf(args: dict[str, Any]) -> Any:
        await anyio.lowlevel.checkpoint()
        return args["x"] + 1

    r = await run('(pmap #(call "child" {:x %}) [1 2 3])', tools={"child": child})
    assert r.value == [4, 6, 8]
