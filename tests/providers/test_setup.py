"""What a provider needs is checked when it is built or before any request is sent."""

from __future__ import annotations

import pytest

from ptcflow.errors import ConfigError, UsageError
from ptcflow.providers import AnthropicProvider, OpenAIProvider
from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.signals import Message
from ptcflow.strategies import ReAct
from ptcflow.testing import open_model_server

HELLO = (Message(role="user", content="hi"),)


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_env")
@pytest.mark.parametrize(
    ("cls", "variable"),
    [(OpenAIProvider, "OPENAI_API_KEY"), (AnthropicProvider, "ANTHROPIC_API_KEY")],
)
def test_a_missing_key_is_a_config_error_naming_the_variable(
    cls: type[OpenAIProvider], variable: str
) -> None:
    with pytest.raises(ConfigError) as info:
        cls()
    assert f"export {variable}=..." in str(info.value)
    assert "api_key=" in str(info.value) and "base_url=" in str(info.value)


@pytest.mark.usefixtures("no_env")
def test_a_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert OpenAIProvider(base_url="http://localhost:11434/v1").name == "openai"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    assert OpenAIProvider().base_url is None


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_no_model_anywhere_is_a_usage_error_before_any_request(kind: str) -> None:
    async with open_model_server() as server:
        p = (
            OpenAIProvider(base_url=server.openai_url, api_key="sk-local")
            if kind == "openai"
            else AnthropicProvider(base_url=server.base_url, api_key="sk-local")
        )
        async with p:
            with pytest.raises(UsageError) as info:
                await p.generate(LLMRequest(model="", messages=HELLO))
            assert "pass model=" in str(info.value)
            with pytest.raises(UsageError):
                async for _ in p.stream(LLMRequest(model="", messages=HELLO)):
                    pass
            async with Runtime(llm=p) as rt:  # refused by the call itself (Runtime.run)
                with pytest.raises(UsageError, match="no model is set for this run"):
                    await rt.run(ReAct(), "hi")
        assert server.requests == []


@pytest.mark.anyio
async def test_the_provider_model_is_the_default() -> None:
    async with (
        open_model_server(["ok", "ok"]) as server,
        OpenAIProvider(base_url=server.openai_url, api_key="sk-local", model="gpt-4.1") as p,
    ):
        await p.generate(LLMRequest(model="", messages=HELLO))
        await p.generate(LLMRequest(model="gpt-other", messages=HELLO))
    assert [r.json()["model"] for r in server.requests] == ["gpt-4.1", "gpt-other"]
    assert repr(p) == (
        f"OpenAIProvider(name='openai', base_url='{server.openai_url}', model='gpt-4.1')"
    )


def test_repr_never_shows_url_credentials() -> None:
    p = OpenAIProvider(base_url="https://bot:hunter22@proxy.example/v1?key=Q1234567", api_key="k")
    assert "hunter22" not in repr(p) and "Q1234567" not in repr(p)
    assert "proxy.example" in repr(p)


def test_registry_secrets_cover_every_configured_provider() -> None:
    from ptcflow.providers import ModelRegistry, ProviderConfig

    given = OpenAIProvider(api_key="sk-instance-0123456789")
    models = ModelRegistry(
        env={"OPENAI_API_KEY": "sk-env-openai-0123456789", "LOCAL_KEY": "local-0123456789"},
        providers={
            "local": ProviderConfig(
                kind="openai-compatible",
                base_url="http://u:pw-0123456789@localhost/v1",
                api_key_env="LOCAL_KEY",
                headers={"X-Api-Key": "hdr-0123456789"},
            ),
            "mine": given,
        },
    )
    for secret in (
        "sk-env-openai-0123456789",
        "local-0123456789",
        "pw-0123456789",
        "hdr-0123456789",
        "sk-instance-0123456789",
    ):
        assert models.secrets.leaks(secret), secret


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("raised", "kind", "retryable"),
    [
        (TimeoutError("slow"), "timeout", True),
        (ConnectionResetError("reset"), "transient", True),
        (RuntimeError("bug near sk-boundary-0123456789"), "provider_error", False),
    ],
)
async def test_anything_else_a_provider_raises_leaves_as_a_scrubbed_provider_error(
    raised: Exception, kind: str, retryable: bool
) -> None:
    import traceback

    from ptcflow.providers._errors import ScrubbedCause
    from ptcflow.runtime import ProviderError
    from ptcflow.signals import LLMResponse

    class Broken(OpenAIProvider):
        async def _generate(self, request: LLMRequest) -> LLMResponse:
            raise raised

    p = Broken(base_url="http://127.0.0.1:9/v1", api_key="sk-boundary-0123456789", model="m")
    with pytest.raises(ProviderError) as info:
        await p.generate(LLMRequest(model="", messages=HELLO))
    assert (info.value.envelope.type, info.value.envelope.retryable) == (kind, retryable)
    assert isinstance(info.value.__cause__, ScrubbedCause)
    assert "0123456789" not in "".join(traceback.format_exception(info.value))
