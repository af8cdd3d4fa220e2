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
