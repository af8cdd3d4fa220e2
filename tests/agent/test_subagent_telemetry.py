"""A SubAgent run as spans: invoke_agent > turn n > chat, execute_program > execute_tool."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow import SubAgent
from ptcflow.runtime import Runtime, Telemetry
from ptcflow.testing import ScriptedLLM

from .ptc_support import block

pytestmark = pytest.mark.anyio


def search(query: str) -> list[dict[str, Any]]:
    """Search."""
    return [{"id": 1}, {"id": 2}]


AGENT = SubAgent(
    prompt="Count hits for {{q}}",
    signature="(q :string) -> {n :int}",
    tools=[search],
    name="counter",
)


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    span_id: int = span.context.span_id
    return span_id


async def test_each_turn_is_a_span_holding_its_model_call_and_program() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    llm = ScriptedLLM(
        [
            block('(count (call "search" {:query ctx/q}))'),
            block('(return {:n (count (call "search" {:query ctx/q}))})'),
        ]
    )
    telemetry = Telemetry(tracer_provider=provider)
    async with Runtime(llm=llm, telemetry=telemetry) as rt:
        step = await AGENT.run(context={"q": "x"}, runtime=rt)
    assert step.ok
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "invoke_agent counter"]
    turns = sorted((s for s in spans if s.name.startswith("turn ")), key=lambda s: s.name)
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    assert all(_parent(t) == _id(run) for t in turns)
    for n, turn in enumerate(turns, 1):
        inside = [s for s in spans if _parent(s) == _id(turn)]
        assert sorted(s.name for s in inside) == ["chat scripted", "execute_program counter"]
        program = next(s for s in inside if s.name.startswith("execute_program"))
        (call,) = [s for s in spans if _parent(s) == _id(program)]
        assert call.name == "execute_tool search"
        assert dict(program.attributes or {})["ptcflow.turn"] == n
        for child in inside:  # a turn covers its directives' spans
            assert turn.start_time is not None and child.start_time is not None
            assert turn.end_time is not None and child.end_time is not None
            assert turn.start_time <= child.start_time and child.end_time <= turn.end_time
    assert turns[0].end_time is not None and turns[1].start_time is not None
    assert turns[0].end_time <= turns[1].end_time  # type: ignore[operator]
