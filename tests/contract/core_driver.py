"""A second driver of the run core, for the contract suite: plain asyncio, no anyio.

It follows the one driver protocol (``docs/runtime.md``, "Writing a driver"), with the
public face only (``ptcflow.core``): after every event it takes the work the core handed
out (``to_cancel``, ``to_perform``, ``answered``), performs each directive as one asyncio task (an "activity"),
turns the task's outcome into the directive's terminal (``core.finish``), cancels tasks
the core interrupts, and tells the core when the deadline passes, reading time only from
the loop. Retries and timeouts are its own (a workflow gives them to the activity's retry
policy); the results it reports must satisfy the same contract as the Runtime's.
Programs (``RunProgram``) run with :func:`ptcflow.program.perform_program` in the
directive's task, their tool calls opened as sub-calls of the directive
(``core.open_subcall``) and performed like a ``ToolExec``: what a workflow's activity does.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

from ptcflow.core import Flight, RunCore
from ptcflow.directives import (
    Directive,
    LLMGenerate,
    LLMStream,
    RunProgram,
    ToolExec,
)
from ptcflow.program import perform_program
from ptcflow.runtime import LLMRequest, ProviderError, Step
from ptcflow.signals import (
    LLM_DELTA,
    PROVIDER_ERROR,
    TIMEOUT,
    TOOL_STARTED,
    TRANSIENT,
    Err,
    ErrorEnvelope,
    LLMDeltaData,
    LLMResponse,
    Ok,
    StreamAssembler,
    ToolSpec,
    ToolStartedData,
)
from ptcflow.tools import Tool, ToolCall, call_tool, dispatch, for_agent


async def run_on_core(
    strategy: Any,
    input: Any,
    *,
    llm: Any,
    tools: Any,
    timeout: float | None = None,  # noqa: ASYNC109 (the run's mission deadline)
    run_id: str = "run_core",
) -> Step:
    """Drive ``strategy`` on the run core with plain asyncio; return its Step."""
    loop = asyncio.get_running_loop()
    toolset: dict[str, Tool] = for_agent(tools)
    specs = tuple(
        ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
        for t in toolset.values()
    )
    deadline = math.inf if timeout is None else loop.time() + timeout
    core: RunCore[Flight] = RunCore(
        strategy, input, run_id=run_id, tool_specs=specs, deadline=deadline, record=True
    )
    tasks: dict[asyncio.Task[Any], Flight] = {}
    core.start(loop.time())
    while core.step is None:
        for flight in _take(core, "to_cancel"):
            for task, owner in tasks.items():
                if owner is flight:
                    task.cancel()
        for flight in _take(core, "to_perform"):
            if flight.cancel_reason is not None:
                core.finish(flight, None, loop.time())
                continue
            work = _perform(core, flight, llm, toolset)
            tasks[asyncio.create_task(work)] = flight
        _take(core, "answered")
        if core.finished:
            break
        if not tasks:
            continue  # the events above produced more work (or ended the run)
        wait = None if deadline == math.inf else max(0.0, deadline - loop.time())
        done, _ = await asyncio.wait(tasks, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        now = loop.time()
        if not done:
            core.expire(now)  # the deadline passed: the core cancels what is in flight
            continue
        for task in done:
            flight = tasks.pop(task)
            result, attempts = (None, 1) if task.cancelled() else task.result()
            core.finish(flight, result, now, attempts=attempts)
    for task in tasks:  # nothing may outlive the run
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert core.step is not None
    return core.step


def _take(core: RunCore[Flight], name: str) -> list[Flight]:
    work: list[Flight] | None = getattr(core, name)
    setattr(core, name, None)
    return work or []


async def _perform(
    core: RunCore[Flight], flight: Flight, llm: Any, tools: Mapping[str, Tool]
) -> tuple[Ok[Any] | Err, int]:
    """One directive, with its retries and its own deadline: (result, attempts)."""
    d = flight.directive
    if isinstance(d, RunProgram):
        return await _program(core, flight, d, llm, tools)
    if isinstance(d, ToolExec):
        core.emit(
            flight, TOOL_STARTED, ToolStartedData(tool_name=d.tool_name, arguments=d.arguments)
        )
    tool = tools.get(d.tool_name) if isinstance(d, ToolExec) else None
    retries = (
        tool.max_retries if tool is not None and tool.max_retries is not None else d.max_retries
    )
    attempt_s = tool.timeout_ms / 1000 if tool is not None and tool.timeout_ms else None
    attempt = 0
    try:
        async with asyncio.timeout(None if d.timeout_ms is None else d.timeout_ms / 1000):
            while True:
                attempt += 1
                try:
                    async with asyncio.timeout(attempt_s):
                        result, retry_after = await _attempt(core, flight, d, llm, tools)
                except TimeoutError:
                    result, retry_after = _timeout("attempt"), None
                streamed = isinstance(d, LLMStream) and any(
                    s.type == LLM_DELTA and s.call_id == d.id for s in core.recorded or ()
                )
                if (
                    isinstance(result, Ok)
                    or not result.error.retryable
                    or attempt > retries
                    or streamed
                ):
                    return result, attempt
                await asyncio.sleep(retry_after or 0.0)
    except TimeoutError:
        return _timeout("directive"), attempt


async def _program(
    core: RunCore[Flight], flight: Flight, d: RunProgram, llm: Any, tools: Mapping[str, Tool]
) -> tuple[Ok[Any] | Err, int]:
    """Run the program; each of its calls is a sub-call performed like a ToolExec."""
    loop = asyncio.get_running_loop()

    async def call(name: str, arguments: dict[str, Any], index: int) -> Ok[Any] | Err:
        sub = core.open_subcall(
            flight,
            ToolExec(
                id=f"{d.id}/tool/{index}",
                tool_name=name,
                arguments=arguments,
                request_id=d.request_id,
                iteration=d.iteration,
            ),
        )
        result: Ok[Any] | Err | None = None
        try:
            if not sub.done:
                result, _ = await _perform(core, sub, llm, tools)
        finally:
            core.finish(sub, result, loop.time())  # None: cancelled with the program
        assert sub.result is not None
        return sub.result

    try:
        async with asyncio.timeout(None if d.timeout_ms is None else d.timeout_ms / 1000):
            return Ok(payload=await perform_program(d, call)), 1
    except TimeoutError:
        return _timeout("directive"), 1


async def _attempt(
    core: RunCore[Flight], flight: Flight, d: Directive, llm: Any, tools: Mapping[str, Tool]
) -> tuple[Ok[Any] | Err, float | None]:
    if isinstance(d, ToolExec):
        tool = tools.get(d.tool_name)
        if tool is not None:
            return await call_tool(tool, d.id, d.arguments), None
        unknown = await dispatch(tools, ToolCall(id=d.id, name=d.tool_name, input=d.arguments))
        return unknown.to_result(), None
    assert isinstance(d, LLMGenerate)
    request = LLMRequest(model=d.model or "scripted", messages=d.messages, tools=d.tools)
    try:
        if isinstance(d, LLMStream):
            assembler = StreamAssembler()
            async for chunk in llm.stream(request):
                assembler.add(chunk)
                core.emit(flight, LLM_DELTA, LLMDeltaData(chunk=chunk))
            response: Any = assembler.response()
        else:
            response = await llm.generate(request)
    except ProviderError as exc:
        return Err(error=exc.envelope), exc.retry_after
    except TimeoutError:
        return _timeout("attempt"), None
    except ConnectionError as exc:
        return Err(error=ErrorEnvelope.make(TRANSIENT, str(exc))), None
    except ValueError as exc:  # a malformed stream
        return Err(error=ErrorEnvelope.make(PROVIDER_ERROR, str(exc), retryable=False)), None
    if not isinstance(response, LLMResponse):
        kind = type(response).__name__
        error = ErrorEnvelope.make(PROVIDER_ERROR, f"not an LLMResponse: {kind}", retryable=False)
        return Err(error=error), None
    return Ok(payload=response), None


def _timeout(scope: str) -> Err:
    return Err(error=ErrorEnvelope.make(TIMEOUT, f"{scope} timeout", {"scope": scope}))
