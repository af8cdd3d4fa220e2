"""AnthropicProvider against a local server speaking the Messages API wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from ptcflow.providers import AnthropicProvider
from ptcflow.providers._protocol import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import LLMChunk, Message, StreamAssembler, ToolCall, ToolSpec
from ptcflow.testing._anthropic_replies import Turn, error_reply, messages_turn
from ptcflow.testing._openai_replies import Call
from ptcflow.testing._server import ModelServer, open_model_server
from ptcflow.testing._wire import ServerReply, json_reply, raw_reply, sse_frame, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-ant-test-SECRET-0123456789abcdef"
USER = (Message(role="user", content="What is 2+3?"),)
ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
)


@asynccontextmanager
async def served(sdk_timeout: float = 30.0) -> AsyncIterator[tuple[ModelServer, AnthropicProvider]]:
    async with (
        open_model_server(responder=None) as server,
        AnthropicProvider(base_url=server.base_url, api_key=KEY, timeout=sdk_timeout) as p,
    ):
        yield server, p


def request(**kw: object) -> LLMRequest:
    return LLMRequest(model="claude-test", messages=USER, **kw)  # type: ignore[arg-type]


async def collect(p: AnthropicProvider, req: LLMRequest) -> list[LLMChunk]:
    return [c async for c in p.stream(req)]


async def failure(p: AnthropicProvider, req: LLMRequest, *, stream: bool = False) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        if stream:
            await collect(p, req)
        else:
            await p.generate(req)
    return info.value


async def test_generate_text_usage_and_cache_tokens() -> None:
    async with served() as (server, p):
        server.push(messages_turn(Turn(text="5", cache_read=100, cache_write=30)))
        response = await p.generate(request())
    assert response.text == "5" and response.finish_reason == "stop"
    assert response.model == "claude-test"
    assert response.usage.input_tokens == 150  # 20 uncached + 100 read + 30 written
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (100, 30)
    assert response.usage.output_tokens == 9
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    # the SDK sends the key as x-api-key (classic) or as a bearer token (newer releases)
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert "anthropic-version" in sent.headers
    assert sent.json() == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "What is 2+3?"}],
    }


async def test_request_body_system_tool_use_and_tool_result_blocks() -> None:
    history = (
        Message(role="system", content="Be brief."),
        *USER,
        Message(
            role="assistant",
            content="Adding.",
            tool_calls=(
                ToolCall(id="t1", name="add", input={"a": 2}),
                ToolCall(id="t2", name="add", input={"a": 3}),
            ),
        ),
        Message(role="tool", tool_call_id="t1", content='{"ok":true,"result":5}'),
        Message(role="tool", tool_call_id="t2", content='{"ok":false,"error":{"type":"x"}}'),
        Message(role="user", content="And now?"),
    )
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    req = LLMRequest(
        model="claude-test",
        messages=history,
        tools=(ADD,),
        tool_choice="required",
        response_schema=schema,
        options={
            "max_tokens": 256,
            "temperature": 0.1,
            "prompt_cache": False,
        },  # markers: test_prompt_cache.py
    )
    async with served() as (server, p):
        server.push(messages_turn(Turn(text="ok")))
        await p.generate(req)
    body = server.requests[0].json()
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 256 and body["temperature"] == 0.1
    assert body["messages"] == [
        {"role": "user", "content": "What is 2+3?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding."},
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 2}},
                {"type": "tool_use", "id": "t2", "name": "add", "input": {"a": 3}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": '{"ok":true,"result":5}'},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": '{"ok":false,"error":{"type":"x"}}',
                    "is_error": True,
                },
                {"type": "text", "text": "And now?"},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "add", "description": "Add two integers.", "input_schema": ADD.input_schema}
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


async def test_stream_event_sequence_assembles_like_generate() -> None:
    turn = Turn(
        text="Let me add.",
        calls=(Call("toolu_a", "add", {"a": 1, "b": 2}), Call("toolu_b", "add", {"a": 30})),
        cache_read=8,
    )
    async with served() as (server, p):
        server.push(messages_turn(turn), messages_turn(turn))
        chunks = await collect(p, request(tools=(ADD,)))
        whole = await p.generate(request(tools=(ADD,)))
    assert server.requests[0].json()["stream"] is True
    assert "".join(c.text for c in chunks) == "Let me add."
    starts = [d for c in chunks for d in c.tool_calls if d.name]
    assert [(d.index, d.id, d.name) for d in starts] == [
        (0, "toolu_a", "add"),
        (1, "toolu_b", "add"),
    ]
    last = chunks[-1]
    assert last.finish_reason == "tool_calls" and last.usage is not None
    assert last.usage.output_tokens == 9 and last.usage.cache_read_tokens == 8
    assembler = StreamAssembler()
    for c in chunks:
        assembler.add(c)
    assert assembler.response() == whole
    assert whole.tool_calls[1] == ToolCall(id="toolu_b", name="add", input={"a": 30})


async def test_unknown_stop_reason_passes_through() -> None:
    async with served() as (server, p):
        server.push(messages_turn(Turn(text="x", stop_reason="pause_turn")))
        server.push(messages_turn(Turn(text="x", stop_reason="pause_turn")))
        assert (await p.generate(request())).finish_reason == "pause_turn"
        assert (await collect(p, request()))[-1].finish_reason == "pause_turn"


@pytest.mark.parametrize(
    ("status", "kind", "etype", "retryable"),
    [
        (500, "transient", "api_error", True),
        (529, "transient", "overloaded_error", True),
        (503, "transient", "api_error", True),
        (401, "auth", "authentication_error", False),
        (403, "auth", "permission_error", False),
        (400, "validation", "invalid_request_error", False),
        (413, "validation", "request_too_large", False),
    ],
)
async def test_http_errors_are_classified(
    status: int, kind: str, etype: str, retryable: bool
) -> None:
    async with served() as (server, p):
        server.push(
            error_reply(status, "nope", kind=etype), error_reply(status, "nope", kind=etype)
        )
        errors = [await failure(p, request()), await failure(p, request(), stream=True)]
    for e in errors:
        assert (e.envelope.type, e.envelope.retryable) == (kind, retryable)
        assert e.envelope.details["status"] == status
        assert e.envelope.details["request_id"] == "req_1"
    assert len(server.requests) == 2


async def test_rate_limit_with_retry_after() -> None:
    headers = (("retry-after", "3"),)
    async with served() as (server, p):
        server.push(error_reply(429, "Too many", kind="rate_limit_error", headers=headers))
        err = await failure(p, request(), stream=True)
    assert err.envelope.type == "rate_limited" and err.retry_after == 3.0
    assert err.envelope.details["retry_after"] == 3.0
    assert len(server.requests) == 1


async def test_overloaded_error_event_mid_stream_is_transient() -> None:
    events = [
        sse_frame(
            {"type": "message_start", "message": {"model": "m", "usage": {}}}, event="message_start"
        ),
        sse_frame(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            event="error",
        ),
    ]
    async with served() as (server, p):
        server.push(sse_reply(events))
        err = await failure(p, request(), stream=True)
    assert err.envelope.type == "transient" and "Overloaded" in err.envelope.message


async def test_faults_timeout_drop_truncation_and_malformed() -> None:
    # The hang must outlast the SDK timeout; the other four replies must not, even on a
    # loaded CI machine: 1 s leaves them a wide margin.
    async with served(sdk_timeout=1.0) as (server, p):
        server.push(ServerReply(hang=True))
        server.push(messages_turn(Turn(text="a long answer", drop_after=4)))
        server.push(messages_turn(Turn(text="cut short", skip_stop=True)))
        server.push(raw_reply(b'{"type": "message", "content": [{"type": "te'))
        server.push(json_reply({"type": "message"}))
        timeout = await failure(p, request())
        dropped = await failure(p, request(), stream=True)
        truncated = await failure(p, request(), stream=True)
        garbage = await failure(p, request())
        shapeless = await failure(p, request())
    assert (timeout.envelope.type, timeout.envelope.retryable) == ("timeout", True)
    assert (dropped.envelope.type, dropped.envelope.retryable) == ("transient", True)
    assert truncated.envelope.type == "transient" and "message_stop" in truncated.envelope.message
    assert garbage.envelope.type == "provider_error" and not garbage.envelope.retryable
    assert garbage.envelope.details["body"] == '{"type": "message", "content": [{"type": "te'
    assert shapeless.envelope.type == "provider_error"
    assert len(server.requests) == 5


async def test_api_key_never_appears_in_envelopes() -> None:
    def echo(req: object) -> ServerReply:
        headers = req.headers  # type: ignore[attr-defined]
        key = headers.get("x-api-key") or headers["authorization"]
        return error_reply(401, f"invalid x-api-key {key}", kind="authentication_error")

    async with served() as (server, p):
        server.push(echo, echo)
        errors = [await failure(p, request()), await failure(p, request(), stream=True)]
    for err in errors:
        text = f"{err} {err.envelope!r}"
        assert KEY not in text and KEY[-8:] not in text
        assert "[REDACTED]" in err.envelope.message
    assert KEY not in repr(p)


async def test_embed_is_a_clear_validation_error() -> None:
    async with AnthropicProvider(api_key=KEY) as p:
        err = await failure_embed(p)
    assert err.envelope.type == "validation" and "openai" in err.envelope.message


async def failure_embed(p: AnthropicProvider) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await p.embed(EmbedRequest(model="claude-test", inputs=("a",)))
    return info.value
