"""A second request reaching a busy run is rejected on the real Runtime (every strategy).

Nothing in the public API sends a request into a running run, so a custom directive does:
its handler publishes ``ai.request.started`` into the run (``DirectiveContext.emit``) while
the strategy waits for a tool that only finishes after that knock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from contract_kit import CASES, Case, Recorder, check_contract, of_run

from ptcflow.directives import Directive
from ptcflow.runtime import Runtime
from ptcflow.runtime.lowlevel import DirectiveContext
from ptcflow.signals import REQUEST_ERROR, REQUEST_STARTED, RequestStartedData
from ptcflow.strategies import RunInfo
from ptcflow.testing import ScriptedLLM


class Knock(Directive, frozen=True, kw_only=True, tag="test_knock"):
    """Publish a second ``ai.request.started`` into the run."""


class Knocking(Recorder):
    """Adds one Knock to the first directives of the run."""

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        state, directives = super().init(run)
        knock = Knock(id=f"{run.run_id}/knock")
        self.directives.append(knock)
        return state, [*directives, knock]


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_second_request_while_busy_is_rejected(case: Case) -> None:
    knocked = anyio.Event()

    async def knock(directive: Knock, ctx: DirectiveContext) -> str:
        ctx.emit(REQUEST_STARTED, RequestStartedData(input="a second question"))
        knocked.set()
        return "knocked"

    async def wait_for_knock() -> str:
        """Finishes once the second request has been sent."""
        await knocked.wait()
        return "ok"

    llm = ScriptedLLM([case.calls([("wait_for_knock", {})]), case.answer("done")])
    recorder = Knocking(case.make())
    with anyio.fail_after(10):
        async with Runtime(
            llm=llm, tools={"wait_for_knock": wait_for_knock}, handlers={Knock: knock}
        ) as rt:
            step = await rt.run(recorder, case.input, record=True)
    assert step.ok, step.error
    check_contract(step, recorder)
    (rejected,) = [s for s in of_run(step) if s.type == REQUEST_ERROR]
    assert rejected.data.error.type == "busy"
    assert len(llm.requests) == 2, "the rejected request did not start another model call"
