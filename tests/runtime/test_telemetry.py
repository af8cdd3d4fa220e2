"""Telemetry: GenAI span tree across tasks, metrics, content opt-in, traceparent, no-SDK no-op."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow.directives import LLMEmbed, LLMGenerate, RunChild, ToolExec
from ptcflow.runtime import Runtime, Step, Telemetry
from ptcflow.signals import LLMResponse, ToolCall, Usage

from .support import MSGS, FakeLLM, Probe

pytestmark = pytest.mark.anyio


class Otel:
    """Explicit SDK providers with in-memory exporters (never the global ones)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def telemetry(self, **kwargs: Any) -> Telemetry:
        return Telemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **kwargs
        )

    def spans(self) -> dict[str, ReadableSpan]:
        return {s.name: s for s in self.exporter.get_finished_spans()}

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        assert data is not None
        out: dict[str, list[Any]] = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    span_id: int = span.context.span_id
    return span_id


def _traceparent(span: ReadableSpan) -> str:
    """The W3C header as OpenTelemetry's own propagator writes it."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    assert span.context is not None
    ctx = trace.set_span_in_context(trace.NonRecordingSpan(span.context))
    TraceContextTextMapPropagator().inject(carrier, context=ctx)
    return carrier["traceparent"]


async def test_span_tree_nests_directives_under_the_run_and_children_under_their_call() -> None:
    otel = Otel()
    inner_tracer = otel.tracer_provider.get_tracer("tool-code")

    async def lookup(q: str) -> str:
        with inner_tracer.start_as_current_span("db.query"):
            return q.upper()

    llm = FakeLLM(LLMResponse(text="hi", usage=Usage(input_tokens=7, output_tokens=3)))
    child = Probe([LLMGenerate(id="cg", messages=MSGS)], name="helper")

    def then(signal: Any) -> list[Any]:
        # the second LLM call is submitted from inside the tool's task
        if signal.call_id == "t":
            return [LLMGenerate(id="g2", messages=MSGS)]
        return []

    parent = Probe(
        [
            LLMGenerate(id="g1", messages=MSGS),
            ToolExec(id="t", tool_name="lookup", arguments={"q": "x"}),
            RunChild(id="c", agent="helper"),
        ],
        then=then,
        name="planner",
    )
    async with Runtime(
        llm=llm, tools={"lookup": lookup}, telemetry=otel.telemetry(), agents={"helper": child}
    ) as rt:
        step = await rt.run(parent, "go", record=True)
    assert step.ok, step.error
    spans = otel.exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "invoke_agent planner")
    assert root.parent is None
    chats = [s for s in spans if s.name == "chat fake-1"]
    assert len(chats) == 3
    tool_span = next(s for s in spans if s.name == "execute_tool lookup")
    helper_call = next(s for s in spans if s.name == "execute_tool helper")
    child_run = next(s for s in spans if s.name == "invoke_agent helper")
    db = next(s for s in spans if s.name == "db.query")
    assert _parent_id(tool_span) == _id(root)
    assert _parent_id(helper_call) == _id(root)
    assert _parent_id(child_run) == _id(helper_call)
    assert _parent_id(db) == _id(tool_span)  # the tool's own spans nest under execute_tool
    child_chat = [c for c in chats if _parent_id(c) == _id(child_run)]
    run_chats = [c for c in chats if _parent_id(c) == _id(root)]
    assert len(child_chat) == 1 and len(run_chats) == 2  # g2 is not under execute_tool
    assert root.context is not None
    assert {s.context.trace_id for s in spans if s.context} == {root.context.trace_id}

    attrs = dict(run_chats[0].attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "fake"
    assert attrs["gen_ai.request.model"] == "fake-1"
    assert attrs["gen_ai.usage.input_tokens"] == 7
    assert attrs["gen_ai.usage.output_tokens"] == 3
    assert "gen_ai.input.messages" not in attrs  # content is opt-in
    tattrs = dict(tool_span.attributes or {})
    assert tattrs["gen_ai.operation.name"] == "execute_tool"
    assert tattrs["gen_ai.tool.name"] == "lookup"
    assert tattrs["gen_ai.tool.call.id"] == "t"
    assert dict(root.attributes or {})["gen_ai.operation.name"] == "invoke_agent"


async def test_signals_carry_the_traceparent_of_their_span() -> None:
    otel = Otel()

    async def noop() -> int:
        return 1

    async with Runtime(tools={"noop": noop}, telemetry=otel.telemetry()) as rt:
        step = await rt.run(Probe([ToolExec(id="t", tool_name="noop")]), "go", record=True)
    spans = otel.spans()
    tool_span = spans["execute_tool noop"]
    root = spans["invoke_agent probe"]
    assert tool_span.context is not None and root.context is not None
    expected_tool = _traceparent(tool_span)
    expected_root = _traceparent(root)
    by_call = {(s.type, s.call_id): s.traceparent for s in step.signals}
    assert by_call[("ai.tool.result", "t")] == expected_tool
    assert by_call[("ai.tool.started", "t")] == expected_tool
    assert by_call[("ai.request.started", None)] == expected_root


async def test_failures_set_error_type_and_status() -> None:
    otel = Otel()

    async def broken() -> int:
        raise ValueError("bad")

    async with Runtime(tools={"broken": broken}, telemetry=otel.telemetry()) as rt:
        await rt.run(Probe([ToolExec(id="t", tool_name="broken")]), "go")
    span = otel.spans()["execute_tool broken"]
    assert dict(span.attributes or {})["error.type"] == "tool_error"
    assert span.status.status_code.name == "ERROR"


async def test_metrics_record_token_usage_and_duration() -> None:
    otel = Otel()
    llm = FakeLLM(LLMResponse(text="hi", usage=Usage(input_tokens=11, output_tokens=4)))
    async with Runtime(llm=llm, telemetry=otel.telemetry()) as rt:
        await rt.run(
            Probe([LLMGenerate(id="g", messages=MSGS), LLMEmbed(id="e", inputs=("a",))]), "go"
        )
    metrics = otel.metrics()
    tokens = metrics["gen_ai.client.token.usage"]
    by_type = {
        (p.attributes["gen_ai.operation.name"], p.attributes["gen_ai.token.type"]): p.sum
        for p in tokens
    }
    assert by_type[("chat", "input")] == 11
    assert by_type[("chat", "output")] == 4
    assert by_type[("embeddings", "input")] == 1
    durations = metrics["gen_ai.client.operation.duration"]
    ops = {p.attributes["gen_ai.operation.name"] for p in durations}
    assert {"chat", "embeddings"} <= ops
    chat = next(p for p in durations if p.attributes["gen_ai.operation.name"] == "chat")
    assert chat.attributes["gen_ai.provider.name"] == "fake"
    assert chat.attributes["gen_ai.request.model"] == "fake-1"
    assert chat.count == 1


async def test_content_capture_is_opt_in() -> None:
    otel = Otel()

    async def echo(text: str) -> str:
        return text

    llm = FakeLLM(LLMResponse(text="", tool_calls=(ToolCall(id="c1", name="echo", input={}),)))
    async with Runtime(
        llm=llm, tools={"echo": echo}, telemetry=otel.telemetry(capture_content=True)
    ) as rt:
        await rt.run(
            Probe(
                [
                    LLMGenerate(id="g", messages=MSGS),
                    ToolExec(id="t", tool_name="echo", arguments={"text": "secret-ish"}),
                ]
            ),
            "go",
        )
    spans = otel.spans()
    chat = dict(spans["chat fake-1"].attributes or {})
    assert '"content":"hi"' in str(chat["gen_ai.input.messages"])
    assert "echo" in str(chat["gen_ai.output.messages"])
    tool = dict(spans["execute_tool echo"].attributes or {})
    assert tool["gen_ai.tool.call.arguments"] == '{"text":"secret-ish"}'
    assert tool["gen_ai.tool.call.result"] == '"secret-ish"'


async def test_without_an_sdk_every_hook_is_off() -> None:
    tel = Telemetry()  # the global providers are the API's proxies in the test process
    assert not tel.tracing and not tel.metrics and not tel.active
    async with Runtime(llm=FakeLLM()) as rt:
        assert rt.executor.telemetry is None
        step: Step = await rt.run(Probe([LLMGenerate(id="g", messages=MSGS)]), "go", record=True)
    assert step.ok
    assert all(s.traceparent is None for s in step.signals)


async def test_telemetry_none_turns_everything_off() -> None:
    async with Runtime(llm=FakeLLM(), telemetry=None) as rt:
        assert rt.executor.telemetry is None
        assert (await rt.run(Probe([LLMGenerate(id="g", messages=MSGS)]), "go")).ok


def test_telemetry_repr_is_readable() -> None:
    otel = Otel()
    assert repr(otel.telemetry()) == (
        "Telemetry(tracing=True, metrics=True, capture_content=False, log_events=False)"
    )


async def test_log_events_bind_correlation_ids() -> None:
    from structlog.testing import capture_logs

    from ptcflow.runtime import ProviderError
    from ptcflow.signals import ErrorEnvelope

    llm = FakeLLM(ProviderError(ErrorEnvelope.make("transient", "503")), LLMResponse(text="ok"))
    with capture_logs() as logs:
        async with Runtime(llm=llm, telemetry=Telemetry(log_events=True)) as rt:
            await rt.run(
                Probe([LLMGenerate(id="g", messages=MSGS, max_retries=1, retry_backoff_ms=0)]),
                "go",
                run_id="run_log",
            )
    retry = next(e for e in logs if e["event"] == "directive.retry")
    assert retry["run_id"] == "run_log" and retry["call_id"] == "g"
    assert retry["error_type"] == "transient"
    events = {e["event"] for e in logs}
    assert {"run.started", "run.finished"} <= events


async def test_the_run_span_nests_under_the_callers_span() -> None:
    otel = Otel()
    tracer = otel.tracer_provider.get_tracer("app")
    async with Runtime(llm=FakeLLM(), telemetry=otel.telemetry()) as rt:
        with tracer.start_as_current_span("http.request"):
            await rt.run(Probe([LLMGenerate(id="g", messages=MSGS)]), "go")
    spans = otel.spans()
    assert _parent_id(spans["invoke_agent probe"]) == _id(spans["http.request"])
