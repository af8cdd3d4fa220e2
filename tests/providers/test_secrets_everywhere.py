"""One API key, configured every documented way, never reaches any output.

A local server answers 401, 429 with Retry-After, 500, malformed JSON, a reset connection
and a cut SSE stream, each echoing the key (whole, its first 13 characters, its last 8)
the way real servers echo a rejected key. Every output a user can see is then searched
for any 8 consecutive characters of it: the Step (repr, str, JSON), the signals, a journal,
the structlog events, the spans (content capture on and off), ``repr(provider)``, and the
formatted traceback of the provider error (its ``__cause__`` included).
"""

from __future__ import annotations

import io
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import msgspec
import openai
import pytest
import structlog
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from ptcflow.providers import AnthropicProvider, ModelRegistry, OpenAIProvider, ProviderConfig
from ptcflow.runtime import LLMRequest, ProviderError, RetryPolicy, Runtime, Telemetry
from ptcflow.signals import Message, SignalBus, record_journal
from ptcflow.strategies import ReAct
from ptcflow.testing import (
    ModelServer,
    RecordedRequest,
    ServerReply,
    _anthropic_replies as aw,
    _openai_replies as ow,
    open_model_server,
)
from ptcflow.testing._wire import json_reply, raw_reply, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-proj-LEAKCHECK-7Qw2Zx9Lm4Np8Rt6Vb3Yc1"
ECHO = f"Incorrect API key provided: {KEY[:13]}********{KEY[-8:]} (you sent {KEY})"


def leaks(text: str) -> list[str]:
    """Every 8-character run of the key found in ``text``."""
    return [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in text]


def error_body(anthropic_format: bool, kind: str) -> dict[str, Any]:
    if anthropic_format:
        return {"type": "error", "error": {"type": kind, "message": ECHO}, "echo": KEY}
    return {"error": {"message": ECHO, "type": kind, "code": KEY}}


def fault(name: str) -> Callable[[RecordedRequest], ServerReply]:
    def reply(request: RecordedRequest) -> ServerReply:
        anthropic_format = request.path.endswith("/messages")
        if name == "401":
            return json_reply(error_body(anthropic_format, "authentication_error"), status=401)
        if name == "429":
            body = error_body(anthropic_format, "rate_limit_error")
            return json_reply(body, status=429, headers=[("retry-after", "0")])
        if name == "500":
            return json_reply(error_body(anthropic_format, "api_error"), status=500)
        if name == "malformed":
            return raw_reply(f'{{"choices": [ {ECHO}'.encode())
        if name == "reset":
            return ServerReply(reset=True)
        text = (f"echo {KEY[:13]} ", f"and {KEY}", " more")  # the cut SSE stream
        if anthropic_format:
            events = aw.stream_events(aw.Turn(text="".join(text), chunks=text))
        else:
            events = ow.stream_events(ow.Turn(text="".join(text), chunks=text), include_usage=True)
        return sse_reply(events, drop_after=5)

    return reply


FAST = RetryPolicy(max_backoff_ms=1)
FAULTS = ["401", "429", "500", "malformed", "reset", "cut_stream"]


@asynccontextmanager
async def configured(
    way: str, server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    """A provider (or registry) holding KEY the way ``way`` says."""
    url, base = server.openai_url, server.base_url
    host = f"127.0.0.1:{server.port}"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    llm: Any
    if way == "api_key":
        llm = OpenAIProvider(base_url=url, api_key=KEY, model="m")
    elif way == "api_key_env":
        monkeypatch.setenv("MY_SERVICE_KEY", KEY)
        llm = OpenAIProvider(base_url=url, api_key_env="MY_SERVICE_KEY", model="m")
    elif way == "OPENAI_API_KEY":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        llm = OpenAIProvider(model="m")
    elif way == "openai_client":
        client = openai.AsyncOpenAI(api_key=KEY, base_url=url, max_retries=0)
        llm = OpenAIProvider(client=client, model="m")
    elif way == "default_headers":
        llm = OpenAIProvider(
            base_url=url, api_key="sk-other", default_headers={"X-Api-Key": KEY}, model="m"
        )
    elif way == "hyphenated_header":  # matched by no secret-looking name before
        llm = OpenAIProvider(
            base_url=url, api_key="sk-other", default_headers={"X-Custom-Auth": KEY}, model="m"
        )
    elif way == "unknown_header":  # a header name that says nothing: secret unless known
        headers = {"X-Routing": KEY, "Accept": "application/json", "OpenAI-Beta": "assistants=v2"}
        llm = OpenAIProvider(base_url=url, api_key="sk-other", default_headers=headers, model="m")
    elif way == "anthropic_header":
        llm = AnthropicProvider(
            base_url=base, api_key="sk-other", default_headers={"X-Custom-Auth": KEY}, model="m"
        )
    elif way == "auth_header":
        headers = {"Authorization": f"Bearer {KEY}"}
        llm = OpenAIProvider(base_url=url, default_headers=headers, model="m")
    elif way == "url_userinfo":
        llm = OpenAIProvider(base_url=f"http://svc:{KEY}@{host}/v1", model="m")
    elif way == "url_query":
        llm = OpenAIProvider(base_url=f"http://{host}/v1?key={KEY}", model="m")
    elif way == "registry":
        llm = ModelRegistry(
            env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url},
            providers={"openai": ProviderConfig(kind="openai", base_url=url)},
            default="openai:m",
        )
    elif way == "registry_headers":
        config = ProviderConfig(kind="openai-compatible", base_url=url, headers={"api-key": KEY})
        llm = ModelRegistry(providers={"local": config}, default="local:m")
    elif way == "registry_hyphenated_header":
        headers = {"X-Custom-Auth": KEY}
        config = ProviderConfig(kind="openai-compatible", base_url=url, headers=headers)
        llm = ModelRegistry(providers={"local": config}, default="local:m")
    elif way == "anthropic_api_key":
        llm = AnthropicProvider(base_url=base, api_key=KEY, model="m")
    elif way == "anthropic_client":
        claude = anthropic.AsyncAnthropic(api_key=KEY, base_url=base, max_retries=0)
        llm = AnthropicProvider(client=claude, model="m")
    else:  # pragma: no cover
        raise AssertionError(way)
    async with llm:
        yield llm


WAYS = [
    "api_key",
    "api_key_env",
    "OPENAI_API_KEY",
    "openai_client",
    "default_headers",
    "hyphenated_header",
    "unknown_header",
    "anthropic_header",
    "auth_header",
    "url_userinfo",
    "url_query",
    "registry",
    "registry_headers",
    "registry_hyphenated_header",
    "anthropic_api_key",
    "anthropic_client",
]


def provider_of(llm: Any) -> Any:
    return llm.resolve(None, None)[0] if isinstance(llm, ModelRegistry) else llm


@pytest.mark.parametrize("way", WAYS)
async def test_the_key_reaches_no_output(way: str, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs: list[str] = []
    async with (
        open_model_server(responder=None) as server,
        configured(way, server, monkeypatch) as llm,
    ):
        provider = provider_of(llm)
        outputs.append(repr(provider))
        for name in FAULTS:
            stream = name == "cut_stream"
            server.responder = fault(name)  # every request now gets this fault
            # a direct call: the error, its message, its formatted traceback
            request = LLMRequest(model="m", messages=(Message(role="user", content="hi"),))
            with pytest.raises(ProviderError) as info:
                if stream:
                    async for chunk in provider.stream(request):
                        outputs.append(repr(chunk))
                else:
                    await provider.generate(request)
            outputs.append("".join(traceback.format_exception(info.value)))
            outputs.append(repr(info.value.envelope))
            # a run: Step, signals, journal, logs, spans (content capture on and off)
            for capture in (False, True):
                exporter = InMemorySpanExporter()
                tracer_provider = TracerProvider()
                tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
                telemetry = Telemetry(
                    tracer_provider=tracer_provider, capture_content=capture, log_events=True
                )
                bus, journal = SignalBus(), io.StringIO()
                with capture_logs() as logs:
                    async with (
                        record_journal(bus, journal),
                        Runtime(llm=llm, bus=bus, telemetry=telemetry, retry=FAST) as rt,
                    ):
                        step = await rt.run(
                            ReAct(llm_max_retries=1, stream=stream), "hi", record=True
                        )
                assert not step.ok and step.error is not None
                outputs += [repr(step), str(step), msgspec.json.encode(step).decode()]
                outputs += [repr(s) for s in step.signals]
                outputs.append(journal.getvalue())
                outputs += [repr(e) for e in logs]
                outputs += [
                    repr(dict(s.attributes or {})) + repr(s.status.description) + repr(s.events)
                    for s in exporter.get_finished_spans()
                ]
    assert len(server.requests) >= len(FAULTS) * 3
    found = {run for text in outputs for run in leaks(text)}
    assert not found, f"{way}: key fragments {sorted(found)} leaked"


def test_the_check_would_see_a_leak() -> None:
    assert leaks(f"xx {KEY[3:11]} yy") == [KEY[3:11]]
    assert leaks(ECHO)  # the server really echoes it
    structlog.get_logger  # noqa: B018 - structlog is what capture_logs patches
