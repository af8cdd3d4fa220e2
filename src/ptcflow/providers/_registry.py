"""The model registry: model strings, aliases, provider settings and where keys come from.

A model string is ``provider:model`` (``openai:gpt-4.1-mini``,
``anthropic:claude-sonnet-4-5``, ``openai-compatible:llama3.2:3b``); the model part may
itself contain colons. Aliases (``fast``, ``smart``) name model strings, in code or in a
config file. API keys come from environment variables only, never from config files.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ptcflow.errors import ConfigError
from ptcflow.providers._protocol import LLMProvider
from ptcflow.signals import Secrets, secrets_of_headers, secrets_of_url

from ._anthropic import AnthropicProvider
from ._client import AsyncClosing
from ._openai import OpenAIProvider

__all__ = ("ModelRegistry", "ProviderConfig")

ProviderKind = Literal["openai", "anthropic", "openai-compatible"]
_KINDS: tuple[str, ...] = ("openai", "anthropic", "openai-compatible")


class ProviderConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How to build one provider (the ``[providers.NAME]`` table of a config file).

    Attributes:
        kind: the wire protocol: ``openai``, ``anthropic`` or ``openai-compatible``.
        base_url: the API root; required for ``openai-compatible``.
        api_key_env: the environment variable holding the key. ``openai`` and
            ``anthropic`` need one (defaults ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``);
            ``openai-compatible`` servers may need none.
        timeout: seconds before the SDK gives up on a response.
        headers: extra HTTP headers sent with every request.

    Example:
        >>> ProviderConfig(kind="openai-compatible", base_url="http://localhost:11434/v1")
        ProviderConfig(kind='openai-compatible', base_url='http://localhost:11434/v1', api_key_env=None, timeout=120.0, headers={})
    """

    kind: ProviderKind
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float = 120.0
    headers: dict[str, str] = {}


class _FileConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    default_model: str | None = None
    aliases: dict[str, str] = {}
    providers: dict[str, dict[str, Any]] = {}


_DEFAULT_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def _builtin(env: Mapping[str, str]) -> dict[str, ProviderConfig]:
    return {
        "openai": ProviderConfig(kind="openai", base_url=env.get("OPENAI_BASE_URL")),
        "anthropic": ProviderConfig(kind="anthropic", base_url=env.get("ANTHROPIC_BASE_URL")),
        "openai-compatible": ProviderConfig(
            kind="openai-compatible",
            base_url=env.get("PTCFLOW_OPENAI_COMPATIBLE_BASE_URL"),
            api_key_env="PTCFLOW_OPENAI_COMPATIBLE_API_KEY",
        ),
    }


class ModelRegistry(AsyncClosing):
    """Resolve ``model`` / ``model_alias`` to a provider and a model name (a ``ModelResolver``).

    Pass it as ``Runtime(llm=registry)``. Providers are built on first use, one per
    provider name, and closed by :meth:`aclose` (or ``async with registry``).

    Args:
        aliases: alias name -> model string (or another alias).
        default: the model used when a directive names none (a model string or alias).
        providers: extra or replacement providers by name: a :class:`ProviderConfig`, or a
            ready :class:`~ptcflow.runtime.LLMProvider` instance (used as is).
        env: where API keys and ``*_BASE_URL`` defaults are read (default ``os.environ``).

    Raises:
        ConfigError: for an alias that names itself in a cycle or a default that does not
            resolve (checked at once, before any call).

    Example:
        >>> reg = ModelRegistry(aliases={"fast": "openai:gpt-4.1-mini"}, env={"OPENAI_API_KEY": "sk-x"})
        >>> provider, model = reg.resolve(None, "fast")
        >>> provider.name, model
        ('openai', 'gpt-4.1-mini')
    """

    def __init__(
        self,
        *,
        aliases: Mapping[str, str] | None = None,
        default: str | None = None,
        providers: Mapping[str, ProviderConfig | LLMProvider] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._env = env
        self.aliases: dict[str, str] = dict(aliases or {})
        self.default = default
        self._configs: dict[str, ProviderConfig] = _builtin(self._environ())
        self._instances: dict[str, LLMProvider] = {}
        self._owned: list[Any] = []
        for name, item in (providers or {}).items():
            if isinstance(item, ProviderConfig):
                self._configs[name] = item
            elif isinstance(item, LLMProvider):
                self._instances[name] = item
            else:
                raise ConfigError(
                    f"providers[{name!r}] must be a ProviderConfig or an LLMProvider, "
                    f"got {type(item).__name__}"
                )
        for alias in self.aliases:
            self._expand(alias)  # cycles and dangling chains fail now
        if default is not None:
            self._split(self._expand(default))
        self.secrets = self._gather_secrets()
        """Every secret the providers of this registry are or will be built with (keys in
        the environment variables they read, secret headers, base URL credentials, and
        the ``secrets`` of provider instances given to it); decided once, here."""

    def _gather_secrets(self) -> Secrets:
        env = self._environ()
        found: list[str | None] = []
        for config in self._configs.values():
            key_env = config.api_key_env or _DEFAULT_KEYS.get(config.kind)
            if key_env:
                found.append(env.get(key_env))
            found += secrets_of_headers(config.headers)
            found += secrets_of_url(config.base_url)
        combined = Secrets(found)
        for instance in self._instances.values():
            own = getattr(instance, "secrets", None)
            if isinstance(own, Secrets):
                combined = combined | own
        return combined

    @classmethod
    def from_config(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        aliases: Mapping[str, str] | None = None,
        default: str | None = None,
        providers: Mapping[str, ProviderConfig | LLMProvider] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ModelRegistry:
        """Build a registry from ``ptcflow.toml`` or the ``[tool.ptcflow]`` table of
        ``pyproject.toml``.

        With no ``path``, the current directory and its parents are searched for either
        file (the nearest wins; a ``pyproject.toml`` without the table is skipped).
        Arguments given here (``aliases``, ``default``, ``providers``, ``env``) win over
        the file's. Reads a file; no network I/O.

        Raises:
            ConfigError: the file is not valid TOML, has an unknown key (the message names
                the file, the table, the key and the nearest valid key) or an unknown
                provider kind, or holds an API key.
        """
        from ._config_file import check_keys, find_config, read_config, table_name

        location = find_config() if path is None else os.fspath(path)
        table = read_config(location) if location is not None else {}
        check_keys(table, _FileConfig.__struct_fields__, location=location)
        try:
            parsed = msgspec.convert(table, _FileConfig)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"{location}: invalid ptcflow model config: {exc}") from None
        configs: dict[str, ProviderConfig | LLMProvider] = {}
        for name, raw in parsed.providers.items():
            where = table_name(location, f"providers.{name}")
            if "api_key" in raw:
                raise ConfigError(
                    f"{location}: {where} sets api_key; never store keys in files. "
                    f'Set api_key_env = "NAME" there and export NAME instead.'
                )
            check_keys(
                raw, ProviderConfig.__struct_fields__, location=location, table=f"providers.{name}"
            )
            kind = raw.get("kind")
            if isinstance(kind, str) and kind not in _KINDS:
                hint = difflib.get_close_matches(kind, _KINDS, n=1)
                did = f" did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(
                    f"{location}: {where} has kind = {kind!r};{did} "
                    f"kind is one of: {', '.join(_KINDS)}"
                )
            try:
                configs[name] = msgspec.convert(raw, ProviderConfig)
            except msgspec.ValidationError as exc:
                detail = str(exc).replace("`$.", f"`providers.{name}.")
                raise ConfigError(f"{location}: invalid {where} table: {detail}") from None
        return cls(
            aliases={**parsed.aliases, **(aliases or {})},
            default=default if default is not None else parsed.default_model,
            providers={**configs, **(providers or {})},
            env=env,
        )

    def __repr__(self) -> str:
        return f"ModelRegistry(aliases={sorted(self.aliases)}, default={self.default!r})"

    def _environ(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    def _expand(self, name: str) -> str:
        seen: list[str] = []
        while name in self.aliases:
            if name in seen:
                chain = " -> ".join([*seen, name])
                raise ConfigError(f"model alias cycle: {chain}; make one of them a model string")
            seen.append(name)
            name = self.aliases[name]
        return name

    def _split(self, model: str) -> tuple[str, str]:
        provider, sep, name = model.partition(":")
        if not sep or not provider or not name:
            raise ConfigError(
                f"model {model!r} is neither an alias nor a 'provider:model' string; "
                f"write e.g. 'openai:{model or 'gpt-4.1-mini'}' or define the alias "
                f"(known aliases: {', '.join(sorted(self.aliases)) or 'none'})"
            )
        if provider not in self._configs and provider not in self._instances:
            known = sorted({*self._configs, *self._instances})
            hint = difflib.get_close_matches(provider, known, n=1)
            did = f"did you mean {hint[0]!r}? " if hint else ""
            raise ConfigError(
                f"unknown model provider {provider!r} in {model!r}; {did}known providers: "
                f"{', '.join(known)}. Add one with providers={{{provider!r}: ProviderConfig(...)}} "
                f"or a [providers.{provider}] table in ptcflow.toml"
            )
        return provider, name

    def model_for(self, model: str | None = None, alias: str | None = None) -> str:
        """Return the ``provider:model`` string that ``model`` / ``alias`` resolve to.

        Raises:
            ConfigError: unknown alias (with a "did you mean"), no model at all, or a
                model string without a known provider.
        """
        if alias is not None:
            if alias not in self.aliases:
                hint = difflib.get_close_matches(alias, list(self.aliases), n=1)
                did = f"did you mean {hint[0]!r}? " if hint else ""
                raise ConfigError(
                    f"unknown model alias {alias!r}; {did}known aliases: "
                    f"{', '.join(sorted(self.aliases)) or 'none'}. Define it with "
                    "ModelRegistry(aliases={...}) or in the [aliases] table of ptcflow.toml"
                )
            return self._expand(alias)
        if model:
            return self._expand(model)
        if self.default is None:
            raise ConfigError(
                "no model given and the registry has no default; set model= / model_alias= "
                "on the directive, or ModelRegistry(default='openai:gpt-4.1-mini')"
            )
        return self._expand(self.default)

    def resolve(self, model: str | None, alias: str | None) -> tuple[LLMProvider, str]:
        """Return the provider and the model name for a directive's ``model`` / ``model_alias``.

        Builds the provider on first use (no network). Raises :class:`ConfigError` for an
        unknown alias or provider, or a missing API key or base URL.
        """
        provider_name, model_name = self._split(self.model_for(model, alias))
        return self.provider(provider_name), model_name

    def check(self) -> None:
        """Resolve every alias and the default now, so configuration errors (unknown
        providers, missing keys or base URLs) surface before any model call."""
        for alias in sorted(self.aliases):
            self.resolve(None, alias)
        if self.default is not None:
            self.resolve(self.default, None)

    async def connect(self) -> None:
        """Run :meth:`check`, then connect every provider built so far (each imports its
        SDK and builds its client in a worker thread: no network I/O).

        Call it once at startup so that configuration errors surface at once and the first
        model call does not pay for importing an SDK.
        """
        self.check()
        for provider in list(self._instances.values()):
            connect = getattr(provider, "connect", None)
            if connect is not None:
                await connect()

    def provider(self, name: str) -> LLMProvider:
        """Return the provider registered as ``name``, building it on first use."""
        existing = self._instances.get(name)
        if existing is not None:
            return existing
        config = self._configs.get(name)
        if config is None:
            raise ConfigError(f"unknown model provider {name!r}")
        built = self._build(name, config)
        self._instances[name] = built
        self._owned.append(built)
        return built

    def _build(self, name: str, config: ProviderConfig) -> LLMProvider:
        env = self._environ()
        key_env = config.api_key_env or _DEFAULT_KEYS.get(config.kind)
        key = env.get(key_env) if key_env else None
        if config.kind in ("openai", "anthropic") and not key:
            raise ConfigError(
                f"provider {name!r} needs an API key: export {key_env}=... "
                f"(or set api_key_env for [providers.{name}] to the variable that holds it)"
            )
        if config.kind == "openai-compatible" and not config.base_url:
            raise ConfigError(
                f"provider {name!r} is openai-compatible but has no base_url; set it in "
                f'[providers.{name}] (e.g. base_url = "http://localhost:11434/v1" for Ollama)'
                + (
                    " or export PTCFLOW_OPENAI_COMPATIBLE_BASE_URL"
                    if name == "openai-compatible"
                    else ""
                )
            )
        common: dict[str, Any] = {
            "api_key": key or "",
            "base_url": config.base_url,
            "name": name,
            "timeout": config.timeout,
            "default_headers": config.headers,
        }
        if config.kind == "anthropic":
            return AnthropicProvider(**common)
        return OpenAIProvider(**common)

    async def aclose(self) -> None:
        """Close the providers this registry built (not the instances it was given)."""
        owned, self._owned = self._owned, []
        for provider in owned:
            self._instances.pop(provider.name, None)
            await provider.aclose()
