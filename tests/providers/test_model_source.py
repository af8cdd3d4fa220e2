"""``ModelSource``: the run's model in one shape, whatever ``llm=`` was given."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.errors import ConfigError
from ptcflow.providers import LLMProvider, ModelRegistry, ModelResolver, ModelSource
from ptcflow.testing import ScriptedLLM


class Wrap:
    """A provider wrapper that remembers what it wraps."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner


def test_a_provider_answers_with_the_directive_model_then_alias_then_its_own() -> None:
    llm = ScriptedLLM(["hi"], model="own")
    source = ModelSource.of(llm)
    assert source is not None and source.given is llm and source.provider is llm
    assert source.resolve("m", "a") == (llm, "m")
    assert source.resolve(None, "a") == (llm, "a")
    assert source.resolve(None, None) == (llm, "own")
    assert not source.unnamed


def test_a_resolver_answers_with_what_it_resolves() -> None:
    llm = ScriptedLLM(["hi"])
    registry = ModelRegistry(providers={"scripted": llm}, aliases={"fast": "scripted:m1"})
    source = ModelSource.of(registry)
    assert source is not None and source.given is registry and source.provider is None
    assert source.resolve(None, "fast") == (llm, "m1")
    with pytest.raises(ConfigError):
        source.resolve("nowhere:x", None)


def test_of_is_idempotent_and_keeps_none() -> None:
    source = ModelSource.of(ScriptedLLM(["hi"]))
    assert ModelSource.of(source) is source
    assert ModelSource.of(None) is None


def test_a_source_is_a_model_resolver_and_no_provider() -> None:
    source = ModelSource.of(ScriptedLLM(["hi"]))
    assert isinstance(source, ModelResolver) and not isinstance(source, LLMProvider)


@pytest.mark.parametrize("shape", ["provider", "resolver"])
def test_one_wrapper_wraps_the_providers_of_either_shape(shape: str) -> None:
    llm = ScriptedLLM(["hi"], model="own")
    given: Any = llm
    if shape == "resolver":
        given = ModelRegistry(providers={"scripted": llm}, aliases={"own": "scripted:own"})
    source = ModelSource.of(given)
    assert source is not None
    wrapped = source.wrapped(Wrap).wrapped(Wrap)
    provider, name = wrapped.resolve(None, "own")
    assert isinstance(provider, Wrap) and isinstance(provider.inner, Wrap)
    assert provider.inner.inner is llm and name == "own"
    assert wrapped.given is given and source.resolve(None, "own") == (llm, "own")


def test_a_provider_built_without_a_model_is_unnamed_also_when_wrapped() -> None:
    class Bare:
        name, model = "openai", ""

    source = ModelSource.of(Bare())
    assert source is not None and source.unnamed and source.wrapped(Wrap).unnamed
