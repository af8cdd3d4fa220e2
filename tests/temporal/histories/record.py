"""Record the Temporal histories that ``tests/temporal/test_histories_replay.py`` replays.

Workflows started by one version of ptcflow must replay on the next (a worker deployed
mid-run picks their histories up). These histories were recorded on a dev server with the
scripted model of ``tests/temporal/agents.py``; the test replays each with
:func:`ptcflow.temporal.check_determinism`. Re-record them only on purpose (a change that
breaks replay is what the test is there to catch), from the repository's root::

    PYTHONPATH=src python tests/temporal/histories/record.py [NAME ...]

Each case is one JSON file, ``<case>.json``: ``{"case", "about", "histories": [{"workflow_id",
"run_id", "history"}]}`` -- every workflow execution of the case (the run, its child
workflows, each execution of a run that continued as new), ``history`` being
``WorkflowHistory.to_json()`` parsed.

Cases:
    react_tool: a ReAct run with one tool call (``add``).
    subagent_program: a SubAgent of three turns whose programs call a tool (``RunProgram``).
    agent_as_tool: a SubAgent whose program calls another agent as a tool (three child
        workflows, one of them through ``pmap``).
    continued_subagent: the SubAgent of ``subagent_program`` continuing as new every few
        events: its checkpoints carry the strategy's state by class path
        (``ptcflow.strategies._ptc_state:PtcState`` when recorded).
    continued_react: a ReAct run of ten tool calls continuing as new
        (its checkpoints carry ReAct's state by class path).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # the tests' modules: temporal.agents, temporal.missions

import msgspec  # noqa: E402

from ptcflow.strategies import ReAct  # noqa: E402
from ptcflow.temporal import (  # noqa: E402
    DevServer,
    TemporalOptions,
    TemporalRuntime,
    connect,
    open_worker,
)
from temporal import missions  # noqa: E402
from temporal.agents import ANALYST, add, analyst, model, totaller  # noqa: E402

QUEUE = "histories"


async def _react_tool(trt: TemporalRuntime) -> Any:
    return await trt.run(analyst(), "emea", run_id="hist-react-tool")


async def _subagent_program(trt: TemporalRuntime) -> Any:
    return await trt.run(totaller(), context={"user": "alice"}, run_id="hist-subagent-program")


async def _agent_as_tool(trt: TemporalRuntime) -> Any:
    return await trt.run(missions.orchestrator(), context={"n": 10}, run_id="hist-agent-as-tool")


async def _continued_subagent(trt: TemporalRuntime) -> Any:
    return await trt.run(
        totaller(), context={"user": "alice"}, run_id="hist-continued-subagent", record=True
    )


async def _continued_react(trt: TemporalRuntime) -> Any:
    strategy = ReAct(system_prompt=ANALYST, name="analyst", max_iterations=10)
    return await trt.run(strategy, "emea", run_id="hist-continued-react", record=True)


CASES: dict[str, tuple[str, Callable[[TemporalRuntime], Any], int | None]] = {
    "react_tool": ("a ReAct run with one tool call", _react_tool, None),
    "subagent_program": ("a SubAgent whose programs call a tool", _subagent_program, None),
    "agent_as_tool": ("a SubAgent calling an agent as a tool", _agent_as_tool, None),
    "continued_subagent": ("a SubAgent continuing as new", _continued_subagent, 12),
    "continued_react": ("a ReAct run continuing as new", _continued_react, 12),
}
"""name -> (what it is, the run, ``continue_as_new_events``)."""


async def _executions(client: Any, workflow_id: str) -> list[tuple[str, Any]]:
    """Every execution of ``workflow_id`` (first to last), with its history."""
    desc = await client.get_workflow_handle(workflow_id).describe()
    run_id: str | None = desc.raw_description.workflow_execution_info.first_run_id or desc.run_id
    out = []
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        out.append((run_id, history))
        last = history.events[-1]
        if last.HasField("workflow_execution_continued_as_new_event_attributes"):
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        else:
            run_id = None
    return out


def _children(history: Any) -> list[str]:
    """The workflow ids of the child workflows ``history`` started."""
    return [
        e.start_child_workflow_execution_initiated_event_attributes.workflow_id
        for e in history.events
        if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]


async def record(names: list[str]) -> None:
    """Record ``names`` (all cases when empty) into this directory."""
    async with DevServer() as server:
        client = await connect(server.address)
        async with open_worker(client, task_queue=QUEUE, llm=model()):
            for name in names or list(CASES):
                about, run, events = CASES[name]
                options = TemporalOptions(
                    task_queue=QUEUE, heartbeat_timeout_ms=2_000, continue_as_new_events=events
                )
                async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
                    step = await asyncio.wait_for(run(trt), 120)
                if not step.ok:
                    raise SystemExit(f"{name}: the run failed: {step.error}")
                todo, saved = [step.run_id], []
                while todo:
                    workflow_id = todo.pop(0)
                    for run_id, history in await _executions(client, workflow_id):
                        saved.append(
                            {
                                "workflow_id": workflow_id,
                                "run_id": run_id,
                                "history": json.loads(history.to_json()),
                            }
                        )
                        todo.extend(_children(history))
                text = json.dumps({"case": name, "about": about, "histories": saved}, indent=1)
                (HERE / f"{name}.json").write_text(text + "\n")
                print(f"{name}: {len(saved)} execution(s), value {msgspec.to_builtins(step.value)}")


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:]))
