"""Guardrails: input, output and tool-call guards (sync or async) pass, rewrite or trip;
a trip ends the run with guardrail_tripped; a guard that raises or hangs is bounded."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ptcflow import Guardrails
from ptcflow.errors import ConfigError
from ptcflow.runtime import GUARDRAIL, GuardInfo, Rewrite, Runtime, Step, Trip
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, Turn

pytestmark = pytest.mark.anyio

ran: list[Any] = []


def add(x: int, y: int) -> int:
    """Add two integers."""
    ran.append((x, y))
    return x + y


async def _run(llm: ScriptedLLM, guards: Guardrails, input: str = "2+3?") -> Step:
    ran.clear()
    async with Runtime(llm=llm, tools=[add]) as rt:
        with anyio.fail_after(20):
            step = await rt.run(ReAct(), input, guardrails=guards, record=True)
        assert rt.statistics().runs_active == 0
    return step


def _tripped(step: Step, kind: str = "guardrail_tripped") -> dict[str, Any]:
    assert not step.ok and step.error is not None and step.error.type == kind, step.error
    assert step.reason == kind
    details: dict[str, Any] = step.error.details
    return details


def no_secrets(text: Any, info: GuardInfo) -> Trip | None:
    return Trip("the input holds a secret") if "secret" in str(text) else None


async def async_upper(text: Any, info: GuardInfo) -> Rewrite:
    await anyio.lowlevel.checkpoint()
    return Rewrite(str(text).upper())


def test_guards_must_be_callable() -> None:
    with pytest.raises(ConfigError, match="takes functions"):
        Guardrails(input=["nope"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="timeout_s"):
        Guardrails(timeout_s=0)


async def test_an_input_guard_trips_before_any_model_call() -> None:
    llm = ScriptedLLM(["never"])
    step = await _run(llm, Guardrails(input=[no_secrets]), "my secret")
    assert _tripped(step) == {
        "guard": "no_secrets",
        "stage": "input",
        "reason": "the input holds a secret",
    }
    assert llm.calls == 0
    [signal] = [s for s in step.signals if s.type == GUARDRAIL]
    assert signal.data["verdict"] == "guardrail_tripped"


async def test_an_input_guard_rewrites_the_input() -> None:
    llm = ScriptedLLM(["ok"])
    step = await _run(llm, Guardrails(input=[async_upper, no_secrets]), "abc")
    assert step.ok and llm.requests[0].messages[-1].content == "ABC"


async def test_a_concurrent_input_guard_cancels_the_first_model_call() -> None:
    gate = anyio.Event()

    async def slow_guard(text: Any, info: GuardInfo) -> Trip:
        await gate.wait()
        return Trip("too late for the model")

    def answer(request: Any) -> Turn:
        gate.set()  # the model call has started: now the guard trips
        return Turn(text="never", latency=30)

    llm = ScriptedLLM(answer)
    step = await _run(llm, Guardrails(input=[slow_guard], concurrent_input=True))
    assert _tripped(step)["reason"] == "too late for the model"
    assert llm.calls == 1


async def test_an_output_guard_trips_or_rewrites() -> None:
    def no_fives(value: Any, info: GuardInfo) -> Trip | None:
        assert info.stage == "output"
        return Trip("five is not allowed") if "5" in str(value) else None

    step = await _run(ScriptedLLM(["5"]), Guardrails(output=[no_fives]))
    assert _tripped(step)["stage"] == "output" and step.value is None
    step = await _run(ScriptedLLM(["5"]), Guardrails(output=[async_upper]))
    assert step.ok and step.value == "5"
    step = await _run(ScriptedLLM(["five"]), Guardrails(output=[async_upper]))
    assert step.ok and step.value == "FIVE"


async def test_a_tool_guard_trips_or_rewrites_the_arguments() -> None:
    def no_big(call: Any, info: GuardInfo) -> Trip | None:
        assert info.stage == "tool" and info.tool == "add"
        return Trip("too big") if call["arguments"]["x"] > 100 else None

    def double(call: Any, info: GuardInfo) -> Rewrite:
        args = call["arguments"]
        return Rewrite({**call, "arguments": {**args, "x": args["x"] * 2}})

    big = ScriptedLLM([ScriptedLLM.tool_call("add", x=500, y=1), "done"])
    step = await _run(big, Guardrails(tool=[no_big]))
    assert _tripped(step) == {"guard": "no_big", "stage": "tool", "reason": "too big"}
    assert ran == []
    small = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=1), "done"])
    step = await _run(small, Guardrails(tool=[double, no_big]))
    assert step.ok and ran == [(4, 1)]


async def test_a_guard_that_raises_or_hangs_is_a_typed_outcome() -> None:
    def broken(text: Any, info: GuardInfo) -> None:
        raise RuntimeError("bug in the guard")

    async def hangs(text: Any, info: GuardInfo) -> None:
        await anyio.sleep_forever()

    step = await _run(ScriptedLLM(["x"]), Guardrails(input=[broken]))
    assert "RuntimeError: bug in the guard" in _tripped(step, "guardrail_failed")["reason"]
    step = await _run(ScriptedLLM(["x"]), Guardrails(input=[hangs], timeout_s=0.05))
    assert "did not answer within 0.05 s" in _tripped(step, "guardrail_failed")["reason"]
    step = await _run(ScriptedLLM(["x"]), Guardrails(input=[lambda t, i: 42]))
    assert (
        "return None, Rewrite(value) or Trip(reason)"
        in _tripped(step, "guardrail_failed")["reason"]
    )


async def test_a_session_run_is_guarded_and_a_tripped_run_stores_no_turn() -> None:
    from ptcflow import Session

    session = Session("guarded")
    async with Runtime(llm=ScriptedLLM([Turn(text="fine")] * 2), tools=[add]) as rt:
        with anyio.fail_after(20):
            step = await rt.run(
                ReAct(), "my secret", guardrails=Guardrails(input=[no_secrets]), session=session
            )
            assert _tripped(step)["stage"] == "input"
            assert await session.turns() == ()
            step = await rt.run(
                ReAct(), "hi", guardrails=Guardrails(input=[no_secrets]), session=session
            )
    assert step.ok and len(await session.turns()) == 1


async def test_an_output_guards_verdict_is_journaled_before_the_end_signal() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ptcflow.runtime import Telemetry
    from ptcflow.signals import REQUEST_COMPLETED, REQUEST_FAILED

    def no_fives(value: Any, info: GuardInfo) -> Trip | None:
        return Trip("five is not allowed") if "5" in str(value) else None

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(tracer_provider=provider)
    for answer, guard, end, verdict in (
        ("5", no_fives, REQUEST_FAILED, "guardrail_tripped"),
        ("five", async_upper, REQUEST_COMPLETED, "rewrite"),
        ("four", no_fives, REQUEST_COMPLETED, "pass"),
    ):
        exporter.clear()
        async with Runtime(llm=ScriptedLLM([answer]), telemetry=telemetry) as rt:
            guards = Guardrails(output=[guard])
            step = await rt.run(ReAct(), "2+3?", guardrails=guards, record=True)
        types = [s.type for s in step.signals]
        assert types[-2:] == [GUARDRAIL, end], types  # the verdict, then the end signal
        assert step.signals[-2].data["stage"] == "output"
        assert step.signals[-2].data["verdict"] == verdict
        result = step.signals[-1].data.result
        if verdict == "guardrail_tripped":
            assert result.error.type == "guardrail_tripped" and step.reason == verdict
        else:
            expected = answer.upper() if verdict == "rewrite" else answer
            assert result.payload == step.value == expected
        spans = {s.name: s for s in exporter.get_finished_spans()}
        guard_span = spans[f"guardrail {guard.__name__}"]
        [run_span] = [s for name, s in spans.items() if name.startswith("invoke_agent")]
        assert guard_span.parent is not None
        assert guard_span.parent.span_id == run_span.context.span_id
        assert guard_span.attributes is not None
        assert guard_span.attributes["ptcflow.guardrail.verdict"] == verdict
        assert run_span.end_time is not None and guard_span.end_time is not None
        assert guard_span.end_time <= run_span.end_time  # checked before the run ended


async def test_a_run_cancelled_while_its_output_is_checked_ends_cancelled() -> None:
    started = anyio.Event()

    async def slow(value: Any, info: GuardInfo) -> None:
        started.set()
        await anyio.sleep_forever()

    async with Runtime(llm=ScriptedLLM(["5"])) as rt:
        with anyio.fail_after(20):
            steps: list[Step] = []

            async def go() -> None:
                guards = Guardrails(output=[slow])
                steps.append(await rt.run(ReAct(), "2+3?", guardrails=guards, record=True))

            async with anyio.create_task_group() as tg:
                tg.start_soon(go)
                await started.wait()
                tg.cancel_scope.cancel()
            assert not steps  # the awaiting task was cancelled: no Step for it
            assert rt.statistics().runs_active == 0
    assert rt.statistics().runs_active == 0


async def test_an_output_guard_that_hangs_fails_the_run_in_time() -> None:
    async def hangs(value: Any, info: GuardInfo) -> None:
        await anyio.sleep_forever()

    async with Runtime(llm=ScriptedLLM(["5"])) as rt:
        with anyio.fail_after(20):
            guards = Guardrails(output=[hangs], timeout_s=0.05)
            step = await rt.run(ReAct(), "2+3?", guardrails=guards, record=True)
    assert _tripped(step, "guardrail_failed")["stage"] == "output"
    assert [s.type for s in step.signals][-2:] == [GUARDRAIL, "ai.request.failed"]
