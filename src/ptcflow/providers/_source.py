"""The model of a run in one shape: :class:`ModelSource`.

``llm=`` takes a provider (``generate`` / ``stream`` / ``embed``) or a model resolver (a
registry: ``resolve(model, alias) -> (provider, name)``); a SubAgent's ``llm=`` also takes a
model name or a plain function, which the agent turns into one of these two. The edge
(``Runtime(...)``, ``rt.run(...)``, an agent planning its run, a worker's ``ActivityHost``)
normalises it once with :meth:`ModelSource.of`; everything downstream holds a
:class:`ModelSource` and calls :meth:`ModelSource.resolve`, never asking which shape it was
given. A wrapper of model calls (a retry filter, a mission's turn budget) wraps providers
and is applied to a source with :meth:`ModelSource.wrapped`, whatever the source's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

from ptcflow.providers._protocol import LLMProvider, ModelResolver

__all__ = ("ModelSource", "is_resolver")


def is_resolver(llm: Any) -> TypeGuard[ModelResolver]:
    """True when ``llm`` is a model resolver rather than a provider (an object with both
    ``resolve`` and the provider methods is a provider).

    Example:
        >>> from ptcflow.testing import ScriptedLLM
        >>> is_resolver(ScriptedLLM(["hi"]))
        False
    """
    return isinstance(llm, ModelResolver) and not isinstance(llm, LLMProvider)


class ModelSource:
    """Where a run's model calls go: ``resolve(model, alias) -> (provider, model name)``.

    Built once at the edge with :meth:`of`, from a provider or a model resolver. For a
    provider, ``resolve`` returns it with the directive's ``model`` (else its
    ``model_alias``, else the provider's own ``model``); for a resolver, what the resolver
    returns. A source is itself a :class:`~ptcflow.runtime.ModelResolver`.

    Attributes:
        given: the provider or resolver it was built from (before any wrapper).
        unnamed: True for a provider built without a model name (its ``model`` is
            ``""``): a run on it needs the strategy to name the model.

    Example:
        >>> from ptcflow.testing import ScriptedLLM
        >>> llm = ScriptedLLM(["hi"])
        >>> source = ModelSource.of(llm)
        >>> source.resolve("gpt-4.1-mini", None) == (llm, "gpt-4.1-mini")
        True
        >>> ModelSource.of(source) is source, ModelSource.of(None)
        (True, None)
    """

    __slots__ = ("_default", "_provider", "_resolver", "_wraps", "given", "unnamed")

    def __init__(
        self,
        given: Any,
        *,
        provider: Any = None,
        resolver: ModelResolver | None = None,
        wraps: tuple[Callable[[Any], Any], ...] = (),
    ) -> None:
        self.given = given
        self._provider = provider
        self._resolver = resolver
        self._wraps = wraps
        self._default = "" if provider is None else str(getattr(provider, "model", "") or "")
        self.unnamed = provider is not None and getattr(given, "model", None) == ""

    @classmethod
    def of(cls, llm: Any) -> ModelSource | None:
        """The source of ``llm``: a provider, a model resolver, a source (returned as it
        is) or ``None`` (no model: ``None``). Anything that is not a resolver is taken for a
        provider, and fails when a call reaches it."""
        if llm is None or type(llm) is cls:
            return llm
        if is_resolver(llm):
            return cls(llm, resolver=llm)
        return cls(llm, provider=llm)

    @property
    def provider(self) -> Any:
        """The one provider of a source built from a provider (wrapped), else ``None``."""
        return self._provider

    def resolve(self, model: str | None, alias: str | None) -> tuple[LLMProvider, str]:
        """The provider to call and the model name to send it.

        Raises:
            ConfigError: the resolver knows no such model or alias.
        """
        provider = self._provider
        if provider is not None:
            return provider, model or alias or self._default
        assert self._resolver is not None
        provider, name = self._resolver.resolve(model, alias)
        for wrap in self._wraps:
            provider = wrap(provider)
        return provider, name

    def wrapped(self, wrap: Callable[[Any], Any]) -> ModelSource:
        """This source with every provider it resolves to wrapped by ``wrap`` (a provider
        in, a provider out: a retry filter, a turn budget). ``given`` stays the same."""
        if self._provider is not None:
            source = ModelSource(self.given, provider=wrap(self._provider))
            source._default, source.unnamed = self._default, self.unnamed
            return source
        return ModelSource(self.given, resolver=self._resolver, wraps=(*self._wraps, wrap))

    def __repr__(self) -> str:
        shown = self._provider if self._provider is not None else self.given
        return f"ModelSource({shown!r})"
