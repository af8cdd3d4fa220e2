"""Spans as the OpenTelemetry GenAI conventions define them: span kinds, the message format
of captured content, tool type and description, a child agent's input, error descriptions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from ptcflow.directives import LLMEmbed, LLMGenerate, RunChild, ToolExec
from ptcflow.runtime import Runtime, Telemetry
from ptcflow.runtime._genai_messages import encode_content
from ptcflow.signals import LLMResponse, Message, ToolCall
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import tool

from .support import MSGS, FakeLLM, Probe

pytestmark = pytest.mark.anyio


def traced(**options: Any) -> tuple[InMemorySpanExporter, Telemetry]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, Telemetry(tracer_provider=provider, **options)


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in exporter.get_finished_spans()}


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def test_model_calls_are_client_spans_the_rest_internal() -> None:
    exporter, telemetry = traced()
    async with Runtime(llm=FakeLLM(), tools=[add], telemetry=telemetry) as rt:
        await rt.run(
            Probe(
                [
                    LLMGenerate(id="g", messages=MSGS),
                    LLMEmbed(id="e", inputs=("a",)),
                    ToolExec(id="t", tool_name="add", arguments={"x": 1, "y": 2}),
                ]
            ),
            "go",
        )
    kinds = {name.split()[0]: span.kind for name, span in by_name(exporter).items()}
    assert kinds == {
        "chat": SpanKind.CLIENT,
        "embeddings": SpanKind.CLIENT,
        "execute_tool": SpanKind.INTERNAL,
        "invoke_agent": SpanKind.INTERNAL,
    }


async def test_captured_messages_use_roles_and_parts() -> None:
    exporter, telemetry = traced(capture_content=True)
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    async with Runtime(llm=llm, tools=[add], telemetry=telemetry) as rt:
        await rt.run(ReAct(system_prompt="Add."), "2+3?")
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    first_out = json.loads(attrs(chats[0])["gen_ai.output.messages"])
    assert first_out == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_1_0",
                    "name": "add",
                    "arguments": {"x": 2, "y": 3},
                }
            ],
            "finish_reason": "tool_call",
        }
    ]
    second_in = json.loads(attrs(chats[1])["gen_ai.input.messages"])
    assert second_in == [
        {"role": "system", "parts": [{"type": "text", "content": "Add."}]},
        {"role": "user", "parts": [{"type": "text", "content": "2+3?"}]},
        {"role": "assistant", "parts": first_out[0]["parts"]},
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "call_1_0",
                    "response": '{"ok":true,"result":5}',
                }
            ],
            "name": "add",
        },
    ]
    second_out = json.loads(attrs(chats[1])["gen_ai.output.messages"])
    assert second_out == [
        {"role": "assistant", "parts": [{"type": "text", "content": "5"}], "finish_reason": "stop"}
    ]


async def test_tool_type_description_and_a_child_agents_input() -> None:
    exporter, telemetry = traced(capture_content=True)

    async def remote(q: str) -> str:
        return q

    remote.__dict__["gen_ai_tool_type"] = "extension"  # as MCP tools mark themselves
    child = Probe([], name="helper")
    parent = Probe(
        [
            ToolExec(id="t1", tool_name="add", arguments={"x": 1, "y": 1}),
            ToolExec(id="t2", tool_name="remote", arguments={"q": "x"}),
            RunChild(id="c1", agent="helper", input={"task": "sum these"}),
        ]
    )
    async with Runtime(
        tools=[add, tool(remote)], agents={"helper": child}, telemetry=telemetry
    ) as rt:
        await rt.run(parent, "go")
    spans = by_name(exporter)
    local = attrs(spans["execute_tool add"])
    assert local["gen_ai.tool.type"] == "function"
    assert local["gen_ai.tool.description"] == "Add two integers."
    assert attrs(spans["execute_tool remote"])["gen_ai.tool.type"] == "extension"
    assert "gen_ai.tool.description" not in attrs(spans["execute_tool remote"])
    agent = attrs(spans["execute_tool helper"])
    assert json.loads(agent["gen_ai.tool.call.arguments"]) == {"task": "sum these"}


@pytest.mark.parametrize("capture", [False, True])
async def test_a_tools_exception_text_is_tool_data(capture: bool) -> None:
    exporter, telemetry = traced(capture_content=capture)

    async def leaky(q: str) -> str:
        raise ValueError(f"customer {q} has card 4111-1111")

    async with Runtime(tools=[leaky], telemetry=telemetry) as rt:
        await rt.run(Probe([ToolExec(id="t", tool_name="leaky", arguments={"q": "ada"})]), "go")
    span = by_name(exporter)["execute_tool leaky"]
    assert attrs(span)["error.type"] == "tool_error"
    if capture:
        assert "4111-1111" in str(span.status.description)
    else:
        assert span.status.description == "tool_error (ValueError)"
        assert not any("4111" in str(v) for v in attrs(span).values())


def test_long_content_stays_valid_json() -> None:
    long = [Message(role="user", content="x" * 50_000), Message(role="assistant", content="ok")]
    from ptcflow.runtime._genai_messages import input_messages

    text = encode_content(input_messages(long), limit=2_000)
    assert len(text) <= 2_000
    decoded = json.loads(text)
    assert decoded[1]["parts"][0]["content"] == "ok"
    assert decoded[0]["parts"][0]["content"].endswith("...")
    assert encode_content(object()).startswith("<object")
    assert json.loads(encode_content(LLMResponse(text="hi"))) is not None
    assert encode_content({"a": ToolCall(id="1", name="n")}) == (
        '{"a":{"id":"1","name":"n","input":{}}}'
    )
