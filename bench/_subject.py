"""The subject: the benchmark's two-turn run on ptcflow (Runtime + ReAct + ScriptedLLM)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import sniffio

from ptcflow.providers._protocol import LLMRequest
from ptcflow.runtime import Runtime, Telemetry
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, ScriptItem

QUESTION = "What is 2 + 3?"


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def add_sync(x: int, y: int) -> int:
    """Add two integers (a sync tool: ptcflow runs it in a worker thread)."""
    return x + y


def answer(request: LLMRequest) -> ScriptItem:
    """Turn 1: ask for add(x=2, y=3); turn 2 (after the tool result): answer "5"."""
    if request.messages[-1].role == "tool":
        return "5"
    return ScriptedLLM.tool_call("add", x=2, y=3)


def make_runtime(
    *, latency: float = 0.0, telemetry: Telemetry | None = None, sync_tool: bool = False
) -> tuple[Runtime, ScriptedLLM]:
    """A Runtime with the scripted model and the ``add`` tool."""
    llm = ScriptedLLM(answer, latency=latency, record=False)  # keep no conversations alive
    tool = add_sync if sync_tool else add
    rt = Runtime(llm=llm, tools={"add": tool}, telemetry=telemetry)
    return rt, llm


def otel_telemetry() -> tuple[Telemetry, Any, Any]:
    """Telemetry on the OpenTelemetry SDK with in-memory exporters (spans and metrics)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return telemetry, exporter, (tracer_provider, meter_provider)


async def sequential(
    runs: int, *, telemetry: Telemetry | None = None, sync_tool: bool = False
) -> tuple[float, float]:
    """Run ``runs`` runs one after the other on one Runtime; (wall, CPU) µs per run."""
    rt, llm = make_runtime(telemetry=telemetry, sync_tool=sync_tool)
    strategy = ReAct()
    async with rt:
        step = await rt.run(strategy, QUESTION)
        if step.value != "5":
            raise AssertionError(f"benchmark run went wrong: {step!r}")
        llm.requests.clear()
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(runs):
            await rt.run(strategy, QUESTION)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return elapsed / runs * 1e6, cpu / runs * 1e6


async def concurrent(
    runs: int, latency: float, *, telemetry: Telemetry | None = None, sync_tool: bool = False
) -> tuple[float, float]:
    """Run ``runs`` runs at once on one Runtime (model latency ``latency`` s); (wall, CPU) s."""
    rt, _ = make_runtime(latency=latency, telemetry=telemetry, sync_tool=sync_tool)
    strategy = ReAct()
    failures = 0

    async def one() -> None:
        nonlocal failures
        step = await rt.run(strategy, QUESTION)
        if step.value != "5":
            failures += 1

    async with rt:
        start, cpu = time.perf_counter(), time.process_time()
        if sniffio.current_async_library() == "asyncio":
            # Spawned like the floor's runs (asyncio.TaskGroup), so (b) compares the
            # runtimes, not two ways of starting 10,000 tasks.
            async with asyncio.TaskGroup() as atg:
                for _ in range(runs):
                    atg.create_task(one())
        else:
            async with anyio.create_task_group() as tg:
                for _ in range(runs):
                    tg.start_soon(one)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if failures:
        raise AssertionError(f"{failures} of {runs} concurrent runs failed")
    return elapsed, cpu
