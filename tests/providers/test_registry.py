"""ModelRegistry: model strings, aliases, config files, keys from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ptcflow.errors import ConfigError
from ptcflow.providers import (
    AnthropicProvider,
    ModelRegistry,
    OpenAIProvider,
    ProviderConfig,
    find_config,
)
from ptcflow.runtime import LLMProvider, ModelResolver
from ptcflow.testing import ScriptedLLM

ENV = {"OPENAI_API_KEY": "sk-open-123456", "ANTHROPIC_API_KEY": "sk-ant-123456"}


def registry(**kw: object) -> ModelRegistry:
    return ModelRegistry(env=ENV, **kw)  # type: ignore[arg-type]


def test_is_a_model_resolver_not_a_provider() -> None:
    reg = registry()
    assert isinstance(reg, ModelResolver)
    assert not isinstance(reg, LLMProvider)


def test_model_strings_pick_the_provider_and_keep_colons_in_the_name() -> None:
    reg = registry(
        providers={"local": ProviderConfig(kind="openai-compatible", base_url="http://h/v1")}
    )
    openai, name = reg.resolve("openai:gpt-4.1-mini", None)
    assert isinstance(openai, OpenAIProvider) and name == "gpt-4.1-mini"
    claude, name = reg.resolve("anthropic:claude-sonnet-4-5", None)
    assert isinstance(claude, AnthropicProvider) and name == "claude-sonnet-4-5"
    local, name = reg.resolve("local:llama3.2:3b", None)
    assert isinstance(local, OpenAIProvider) and local.base_url == "http://h/v1"
    assert (local.name, name) == ("local", "llama3.2:3b")
    assert reg.resolve("openai:other", None)[0] is openai  # one provider per name


def test_aliases_chain_and_serve_as_model_or_alias() -> None:
    reg = registry(
        aliases={
            "fast": "openai:gpt-4.1-mini",
            "smart": "anthropic:claude-sonnet-4-5",
            "quick": "fast",
        },
        default="smart",
    )
    assert reg.resolve(None, "quick")[1] == "gpt-4.1-mini"
    assert reg.resolve("fast", None)[1] == "gpt-4.1-mini"
    assert reg.resolve(None, None)[1] == "claude-sonnet-4-5"
    assert reg.model_for(alias="quick") == "openai:gpt-4.1-mini"


def test_unknown_alias_is_a_clear_error_with_a_suggestion() -> None:
    reg = registry(aliases={"fast": "openai:gpt-4.1-mini", "smart": "openai:gpt-4.1"})
    with pytest.raises(
        ConfigError,
        match=r"unknown model alias 'fsat'; did you mean 'fast'\? known aliases: fast, smart",
    ):
        reg.resolve(None, "fsat")


def test_bad_model_strings_and_providers() -> None:
    reg = registry()
    with pytest.raises(ConfigError, match="neither an alias nor a 'provider:model'"):
        reg.resolve("gpt-4o", None)
    with pytest.raises(ConfigError, match=r"unknown model provider 'opnai'.*did you mean 'openai'"):
        reg.resolve("opnai:gpt-4o", None)
    with pytest.raises(ConfigError, match="no model given"):
        reg.resolve(None, None)


def test_alias_cycles_fail_at_construction() -> None:
    with pytest.raises(ConfigError, match="alias cycle: a -> b -> a"):
        registry(aliases={"a": "b", "b": "a"})
    with pytest.raises(ConfigError, match="unknown model provider"):
        registry(default="nowhere:model")


def test_missing_key_names_the_variable_and_never_a_value() -> None:
    reg = ModelRegistry(env={"OTHER": "sk-other-secret"}, aliases={"fast": "openai:gpt-4.1-mini"})
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY") as info:
        reg.check()
    assert "sk-other-secret" not in str(info.value)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        reg.resolve("anthropic:claude-sonnet-4-5", None)


def test_openai_compatible_base_url_from_config_or_environment() -> None:
    with pytest.raises(ConfigError, match=r"no base_url.*PTCFLOW_OPENAI_COMPATIBLE_BASE_URL"):
        registry().resolve("openai-compatible:qwen", None)
    env = {"PTCFLOW_OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:8000/v1"}
    provider, name = ModelRegistry(env=env).resolve("openai-compatible:qwen", None)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.base_url, name) == ("http://127.0.0.1:8000/v1", "qwen")


def test_given_provider_instances_are_used_as_is() -> None:
    scripted = ScriptedLLM([])
    reg = registry(providers={"scripted": scripted}, aliases={"test": "scripted:any"})
    assert reg.resolve(None, "test") == (scripted, "any")
    with pytest.raises(ConfigError, match="must be a ProviderConfig or an LLMProvider"):
        registry(providers={"x": object()})


def test_from_ptcflow_toml(tmp_path: Path) -> None:
    (tmp_path / "ptcflow.toml").write_text(
        'default_model = "fast"\n'
        "[aliases]\n"
        'fast = "ollama:llama3.2"\n'
        "[providers.ollama]\n"
        'kind = "openai-compatible"\n'
        'base_url = "http://localhost:11434/v1"\n'
        "timeout = 30\n"
    )
    reg = ModelRegistry.from_config(tmp_path / "ptcflow.toml", env=ENV)
    provider, name = reg.resolve(None, None)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.base_url, name) == (
        "ollama",
        "http://localhost:11434/v1",
        "llama3.2",
    )


def test_from_pyproject_table_found_in_a_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.ptcflow.aliases]\nsmart = "anthropic:claude-sonnet-4-5"\n'
    )
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert find_config() == str(tmp_path / "pyproject.toml")
    reg = ModelRegistry.from_config(env=ENV, aliases={"fast": "openai:gpt-4.1-mini"})
    assert reg.resolve(None, "smart")[1] == "claude-sonnet-4-5"
    assert reg.resolve(None, "fast")[1] == "gpt-4.1-mini"


def test_config_file_errors(tmp_path: Path) -> None:
    keyed = tmp_path / "keyed.toml"
    keyed.write_text('[providers.x]\nkind = "openai"\napi_key = "sk-live-123"\n')
    with pytest.raises(ConfigError, match="never store keys in files") as info:
        ModelRegistry.from_config(keyed)
    assert "sk-live-123" not in str(info.value)
    typo = tmp_path / "typo.toml"
    typo.write_text('[aliasses]\nfast = "openai:x"\n')
    with pytest.raises(ConfigError, match="aliasses"):
        ModelRegistry.from_config(typo)
    broken = tmp_path / "broken.toml"
    broken.write_text("[aliases\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        ModelRegistry.from_config(broken)
    kind = tmp_path / "kind.toml"
    kind.write_text('[providers.x]\nkind = "gemini"\n')
    with pytest.raises(ConfigError, match=r"\[providers\.x\] has kind = 'gemini'; kind is one"):
        ModelRegistry.from_config(kind)
    with pytest.raises(ConfigError, match="cannot read"):
        ModelRegistry.from_config(tmp_path / "missing.toml")


@pytest.mark.anyio
async def test_aclose_closes_only_the_providers_it_built() -> None:
    scripted = ScriptedLLM([])
    async with registry(providers={"s": scripted}) as reg:
        built = reg.resolve("openai:gpt-4.1-mini", None)[0]
        assert isinstance(built, OpenAIProvider)
    assert reg.resolve("openai:gpt-4.1-mini", None)[0] is not built  # rebuilt after close
    assert reg.resolve("s:x", None)[0] is scripted


@given(
    provider=st.sampled_from(["openai", "anthropic"]),
    name=st.text(st.characters(codec="utf-8"), min_size=1, max_size=30),
)
def test_any_model_name_round_trips(provider: str, name: str) -> None:
    reg = registry()
    got, model = reg.resolve(f"{provider}:{name}", None)
    assert (got.name, model) == (provider, name)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "ptcflow.toml",
            '[aliasses]\nfast = "openai:x"\n',
            "unknown key 'aliasses' at the top level; did you mean 'aliases'? "
            "Valid keys there: aliases, default_model, providers",
        ),
        (
            "ptcflow.toml",
            '[providers.ollama]\nkind = "openai-compatible"\nbase_ulr = "http://x/v1"\n',
            "unknown key 'base_ulr' in [providers.ollama]; did you mean 'base_url'? "
            "Valid keys there: api_key_env, base_url, headers, kind, timeout",
        ),
        (
            "ptcflow.toml",
            '[providers.ollama]\nkind = "openai-compatable"\n',
            "[providers.ollama] has kind = 'openai-compatable'; did you mean 'openai-compatible'?",
        ),
        (
            "pyproject.toml",
            '[tool.ptcflow]\ndefault_modle = "fast"\n',
            "unknown key 'default_modle' in [tool.ptcflow]; did you mean 'default_model'?",
        ),
        (
            "pyproject.toml",
            '[tool.ptcflow.providers.x]\nkind = "openai"\ntimout = 3\n',
            "unknown key 'timout' in [tool.ptcflow.providers.x]; did you mean 'timeout'?",
        ),
    ],
)
def test_a_typo_names_the_file_the_key_and_the_nearest_valid_key(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        ModelRegistry.from_config(path, env=ENV)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
