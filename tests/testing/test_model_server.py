"""The local model server: ScriptedLLM's script, spoken over the real wire protocols."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from ptcflow.providers import AnthropicProvider, OpenAIProvider
from ptcflow.providers._client import SDKProvider
from ptcflow.runtime import EmbedRequest, LLMRequest, ProviderError, Runtime
from ptcflow.signals import Message, StreamAssembler, ToolCall, ToolSpec, Usage
from ptcflow.strategies import ReAct
from ptcflow.testing import ModelServer, ScriptedLLM, ServerReply, Turn, open_model_server

pytestmark = pytest.mark.anyio

HELLO = (Message(role="user", content="hi"),)
KINDS = ["openai", "anthropic"]


@asynccontextmanager
async def provider(
    kind: str, *script: object, **options: object
) -> AsyncIterator[tuple[ModelServer, SDKProvider]]:  # type: ignore[type-arg]
    async with open_model_server(script, **options) as server:  # type: ignore[arg-type]
        p: SDKProvider = (  # type: ignore[type-arg]
            OpenAIProvider(base_url=server.openai_url, api_key="sk-local", model="gpt-local")
            if kind == "openai"
            else AnthropicProvider(base_url=server.base_url, api_key="sk-local", model="claude")
        )
        async with p:
            yield server, p


async def answer(p: SDKProvider, *, stream: bool) -> object:  # type: ignore[type-arg]
    request = LLMRequest(model="", messages=HELLO)
    if not stream:
        return await p.generate(request)
    assembler = StreamAssembler()
    async for chunk in p.stream(request):
        assembler.add(chunk)
    return assembler.response()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [False, True])
async def test_script_entries_come_back_in_either_wire_format(kind: str, stream: bool) -> None:
    call = ToolCall(id="call_9", name="add", input={"x": 2})
    script = [
        "plain text",
        call,
        Turn(text="done", usage=Usage(input_tokens=30, output_tokens=4), chunks=("do", "ne")),
    ]
    async with provider(kind, *script) as (server, p):
        first = await answer(p, stream=stream)
        second = await answer(p, stream=stream)
        third = await answer(p, stream=stream)
    assert first.text == "plain text"  # type: ignore[attr-defined]
    assert second.tool_calls == (call,) and second.finish_reason == "tool_calls"  # type: ignore[attr-defined]
    assert third.text == "done"  # type: ignore[attr-defined]
    assert (third.usage.input_tokens, third.usage.output_tokens) == (30, 4)  # type: ignore[attr-defined]
    assert server.remaining == 0 and len(server.requests) == 3
    assert server.requests[0].json()["model"] in ("gpt-local", "claude")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("fault", "kind_of_error", "retry_after"),
    [
        (ScriptedLLM.rate_limited(2.5), "rate_limited", 2.5),
        (ScriptedLLM.server_error(502), "transient", None),
        (ScriptedLLM.auth_error(), "auth", None),
        (ScriptedLLM.timeout(), "timeout", None),
        (ScriptedLLM.malformed(), "provider_error", None),
    ],
)
async def test_faults_become_the_http_failures_they_stand_for(
    kind: str, fault: Turn, kind_of_error: str, retry_after: float | None
) -> None:
    async with provider(kind, fault) as (_, p):
        with pytest.raises(ProviderError) as info:
            await answer(p, stream=False)
    assert info.value.envelope.type == kind_of_error
    assert info.value.retry_after == retry_after


async def test_raw_replies_and_a_reset_connection() -> None:
    teapot = ServerReply(status=418, body=b'{"error": {"message": "short and stout"}}')
    async with provider("openai", teapot, ServerReply(reset=True)) as (_, p):
        with pytest.raises(ProviderError) as info:
            await answer(p, stream=False)
        assert "short and stout" in info.value.envelope.message
        with pytest.raises(ProviderError) as info:
            await answer(p, stream=False)
        assert info.value.envelope.type == "transient"


async def test_once_the_script_is_used_up_answers_are_plausible() -> None:
    add = ToolSpec(
        name="add", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}}
    )
    async with provider("openai", "scripted first") as (server, p):
        assert (await answer(p, stream=False)).text == "scripted first"  # type: ignore[attr-defined]
        asks = await p.generate(LLMRequest(model="m", messages=HELLO, tools=(add,)))
        vectors = await p.embed(EmbedRequest(model="e", inputs=("ab", "abc")))
    assert asks.tool_calls[0].name == "add" and asks.tool_calls[0].input == {"x": 2}
    assert [v[0] for v in vectors.vectors] == [2.0, 3.0]
    assert len(server.requests) == 3


async def test_embeddings_do_not_take_text_entries() -> None:
    async with provider("openai", "for the chat") as (_, p):
        await p.embed(EmbedRequest(model="e", inputs=("x",)))
        assert (await answer(p, stream=False)).text == "for the chat"  # type: ignore[attr-defined]


async def test_strict_servers_say_when_the_script_ran_out() -> None:
    async with provider("openai", responder=None) as (_, p):
        with pytest.raises(ProviderError) as info:
            await answer(p, stream=False)
    assert "script exhausted" in info.value.envelope.message


async def test_a_runtime_on_a_provider_pointed_at_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    async with open_model_server([ScriptedLLM.tool_call("add", x=2, y=3), "5"]) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        async with (
            OpenAIProvider(model="gpt-local") as llm,
            Runtime(llm=llm, tools=[add]) as rt,
        ):
            step = await rt.run(ReAct(), "2+3?")
    assert step.ok and step.value == "5" and step.tool_calls == 1
    assert server.requests[1].json()["messages"][-1]["content"] == '{"ok":true,"result":5}'
