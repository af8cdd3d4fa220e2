"""RunProgram and ai.program.result: what a program kind receives and publishes."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from ptcflow.directives import RunProgram
from ptcflow.lisp import Keyword, ReplayMismatch
from ptcflow.program import ProgramCache, perform_program, plain_value
from ptcflow.signals import (
    PROGRAM_RESULT,
    TERMINAL_TYPES,
    Err,
    ErrorEnvelope,
    Ok,
    ProgramOutput,
    ProgramResultData,
    ProgramToolCall,
    Signal,
    decode_signal,
    encode_signal,
)

pytestmark = pytest.mark.anyio


class Tools:
    """A router over plain functions that records what it performed."""

    def __init__(self, **fns: Any) -> None:
        self.fns = fns
        self.performed: list[tuple[int, str, dict[str, Any]]] = []

    async def __call__(self, name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
        self.performed.append((index, name, args))
        await anyio.lowlevel.checkpoint()
        try:
            return Ok(payload=self.fns[name](**args))
        except Exception as exc:
            return Err(error=ErrorEnvelope.make("tool_error", str(exc)))


ORDERS = [
    {"id": 1, "customer": "ann", "amount": 20.0, "status": "delivered"},
    {"id": 2, "customer": "bob", "amount": 5.5, "status": "open"},
    {"id": 3, "customer": "ann", "amount": 7.25, "status": "delivered"},
]
PROGRAM = """
(defn delivered? [o] (= (:status o) "delivered"))
(def by-customer (group-by :customer (filter delivered? (call "orders" {}))))
(def rates (pmap #(call "rate" {:customer %}) (keys by-customer)))
(println "customers:" (count by-customer))
(return {:totals (into {} (for [[c os] by-customer] [c (sum-by :amount os)]))
         :state :done
         :seen #{:ann}})
"""


def tools() -> Tools:
    return Tools(orders=lambda: ORDERS, rate=lambda customer: {"customer": customer, "r": 1.1})


def directive(**fields: Any) -> RunProgram:
    base: dict[str, Any] = {
        "id": "run1/program/1",
        "source": PROGRAM,
        "tool_names": ("orders", "rate"),
    }
    return RunProgram(**{**base, **fields})


async def test_a_program_run_is_described_as_plain_data() -> None:
    out = await perform_program(directive(), tools())
    assert out.error is None and out.returned and not out.failed
    assert out.value == {"totals": {"ann": 27.25}, "state": "done", "seen": ["ann"]}
    assert out.prints == ("customers: 1\n",)
    assert [(c.index, c.name, c.args) for c in out.tool_calls] == [
        (0, "orders", {}),
        (1, "rate", {"customer": "ann"}),
    ]
    assert out.tool_calls[1].result == Ok(payload={"customer": "ann", "r": 1.1})
    assert out.memory["rates"] == '[{:customer "ann", :r 1.1}]'
    assert set(out.memory) == {"by-customer", "rates"}
    assert out.functions == {"delivered?": '(defn delivered? [o] (= (:status o) "delivered"))'}
    assert out.memory_bytes == sum(
        len(k) + len(v.encode()) for part in (out.memory, out.functions) for k, v in part.items()
    )


async def test_the_terminal_signal_round_trips_through_the_journal() -> None:
    out = await perform_program(directive(), tools())
    assert PROGRAM_RESULT in TERMINAL_TYPES
    for result in (Ok(payload=out), Err(error=ErrorEnvelope.make("cancelled", "run ended"))):
        signal = Signal.create(
            PROGRAM_RESULT,
            ProgramResultData(result=result, attempts=1, duration_ms=3.5),
            run_id="run1",
            call_id="run1/program/1",
            seq=7,
        )
        assert decode_signal(encode_signal(signal)) == signal


async def test_the_directive_is_plain_tagged_data() -> None:
    d = directive(ctx={"user": "ann"}, limits={"timeout_ms": 1000})
    raw = msgspec.json.encode(d)
    assert msgspec.json.decode(raw)["kind"] == "run_program"
    assert msgspec.json.decode(raw, type=RunProgram) == d
    assert d.problems() == []
    bad = RunProgram(id="p", source="  ", limits={"timeout": 5})
    assert bad.problems() == [
        "source must be a non-empty program",
        f"limits has unknown fields ['timeout']; known: {sorted(bad_fields())}",
    ]


def bad_fields() -> list[str]:
    from ptcflow.lisp import Limits

    return list(Limits.__struct_fields__)


async def test_memory_and_functions_carry_to_the_next_directive() -> None:
    first = await perform_program(directive(), tools())
    second = await perform_program(
        directive(
            id="run1/program/2",
            source='[(count by-customer) (delivered? {:status "delivered"}) memory/rates]',
            memory=first.memory,
            functions=first.functions,
        ),
        tools(),
    )
    assert second.error is None
    assert second.value == [1, True, [{"customer": "ann", "r": 1.1}]]


async def test_a_program_error_is_an_output_with_its_position_and_memory_is_unchanged() -> None:
    first = await perform_program(directive(), tools())
    out = await perform_program(
        directive(source='(def lost 1)\n(+ 1 (call "orders" {}))', memory=first.memory),
        tools(),
    )
    assert out.error is not None
    assert (out.error.category, out.error.line, out.error.column) == ("type", 2, 1)
    assert out.memory == first.memory and out.functions == {}
    assert [c.name for c in out.tool_calls] == ["orders"]


async def test_a_failing_tool_is_recorded_with_its_envelope() -> None:
    t = Tools(boom=lambda: 1 / 0)
    out = await perform_program(
        RunProgram(id="p", source='(call "boom" {})', tool_names=("boom",)), t
    )
    assert out.error is not None and out.error.category == "tool_error"
    (call,) = out.tool_calls
    assert isinstance(call.result, Err) and call.result.error.message == "division by zero"


async def test_the_program_limits_are_applied() -> None:
    out = await perform_program(
        RunProgram(id="p", source="(loop [] (recur))", limits={"max_loop_iterations": 10}), None
    )
    assert out.error is not None and out.error.category == "limit"
    assert out.error.limit == "max_loop_iterations"


async def test_replay_from_the_output_calls_nothing_and_reproduces_it() -> None:
    live_tools = tools()
    live = await perform_program(directive(), live_tools)
    replayed = await perform_program(directive(), None, replay=live.tool_calls)
    strip = {"duration_ms": 0.0}
    assert msgspec.structs.replace(replayed, **strip) == msgspec.structs.replace(
        live,
        **strip,
        tool_calls=tuple(msgspec.structs.replace(c, duration_ms=0.0) for c in live.tool_calls),
    )
    assert len(live_tools.performed) == 2


async def test_resume_performs_only_the_calls_the_record_lacks() -> None:
    live = await perform_program(directive(), tools())
    again = tools()
    out = await perform_program(directive(), again, replay=live.tool_calls[:1])
    assert out.value == live.value
    assert [(i, n) for i, n, _ in again.performed] == [(1, "rate")]


async def test_a_record_of_another_program_raises() -> None:
    live = await perform_program(directive(), tools())
    with pytest.raises(ReplayMismatch):
        await perform_program(
            directive(source='(call "rate" {:customer "zed"})'), None, replay=live.tool_calls
        )


def test_plain_value_is_json_safe_and_stable() -> None:
    value = {
        "k": Keyword("done"),
        1: (1.5, float("-inf"), float("nan")),
        (1, 2): frozenset({Keyword("a")}),
    }
    plain = plain_value(value)
    assert plain == {"k": "done", "1": [1.5, "##-Inf", "##NaN"], "[1 2]": ["a"]}
    assert msgspec.json.decode(msgspec.json.encode(plain)) == plain
    assert isinstance(ProgramOutput(value=plain).value, dict)


async def test_on_call_reports_each_completed_call_as_it_completes() -> None:
    seen: list[ProgramToolCall] = []
    out = await perform_program(directive(), tools(), on_call=seen.append)
    assert seen == [msgspec.structs.replace(c, duration_ms=0.0) for c in out.tool_calls]


async def test_converted_ctx_values_are_shared_by_the_turns_of_a_run() -> None:
    rows = [{"amount": float(i)} for i in range(1000)]
    ctx = {"rows": rows, "n": 3}
    cache = ProgramCache()
    shared = cache.converted
    first = await perform_program(
        RunProgram(id="p/1", source="(sum-by :amount ctx/rows)", ctx=ctx), None, cache=cache
    )
    assert first.value == 499500.0 and shared["rows"][0] is rows
    converted = shared["rows"][1]
    second = await perform_program(
        RunProgram(id="p/2", source="(count ctx/rows)", ctx={**ctx, "n": 4}), None, cache=cache
    )
    assert second.value == 1000 and shared["rows"][1] is converted  # not converted again
    other = [{"amount": 1.0}]
    third = await perform_program(
        RunProgram(id="p/3", source="(count ctx/rows)", ctx={"rows": other}), None, cache=cache
    )
    assert third.value == 1 and shared["rows"][0] is other  # a changed value converts again


async def test_the_cache_reads_and_prints_each_memory_value_once() -> None:
    cache = ProgramCache()
    first = await perform_program(directive(), tools(), cache=cache)
    texts = dict(first.memory)
    values = {name: cache.memory[name][1] for name in texts}
    second = await perform_program(
        directive(
            id="run1/program/2",
            source='(def n (count by-customer)) [n (delivered? {:status "delivered"})]',
            memory=first.memory,
            functions=first.functions,
        ),
        tools(),
        cache=cache,
    )
    assert second.value == [1, True]
    assert {k: v for k, v in second.memory.items() if k != "n"} == texts
    # the values of the first program were neither read back nor printed again
    assert all(cache.memory[name][1] is values[name] for name in texts)
    uncached = await perform_program(
        directive(id="run1/program/2", source="(def n (count by-customer)) 1", memory=first.memory),
        tools(),
    )
    # the same texts without a cache: a value the program did not change keeps its text
    # (printed again, a host map read back as a program map would print its keys sorted)
    assert uncached.memory == second.memory
