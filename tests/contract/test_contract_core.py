"""The contract suite against the run core directly: the same fault scenarios, driven by a
plain-asyncio driver (``core_driver.py``) instead of the Runtime, and the same checks.

What the core guarantees (one terminal per directive, ordering, ``seq``, the journal and
the replay) must hold whichever driver performs the directives.
"""

from __future__ import annotations

import anyio
import pytest
from contract_kit import CASES, Case, Recorder, check_contract
from core_driver import run_on_core
from test_contract_faults import SCENARIOS, TOOLS, Scenario

from ptcflow.testing import ScriptedLLM


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_contract_holds_on_the_core(case: Case, scenario: Scenario) -> None:
    if why := case.skipped(scenario.name):
        pytest.skip(why)
    llm = ScriptedLLM(scenario.script(case))
    recorder = Recorder(case.make(**scenario.options), crash_on=scenario.crash_on)
    with anyio.fail_after(10):
        step = await run_on_core(
            recorder, case.input, llm=llm, tools=TOOLS, timeout=scenario.timeout
        )
    assert step.ok is scenario.ok, step.error
    if scenario.error is not None:
        assert step.error is not None and step.error.type == scenario.error, step.error
    if scenario.retryable is not None:
        assert step.error is not None and step.error.retryable is scenario.retryable
    check_contract(step, recorder)
    if scenario.check is not None:
        scenario.check(step, llm)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_a_run_with_nothing_to_do_ends_on_the_core(case: Case) -> None:
    if why := case.skipped("nothing_to_do_stalls"):
        pytest.skip(why)
    recorder = Recorder(case.make())
    with anyio.fail_after(2):
        step = await run_on_core(recorder, None, llm=ScriptedLLM([]), tools=[])
    assert not step.ok and step.reason == "stalled"
    check_contract(step, recorder)
