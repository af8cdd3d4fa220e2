"""A run on Temporal is one OpenTelemetry trace: the client's ``invoke_agent`` span,
Temporal's workflow and activity spans (its tracing interceptor), and ptcflow's ``chat`` /
``execute_tool`` spans inside the activities; signals carry their spans' trace context."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow.runtime import Telemetry
from ptcflow.signals import TOOL_RESULT
from ptcflow.temporal import DevServer, TemporalOptions, TemporalRuntime, connect, open_worker
from temporal.agents import add, analyst, model

pytestmark = pytest.mark.anyio


async def test_one_trace_from_the_client_through_temporal_to_the_tool(
    dev_server: DevServer, options: TemporalOptions
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(tracer_provider=provider)
    client = await connect(dev_server.address, tracer_provider=provider)
    async with (
        open_worker(client, task_queue=options.task_queue, llm=model(), telemetry=telemetry),
        TemporalRuntime(client=client, tools=[add], options=options, telemetry=telemetry) as trt,
    ):
        step = await trt.run(analyst(), "emea", record=True)
    assert step.ok, step.error
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    assert {"invoke_agent analyst", "chat scripted", "execute_tool add"} <= set(by_name)
    assert any(n.startswith("StartWorkflow:ptcflow.run") for n in by_name)
    assert any(n.startswith("RunActivity:ptcflow.perform") for n in by_name)
    trace_ids = {s.context.trace_id for s in spans}
    assert len(trace_ids) == 1  # one trace, joined
    tool = by_name["execute_tool add"]
    assert tool.parent is not None and tool.context is not None
    parent = next(s for s in spans if s.context.span_id == tool.parent.span_id)
    assert parent.name.startswith("RunActivity:ptcflow.perform")
    (result,) = [s for s in step.signals if s.type == TOOL_RESULT]
    assert result.traceparent is not None and f"{tool.context.span_id:016x}" in result.traceparent
