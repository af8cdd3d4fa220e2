"""Telemetry cannot break a run (DD-12), and metrics need no tracing.

A span processor raising in ``on_start`` or ``on_end``, a structlog logger raising with
``log_events=True``, or a metric reader's instrument raising: the run still ends with its
Step, the failure is logged once on the ``ptcflow.telemetry`` logger, and the rest of the
telemetry keeps working. ``Telemetry(meter_provider=...)`` alone records the GenAI metrics.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.runtime import Runtime, Step, Telemetry
from ptcflow.signals import TOOL_RESULT, LLMResponse, Usage

from .support import MSGS, FakeLLM, Probe

pytestmark = pytest.mark.anyio


class Raising(SpanProcessor):
    """A span processor whose ``on_start`` or ``on_end`` raises."""

    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.where == "on_start":
            raise RuntimeError("exporter misconfigured")

    def on_end(self, span: ReadableSpan) -> None:
        if self.where == "on_end":
            raise RuntimeError("exporter misconfigured")


class RaisingLogger:
    """A structlog-like logger whose every call raises."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> None:
            raise ValueError("log sink is gone")

        return fail


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


async def add(a: int, b: int) -> int:
    return a + b


def _probe() -> Probe:
    return Probe(
        [
            LLMGenerate(id="g", messages=MSGS),
            ToolExec(id="t", tool_name="add", arguments={"a": 2, "b": 3}),
        ]
    )


async def _two_runs(telemetry: Telemetry) -> list[Step]:
    llm = FakeLLM(LLMResponse(text="hi", usage=Usage(input_tokens=11, output_tokens=4)))
    steps = []
    async with Runtime(llm=llm, tools={"add": add}, telemetry=telemetry) as rt:
        for _ in range(2):
            steps.append(await rt.run(_probe(), "go", record=True))
    return steps


def _reported(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ptcflow.telemetry"]


@pytest.mark.parametrize("where", ["on_start", "on_end"])
async def test_a_span_processor_that_raises_does_not_break_the_run(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(Raising(where))
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    telemetry = Telemetry(
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    with caplog.at_level(logging.ERROR, logger="ptcflow.telemetry"):
        steps = await _two_runs(telemetry)
    assert all(step.ok for step in steps), [step.error for step in steps]
    assert [s.type for s in steps[0].signals if s.call_id == "t"][-1] == TOOL_RESULT
    reported = _reported(caplog)
    assert len(reported) == 1, reported  # once, for two runs of several spans each
    assert where in reported[0] and "RuntimeError: exporter misconfigured" in reported[0]
    # the metrics are still recorded, for both runs
    chat = [
        p
        for p in _metrics(reader)["gen_ai.client.operation.duration"]
        if p.attributes["gen_ai.operation.name"] == "chat"
    ]
    assert sum(p.count for p in chat) == 2


async def test_a_logger_that_raises_does_not_break_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    telemetry = Telemetry(log_events=True, logger=RaisingLogger())
    with caplog.at_level(logging.ERROR, logger="ptcflow.telemetry"):
        steps = await _two_runs(telemetry)
        async with Runtime(tools={"add": add}, telemetry=telemetry) as rt:  # a crash logs
            crashing = Probe(
                [ToolExec(id="x", tool_name="add", arguments={"a": 1, "b": 1})], fail_on=TOOL_RESULT
            )
            crashed = await rt.run(crashing, "go")
    assert all(step.ok for step in steps)
    assert not crashed.ok and crashed.error is not None
    reported = _reported(caplog)
    assert reported and all("ValueError: log sink is gone" in r for r in reported)
    assert len(reported) == len(set(reported)) <= 2  # debug, and error: each once


async def test_metrics_are_recorded_without_tracing() -> None:
    reader = InMemoryMetricReader()
    telemetry = Telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    assert telemetry.metrics and not telemetry.tracing
    steps = await _two_runs(telemetry)
    assert all(step.ok for step in steps)
    assert all(s.traceparent is None for s in steps[0].signals)
    metrics = _metrics(reader)
    tokens = {
        (p.attributes["gen_ai.operation.name"], p.attributes["gen_ai.token.type"]): p.sum
        for p in metrics["gen_ai.client.token.usage"]
    }
    assert tokens == {("chat", "input"): 22, ("chat", "output"): 8}
    counts = {
        p.attributes["gen_ai.operation.name"]: p.count
        for p in metrics["gen_ai.client.operation.duration"]
    }
    assert counts == {"chat": 2, "execute_tool": 2}
