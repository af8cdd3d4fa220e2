"""Bad input gives a clear error and loses no run: an unreachable server, a tool or a
strategy the worker cannot import, payloads too large for history."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ptcflow.errors import UsageError
from ptcflow.signals import TOOL_RESULT
from ptcflow.temporal import TemporalOptions, TemporalRuntime, TemporalUnavailable
from temporal.agents import analyst, big, planner

pytestmark = pytest.mark.anyio

VANISHING = '''
def vanishing_add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y
'''


async def test_an_unreachable_server_says_where_and_what_to_do() -> None:
    with pytest.raises(TemporalUnavailable) as caught:
        async with TemporalRuntime(address="127.0.0.1:1"):
            pass
    text = str(caught.value)
    assert "cannot reach the Temporal server at 127.0.0.1:1" in text
    assert "temporal server start-dev" in text


def _vanishing_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "vanishing_tools.py").write_text(VANISHING)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("vanishing_tools")


async def test_a_tool_the_worker_cannot_import_is_a_clear_tool_error(
    client: Any,
    worker: Any,
    options: TemporalOptions,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = _vanishing_module(tmp_path, monkeypatch)
    async with TemporalRuntime(client=client, tools=[module.vanishing_add], options=options) as trt:
        running = trt.run(analyst(), "emea", record=True)  # the client can import it
        sys.modules.pop("vanishing_tools")  # the worker cannot
        (tmp_path / "vanishing_tools.py").unlink()
        step = await running
    assert step.ok, step.error  # the model got the error and answered
    (result,) = [s.data.result for s in step.signals if s.type == TOOL_RESULT]
    assert result.error.type == "unknown_tool"
    message = result.error.message
    assert (
        "tool 'vanishing_add' (vanishing_tools:vanishing_add) cannot be loaded on worker" in message
    )
    assert f"task queue {options.task_queue!r}" in message and "ModuleNotFoundError" in message


async def test_a_result_too_large_for_history_is_a_clear_error_of_its_call(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    small = msgspec.structs.replace(options, max_payload_bytes=50_000)
    async with TemporalRuntime(client=client, tools=[big], options=small) as trt:
        step = await trt.run(analyst(), "emea", record=True)
    assert step.ok, step.error
    (result,) = [s.data.result for s in step.signals if s.type == TOOL_RESULT]
    assert result.error.type == "payload_too_large"
    assert "more than the 50000 bytes a Temporal history event may hold" in result.error.message


async def test_an_input_too_large_for_history_is_refused_before_the_run_starts(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    small = msgspec.structs.replace(options, max_payload_bytes=50_000)
    async with TemporalRuntime(client=client, options=small) as trt:
        with pytest.raises(UsageError, match="more than the 50000 bytes"):
            trt.run(analyst(), big(200_000)).close()


async def test_a_tool_defined_in_a_function_is_refused_with_the_fix(
    client: Any, options: TemporalOptions
) -> None:
    def inner(x: int) -> int:
        """Not importable by name."""
        return x

    async with TemporalRuntime(client=client, tools=[inner], options=options) as trt:
        with pytest.raises(UsageError, match="define it at module level"):
            trt.run(analyst(), "emea").close()


async def test_large_payloads_kept_in_external_storage_stay_out_of_history(
    dev_server: Any, options: TemporalOptions, tmp_path: Path
) -> None:
    from ptcflow.temporal import connect, file_storage, open_worker
    from temporal.agents import model

    storage = file_storage(tmp_path / "payloads", threshold=10_000)
    client = await connect(dev_server.address, storage=storage)
    unlimited = msgspec.structs.replace(options, max_payload_bytes=None)
    run_id = f"stored-{options.task_queue}"
    async with (
        open_worker(client, task_queue=options.task_queue, llm=model(), max_payload_bytes=None),
        TemporalRuntime(client=client, tools=[big], options=unlimited) as trt,
    ):
        step = await trt.run(analyst(), "emea", run_id=run_id, record=True)
    assert step.ok, step.error
    (result,) = [s.data.result for s in step.signals if s.type == TOOL_RESULT]
    assert len(result.payload) == 200_000  # the whole result, read back from storage
    history = await client.get_workflow_handle(run_id).fetch_history()
    assert history.events and sum(e.ByteSize() for e in history.events) < 100_000
    assert any((tmp_path / "payloads").iterdir())


@pytest.mark.parametrize("option", ["usage_limits", "guardrails"])
def test_controls_not_enforced_on_temporal_are_refused(option: str) -> None:
    from ptcflow import Guardrails, UsageLimits
    from ptcflow.strategies import ReAct

    value = UsageLimits(max_requests=1) if option == "usage_limits" else Guardrails()
    rt = TemporalRuntime(address="127.0.0.1:1")
    with pytest.raises(UsageError, match=f"'{option}'.* not enforced on Temporal yet"):
        rt.run(ReAct(), "x", **{option: value}).close()  # never reached: run() raises


async def test_history_for_a_strategy_that_keeps_no_conversation_is_refused_at_the_call(
    client: Any, options: TemporalOptions
) -> None:
    from ptcflow.runtime import RunOptions
    from ptcflow.sessions import Compaction
    from ptcflow.signals import Message

    async with TemporalRuntime(client=client, options=options) as trt:
        with pytest.raises(UsageError, match="keeps no conversation"):
            trt.run(planner(), "go", history=[Message(role="user", content="hi")]).close()
        compaction = RunOptions(compaction=Compaction(max_messages=4))
        with pytest.raises(UsageError, match="keeps no conversation"):
            trt.run(planner(), "go", options=compaction).close()
