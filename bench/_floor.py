"""The floor: a hand-written plain-asyncio agent loop doing the benchmark's two turns.

Turn 1 the "model" asks for ``add(x=2, y=3)``; the loop calls the tool, appends the
``{"ok": true, "result": 5}`` tool message and asks again; turn 2 answers ``"5"``. No
framework, no validation, no retries, no signals: the least work any library could do for
this workload, so ptcflow's figures are reported as ratios to it.

With ``latency`` > 0 each model call sleeps that long (``asyncio.sleep``), like a remote
model. With a tracer/meter (OpenTelemetry SDK) the loop records by hand the same spans and
metrics ptcflow records (``invoke_agent``, ``chat`` x2, ``execute_tool``; token usage and
operation duration), which measures "the SDK's own cost" for goal (c).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

QUESTION = "What is 2 + 3?"


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


TOOLS = {"add": add}


async def model(messages: list[dict[str, Any]], latency: float) -> dict[str, Any]:
    """The scripted model: a tool call first, then the answer once a tool result is in."""
    if latency > 0:
        await asyncio.sleep(latency)
    if messages[-1]["role"] == "tool":
        return {"text": "5", "tool_calls": [], "usage": (12, 2)}
    call = {"id": "call_1", "name": "add", "input": {"x": 2, "y": 3}}
    return {"text": "", "tool_calls": [call], "usage": (10, 9)}


async def run_once(latency: float = 0.0) -> str:
    """One two-turn run; returns the final answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    while True:
        reply = await model(messages, latency)
        messages.append(
            {"role": "assistant", "content": reply["text"], "calls": reply["tool_calls"]}
        )
        if not reply["tool_calls"]:
            return str(reply["text"])
        for call in reply["tool_calls"]:
            result = TOOLS[call["name"]](**call["input"])
            content = json.dumps({"ok": True, "result": result})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})


class Traced:
    """The same loop recording OpenTelemetry spans and metrics by hand."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        from opentelemetry.trace import SpanKind

        self.kind = SpanKind.CLIENT
        self.tracer = tracer_provider.get_tracer("floor")
        meter = meter_provider.get_meter("floor")
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
        self.duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")

    async def run_once(self, latency: float = 0.0) -> str:
        """One traced two-turn run: the spans, attributes and metric points ptcflow records."""
        tracer = self.tracer
        usage_in = usage_out = 0
        with tracer.start_as_current_span(
            "invoke_agent floor",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "floor",
                "gen_ai.conversation.id": "run_floor",
            },
        ) as agent_span:
            messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
            while True:
                start = time.perf_counter()
                with tracer.start_as_current_span(
                    "chat scripted",
                    kind=self.kind,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": "scripted",
                        "gen_ai.request.model": "scripted",
                    },
                ) as span:
                    reply = await model(messages, latency)
                    inp, out = reply["usage"]
                    span.set_attributes(
                        {
                            "gen_ai.usage.input_tokens": inp,
                            "gen_ai.usage.output_tokens": out,
                            "gen_ai.response.model": "scripted",
                            "gen_ai.response.finish_reasons": (
                                "tool_calls" if reply["tool_calls"] else "stop",
                            ),
                        }
                    )
                usage_in += inp
                usage_out += out
                attrs = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "scripted",
                    "gen_ai.request.model": "scripted",
                }
                self.duration.record(time.perf_counter() - start, attrs)
                self.tokens.record(inp, {**attrs, "gen_ai.token.type": "input"})
                self.tokens.record(out, {**attrs, "gen_ai.token.type": "output"})
                messages.append({"role": "assistant", "content": reply["text"]})
                if not reply["tool_calls"]:
                    agent_span.set_attributes(
                        {
                            "gen_ai.usage.input_tokens": usage_in,
                            "gen_ai.usage.output_tokens": usage_out,
                        }
                    )
                    return str(reply["text"])
                for call in reply["tool_calls"]:
                    start = time.perf_counter()
                    with tracer.start_as_current_span(
                        f"execute_tool {call['name']}",
                        attributes={
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": call["name"],
                            "gen_ai.tool.call.id": call["id"],
                        },
                    ):
                        result = TOOLS[call["name"]](**call["input"])
                    self.duration.record(
                        time.perf_counter() - start, {"gen_ai.operation.name": "execute_tool"}
                    )
                    content = json.dumps({"ok": True, "result": result})
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": content}
                    )


async def sequential(runs: int, traced: Traced | None = None) -> tuple[float, float]:
    """Run ``runs`` runs one after the other; return (wall, CPU) µs per run."""
    once = traced.run_once if traced is not None else run_once
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(runs):
        await once()
    return (
        (time.perf_counter() - start) / runs * 1e6,
        (time.process_time() - cpu) / runs * 1e6,
    )


async def concurrent(
    runs: int, latency: float, traced: Traced | None = None
) -> tuple[float, float]:
    """Run ``runs`` runs at once (each model call sleeps ``latency``); (wall, CPU) seconds."""
    once = traced.run_once if traced is not None else run_once
    start, cpu = time.perf_counter(), time.process_time()
    async with asyncio.TaskGroup() as tg:
        for _ in range(runs):
            tg.create_task(once(latency))
    return time.perf_counter() - start, time.process_time() - cpu
