"""OpenAIProvider against a local server speaking the Chat Completions wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager

import anyio
import pytest

from ptcflow.providers import OpenAIProvider
from ptcflow.providers._protocol import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import LLMChunk, Message, StreamAssembler, ToolCall, ToolSpec
from ptcflow.testing._openai_replies import Call, Turn, chat_turn, embedding_reply, error_reply
from ptcflow.testing._server import ModelServer, open_model_server
from ptcflow.testing._wire import ServerReply, json_reply, raw_reply, sse_frame, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-test-SECRET-0123456789abcdef"
USER = (Message(role="user", content="What is 2+3?"),)
ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
)


@asynccontextmanager
async def served(sdk_timeout: float = 30.0) -> AsyncIterator[tuple[ModelServer, OpenAIProvider]]:
    async with (
        open_model_server(responder=None) as server,
        OpenAIProvider(base_url=f"{server.base_url}/v1", api_key=KEY, timeout=sdk_timeout) as p,
    ):
        yield server, p


def request(**kw: object) -> LLMRequest:
    return LLMRequest(model="gpt-test", messages=USER, **kw)  # type: ignore[arg-type]


async def collect(p: OpenAIProvider, req: LLMRequest) -> list[LLMChunk]:
    return [c async for c in p.stream(req)]


async def failure(p: OpenAIProvider, req: LLMRequest, *, stream: bool = False) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        if stream:
            await collect(p, req)
        else:
            await p.generate(req)
    return info.value


async def test_generate_text_and_usage() -> None:
    async with served() as (server, p):
        server.push(chat_turn(Turn(text="5", cached_tokens=4)))
        response = await p.generate(request())
    assert response.text == "5"
    assert response.finish_reason == "stop"
    assert response.model == "gpt-test"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 7)
    assert response.usage.cache_read_tokens == 4
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert sent.json() == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "What is 2+3?"}],
    }


async def test_request_body_carries_tools_choice_schema_history_and_options() -> None:
    history = (
        Message(role="system", content="Be brief."),
        *USER,
        Message(role="assistant", tool_calls=(ToolCall(id="c1", name="add", input={"a": 2}),)),
        Message(role="tool", tool_call_id="c1", content='{"ok":true,"result":5}'),
    )
    schema = {"title": "Answer", "type": "object", "properties": {"n": {"type": "integer"}}}
    req = LLMRequest(
        model="gpt-test",
        messages=history,
        tools=(ADD,),
        tool_choice="add",
        response_schema=schema,
        options={"temperature": 0.2, "max_tokens": 64, "seed": 7},
    )
    async with served() as (server, p):
        server.push(chat_turn(Turn(text='{"n": 5}')))
        await p.generate(req)
    body = server.requests[0].json()
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true,"result":5}'},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": ADD.input_schema,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": schema, "strict": False},
    }
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.2, 64, 7)


async def test_generate_parallel_tool_calls() -> None:
    calls = (Call("call_a", "add", {"a": 1, "b": 2}), Call("call_b", "add", {"a": 3, "b": 4}))
    async with served() as (server, p):
        server.push(chat_turn(Turn(calls=calls)))
        response = await p.generate(request(tools=(ADD,)))
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall(id="call_a", name="add", input={"a": 1, "b": 2}),
        ToolCall(id="call_b", name="add", input={"a": 3, "b": 4}),
    )


async def test_stream_assembles_text_tool_fragments_usage_and_cached_tokens() -> None:
    turn = Turn(
        text="Let me add those.",
        calls=(Call("call_a", "add", {"a": 1, "b": 2}), Call("call_b", "add", {"a": 30, "b": 4})),
        cached_tokens=6,
    )
    async with served() as (server, p):
        server.push(chat_turn(turn), chat_turn(turn))
        chunks = await collect(p, request(tools=(ADD,)))
        whole = await p.generate(request(tools=(ADD,)))
    body = server.requests[0].json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "".join(c.text for c in chunks) == "Let me add those."
    fragments = [d for c in chunks for d in c.tool_calls]
    assert len(fragments) > 4  # arguments really arrived in pieces
    last = chunks[-1]
    assert last.finish_reason == "tool_calls" and last.usage is not None
    assert last.usage.cache_read_tokens == 6
    assert all(c.finish_reason is None and c.usage is None for c in chunks[:-1])
    assembler = StreamAssembler()
    for c in chunks:
        assembler.add(c)
    assert assembler.response() == whole


async def test_unknown_finish_reason_passes_through_unchanged() -> None:
    async with served() as (server, p):
        server.push(chat_turn(Turn(text="x", finish_reason="eos_token")))
        server.push(chat_turn(Turn(text="x", finish_reason="eos_token")))
        assert (await p.generate(request())).finish_reason == "eos_token"
        assert (await collect(p, request()))[-1].finish_reason == "eos_token"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (500, "transient", True),
        (503, "transient", True),
        (401, "auth", False),
        (403, "auth", False),
        (400, "validation", False),
        (404, "validation", False),
        (422, "validation", False),
    ],
)
async def test_http_errors_are_classified_and_not_retried_by_the_sdk(
    status: int, kind: str, retryable: bool
) -> None:
    async with served() as (server, p):
        server.push(error_reply(status, "nope", kind="server_error"))
        server.push(error_reply(status, "nope", kind="server_error"))
        err = await failure(p, request())
        streamed = await failure(p, request(), stream=True)
    for e in (err, streamed):
        assert e.envelope.type == kind
        assert e.envelope.retryable is retryable
        assert e.envelope.details["status"] == status
        assert "nope" in e.envelope.message
    assert len(server.requests) == 2  # one attempt each: the SDK's retries are off


async def test_rate_limit_carries_retry_after() -> None:
    async with served() as (server, p):
        server.push(error_reply(429, "slow down", kind="requests", headers=(("retry-after", "7"),)))
        server.push(
            error_reply(429, "slow down", kind="requests", headers=(("retry-after-ms", "250"),))
        )
        first = await failure(p, request())
        second = await failure(p, request(), stream=True)
    assert first.envelope.type == "rate_limited" and first.envelope.retryable
    assert first.retry_after == 7.0 and first.envelope.details["retry_after"] == 7.0
    assert second.retry_after == 0.25
    assert len(server.requests) == 2


async def test_slow_response_past_the_timeout_is_a_retryable_timeout() -> None:
    # The hang must outlast the SDK timeout; the other four replies must not, even on a
    # loaded CI machine: 1 s leaves them a wide margin.
    async with served(sdk_timeout=1.0) as (server, p):
        server.push(ServerReply(hang=True))
        err = await failure(p, request())
    assert err.envelope.type == "timeout" and err.envelope.retryable
    assert len(server.requests) == 1


async def test_connection_dropped_mid_stream_is_transient() -> None:
    async with served() as (server, p):
        server.push(chat_turn(Turn(text="a long answer that gets cut", drop_after=3)))
        got: list[LLMChunk] = []
        with pytest.raises(ProviderError) as info:
            async for c in p.stream(request()):
                got.append(c)
    assert info.value.envelope.type == "transient" and info.value.envelope.retryable
    assert [c.text for c in got] == ["a lo", "ng a"]  # what arrived before the drop
    assert all(c.finish_reason is None for c in got)


async def test_stream_ending_without_finish_reason_is_transient() -> None:
    events = [
        sse_frame(
            {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {"content": "hal"}, "finish_reason": None}],
            }
        )
    ]
    async with served() as (server, p):
        server.push(sse_reply(events))
        err = await failure(p, request(), stream=True)
    assert err.envelope.type == "transient"
    assert "truncated" in err.envelope.message


async def test_malformed_json_body_is_provider_error_with_truncated_raw_body() -> None:
    garbage = b'{"id": "chatcmpl-1", "choices": [' + b"x" * 5000
    async with served() as (server, p):
        server.push(raw_reply(garbage))
        err = await failure(p, request())
    assert err.envelope.type == "provider_error" and not err.envelope.retryable
    body = err.envelope.details["body"]
    assert body.startswith('{"id": "chatcmpl-1"') and body.endswith("<5033 chars>")
    assert len(body) < 2100


async def test_malformed_sse_event_is_provider_error() -> None:
    async with served() as (server, p):
        server.push(sse_reply([b"data: {not json\n\n", b"data: [DONE]\n\n"]))
        err = await failure(p, request(), stream=True)
    assert err.envelope.type == "provider_error"
    assert err.envelope.details["body"] == "{not json"


async def test_non_json_content_type_and_missing_choices_are_provider_errors() -> None:
    async with served() as (server, p):
        server.push(raw_reply(b"<html>gateway</html>", content_type="text/html"))
        server.push(json_reply({"object": "chat.completion", "choices": []}))
        html = await failure(p, request())
        empty = await failure(p, request())
    assert html.envelope.type == empty.envelope.type == "provider_error"
    assert "gateway" in html.envelope.details["body"]
    assert "no choices" in empty.envelope.message


async def test_error_event_inside_a_stream_is_classified() -> None:
    event = sse_frame({"error": {"message": "The server had an error", "type": "server_error"}})
    async with served() as (server, p):
        server.push(sse_reply([event]))
        err = await failure(p, request(), stream=True)
    assert err.envelope.type == "transient"
    assert "The server had an error" in err.envelope.message


async def test_api_key_never_appears_in_envelopes() -> None:
    def echo(req: object) -> object:
        auth = req.headers["authorization"]  # type: ignore[attr-defined]
        return error_reply(401, f"Incorrect API key provided: {auth}", kind="invalid_request_error")

    async with served() as (server, p):
        server.push(echo, echo)  # type: ignore[arg-type]
        errors = [await failure(p, request()), await failure(p, request(), stream=True)]
    assert KEY not in repr(p)
    for err in errors:
        assert err.envelope.type == "auth"
        text = f"{err} {err.envelope!r} {err.envelope.to_dict()}"
        assert KEY not in text and KEY[-8:] not in text
        assert "[REDACTED]" in err.envelope.message


async def test_embeddings_in_input_order() -> None:
    async with served() as (server, p):
        server.push(embedding_reply([[0.1, 0.2], [0.3, 0.4]]))
        result = await p.embed(EmbedRequest(model="embed-test", inputs=("a", "b")))
    assert result.vectors == ((0.1, 0.2), (0.3, 0.4))
    assert result.usage.input_tokens == 6
    sent = server.requests[0]
    assert sent.path == "/v1/embeddings"
    assert sent.json() == {"model": "embed-test", "input": ["a", "b"], "encoding_format": "float"}


async def test_connection_refused_is_transient() -> None:
    async with open_model_server(responder=None) as server:
        url = f"{server.base_url}/v1"
    async with OpenAIProvider(base_url=url, api_key=KEY) as p:
        err = await failure(p, request())
    assert err.envelope.type == "transient" and err.envelope.retryable


async def test_abandoning_or_cancelling_a_stream_releases_it_cleanly() -> None:
    turn = Turn(text="one two three four five six seven eight")
    async with served() as (server, p):
        server.push(chat_turn(turn))
        async with aclosing(p.stream(request())) as chunks:
            first = await anext(chunks)  # the consumer stops after one chunk
        assert first.text == "one "
        frames = chat_turn(turn)(server.requests[0]).events
        assert frames is not None
        server.push(
            ServerReply(
                headers=(("content-type", "text/event-stream"),), events=frames, hang_after=3
            )
        )
        got: list[LLMChunk] = []
        with anyio.move_on_after(0.3) as scope:
            async for c in p.stream(request()):
                got.append(c)
        assert scope.cancelled_caught and [c.text for c in got] == ["one ", "two "]
        server.push(chat_turn(Turn(text="still works")))
        assert (await p.generate(request())).text == "still works"


async def test_a_client_passed_in_is_used_and_left_open() -> None:
    import openai

    async with open_model_server(responder=None) as server:
        client = openai.AsyncOpenAI(base_url=f"{server.base_url}/v1", api_key=KEY, max_retries=0)
        async with OpenAIProvider(client=client) as p:
            server.push(chat_turn(Turn(text="mine")))
            assert (await p.generate(request())).text == "mine"
        assert not client.is_closed()
        await client.close()
