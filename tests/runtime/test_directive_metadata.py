"""A directive's ``metadata`` is observable (the directives contract: "metadata fields are
designed for observability and debugging", LLM telemetry "distinguished by metadata such as
origin and operation"): it reaches every signal the directive causes and its span."""

from __future__ import annotations

import io

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.runtime import Runtime, Telemetry
from ptcflow.signals import LLMResponse, SignalBus, read_journal, record_journal

from .support import MSGS, FakeLLM, Probe

pytestmark = pytest.mark.anyio

CHAT = {"origin": "action", "operation": "summarize"}
TOOL = {"origin": "strategy", "attempt_group": 3, "tags": ["a", "b"], "api_key": "sk-0123456789"}


async def add(a: int, b: int) -> int:
    return a + b


def _probe() -> Probe:
    return Probe(
        [
            LLMGenerate(id="g", messages=MSGS, metadata=CHAT),
            ToolExec(id="t", tool_name="add", arguments={"a": 1, "b": 2}, metadata=TOOL),
            ToolExec(id="plain", tool_name="add", arguments={"a": 1, "b": 1}),
        ]
    )


async def test_metadata_reaches_the_signals_of_its_directive_and_the_journal() -> None:
    bus, journal = SignalBus(), io.StringIO()
    async with (
        record_journal(bus, journal),
        Runtime(llm=FakeLLM(LLMResponse(text="hi")), tools={"add": add}, bus=bus) as rt,
    ):
        step = await rt.run(_probe(), "go", record=True)
    assert step.ok
    by_call: dict[str | None, set[str]] = {}
    for s in step.signals:
        by_call.setdefault(s.call_id, set()).add(repr(s.metadata))
    assert by_call["g"] == {repr(CHAT)}
    assert by_call["t"] == {repr(TOOL)}  # signals carry it as given (journals are scrubbed)
    assert by_call["plain"] == {"None"} and by_call[None] == {"None"}
    types = {s.type for s in step.signals if s.call_id == "g"}
    assert {"ai.llm.response", "ai.usage"} <= types
    read = list(read_journal(io.StringIO(journal.getvalue())))
    assert [s.metadata for s in read] == [s.metadata for s in step.signals]


async def test_metadata_reaches_the_span_of_its_directive() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Runtime(
        llm=FakeLLM(LLMResponse(text="hi")),
        tools={"add": add},
        telemetry=Telemetry(tracer_provider=tracer_provider),
    ) as rt:
        assert (await rt.run(_probe(), "go")).ok
    spans = [(s.name, dict(s.attributes or {})) for s in exporter.get_finished_spans()]
    chat = next(a for name, a in spans if name == "chat fake-1")
    assert chat["ptcflow.directive.metadata.origin"] == "action"
    assert chat["ptcflow.directive.metadata.operation"] == "summarize"
    tool = next(a for _, a in spans if a.get("gen_ai.tool.call.id") == "t")
    assert tool["ptcflow.directive.metadata.origin"] == "strategy"
    assert tool["ptcflow.directive.metadata.attempt_group"] == 3
    assert tool["ptcflow.directive.metadata.tags"] == '["a","b"]'
    assert tool["ptcflow.directive.metadata.api_key"] == "[REDACTED]"
    plain = next(a for _, a in spans if a.get("gen_ai.tool.call.id") == "plain")
    assert not any(k.startswith("ptcflow.directive.metadata.") for k in plain)
