"""Prompt caching at the wire: Anthropic cache points on the system prompt, the tools and
the history; OpenAI's prompt_cache_key; both on by default with an off switch; the cache
tokens the servers report reach the usage and the cost."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow import ModelPrice, PriceTable
from ptcflow.providers import AnthropicProvider, OpenAIProvider
from ptcflow.providers._protocol import LLMRequest
from ptcflow.runtime import Runtime
from ptcflow.signals import Message, ToolCall, ToolSpec
from ptcflow.strategies import ReAct
from ptcflow.testing import _anthropic_replies as anthropic, _openai_replies as openai
from ptcflow.testing._server import open_model_server

pytestmark = pytest.mark.anyio

KEY = "sk-test-SECRET-0123456789abcdef"
POINT = {"type": "ephemeral"}
ADD = ToolSpec(name="add", description="Add.", input_schema={"type": "object"})
MUL = ToolSpec(name="mul", description="Multiply.", input_schema={"type": "object"})
HISTORY = (
    Message(role="system", content="You are a calculator."),
    Message(role="user", content="2+3?"),
    Message(role="assistant", tool_calls=(ToolCall(id="c1", name="add", input={"a": 2}),)),
    Message(role="tool", tool_call_id="c1", content="5"),
)


def _request(**options: Any) -> LLMRequest:
    return LLMRequest(model="m", messages=HISTORY, tools=(ADD, MUL), options=options)


async def _anthropic_body(req: LLMRequest) -> dict[str, Any]:
    async with (
        open_model_server(responder=None) as server,
        AnthropicProvider(base_url=server.base_url, api_key=KEY) as p,
    ):
        server.push(anthropic.messages_turn(anthropic.Turn(text="5")))
        await p.generate(req)
    body: dict[str, Any] = server.requests[0].json()
    return body


async def test_anthropic_marks_system_tools_and_history() -> None:
    body = await _anthropic_body(_request())
    assert body["system"] == [
        {"type": "text", "text": "You are a calculator.", "cache_control": POINT}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == POINT
    last = body["messages"][-1]["content"][-1]
    assert last["type"] == "tool_result" and last["cache_control"] == POINT
    marked = [b for m in body["messages"][:-1] for b in m["content"] if "cache_control" in b]
    assert marked == []  # one point on the history: its end


async def test_anthropic_caching_can_be_switched_off() -> None:
    body = await _anthropic_body(_request(prompt_cache=False))
    assert body["system"] == "You are a calculator."
    assert "cache_control" not in repr(body) and "prompt_cache" not in body


async def _openai_bodies(*requests: LLMRequest) -> list[dict[str, Any]]:
    async with (
        open_model_server(responder=None) as server,
        OpenAIProvider(base_url=server.base_url, api_key=KEY) as p,
    ):
        for req in requests:
            server.push(openai.chat_turn(openai.Turn(text="5")))
            await p.generate(req)
    return [r.json() for r in server.requests]


async def test_openai_sends_a_stable_prompt_cache_key() -> None:
    other = LLMRequest(model="m", messages=(Message(role="system", content="Other."),))
    first, again, different, off, own = await _openai_bodies(
        _request(),
        _request(temperature=0),
        other,
        _request(prompt_cache=False),
        _request(prompt_cache_key="mine"),
    )
    assert first["prompt_cache_key"].startswith("ptcflow-")
    assert again["prompt_cache_key"] == first["prompt_cache_key"]
    assert different["prompt_cache_key"] != first["prompt_cache_key"]
    assert "prompt_cache_key" not in off and "prompt_cache" not in off
    assert own["prompt_cache_key"] == "mine"


async def test_cache_tokens_reach_the_usage_and_the_cost() -> None:
    price = ModelPrice(
        input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75
    )
    async with (
        open_model_server(responder=None) as server,
        AnthropicProvider(base_url=server.base_url, api_key=KEY, model="claude-x") as p,
    ):
        server.push(
            anthropic.messages_turn(anthropic.Turn(text="5", cache_read=1000, cache_write=200))
        )
        async with Runtime(
            llm=p, prices=PriceTable({"claude-x": price, "claude-test": price})
        ) as rt:
            step = await rt.run(ReAct(system_prompt="You are a calculator."), "2+3?")
    assert step.ok, step.error
    usage = step.usage
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (1000, 200)
    assert step.cost_usd == pytest.approx(price.cost(usage))
    body = server.requests[0].json()
    assert body["system"][0]["cache_control"] == POINT
