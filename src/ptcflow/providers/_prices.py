"""What a model call costs: :class:`ModelPrice` and :class:`PriceTable`.

A :class:`PriceTable` prices one model call from its :class:`~ptcflow.signals.Usage`
(input, output, cache read and cache write tokens). Its prices are the ones you give
(``{"my-model": ModelPrice(input_per_mtok=0.4, output_per_mtok=1.6)}``), then, with the
``prices`` extra installed (``pip install 'ptcflow[prices]'``), the maintained table of
`genai-prices <https://github.com/pydantic/genai-prices>`_. A model found in neither has
no price: its cost is unknown (``None``), never taken for zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from ptcflow.errors import ConfigError
from ptcflow.signals import Usage

__all__ = ("ModelPrice", "PriceTable")

_MTOK: Final = 1_000_000.0


class ModelPrice(msgspec.Struct, frozen=True, kw_only=True):
    """A model's prices, in US dollars per million tokens.

    Args:
        input_per_mtok: input tokens (the uncached part of the prompt).
        output_per_mtok: output tokens.
        cache_read_per_mtok: input tokens read from the provider's prompt cache
            (default: the input price).
        cache_write_per_mtok: input tokens written to the prompt cache (default: the
            input price).

    Raises:
        ConfigError: a price that is not a finite number >= 0.

    Example:
        >>> p = ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3)
        >>> p.cost(Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=500_000))
        3.15
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if value is None and field.startswith("cache"):
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigError(
                    f"ModelPrice.{field} must be a number of US dollars per million tokens "
                    f">= 0, got {value!r}"
                )

    def cost(self, usage: Usage) -> float:
        """US dollars of one call's ``usage`` (``input_tokens`` counts the cached ones),
        rounded to 12 decimals."""
        return round(self.dollars(usage), 12)

    def dollars(self, usage: Usage) -> float:
        """US dollars of one call's ``usage``, not rounded (sums of many calls are
        rounded once: :meth:`cost` rounds each)."""
        read, write = usage.cache_read_tokens, usage.cache_write_tokens
        price_in = self.input_per_mtok
        if not read and not write:  # the usual case (the same sum: the cache terms are 0)
            return (
                usage.input_tokens * price_in + usage.output_tokens * self.output_per_mtok
            ) / _MTOK
        fresh = max(usage.input_tokens - read - write, 0)
        dollars = (
            fresh * price_in
            + read * (price_in if self.cache_read_per_mtok is None else self.cache_read_per_mtok)
            + write * (price_in if self.cache_write_per_mtok is None else self.cache_write_per_mtok)
            + usage.output_tokens * self.output_per_mtok
        )
        return dollars / _MTOK


Cost = Callable[[Usage], float]


class PriceTable:
    """Prices model calls: your prices first, then genai-prices' table (when installed).

    A model is looked up by its exact name, then without a ``provider:`` prefix (as a
    registry names it: ``openai:gpt-4.1-mini``). Lookups are cached per model name.

    Args:
        prices: ``{model: ModelPrice}`` (a mapping ``{"input_per_mtok": ...,
            "output_per_mtok": ...}`` works too); they win over the catalogue.
        catalogue: look models up in genai-prices when it is installed (default True).

    Raises:
        ConfigError: a price that is not a :class:`ModelPrice` (or a mapping of one).

    Example:
        >>> table = PriceTable({"my-model": ModelPrice(input_per_mtok=1, output_per_mtok=2)},
        ...                    catalogue=False)
        >>> table.cost("openai:my-model", Usage(input_tokens=1000, output_tokens=1000))
        0.003
        >>> table.cost("unknown", Usage(input_tokens=1)) is None
        True
    """

    __slots__ = ("_found", "catalogue", "prices", "recent")

    def __init__(
        self,
        prices: Mapping[str, ModelPrice | Mapping[str, float]] | None = None,
        *,
        catalogue: bool = True,
    ) -> None:
        checked: dict[str, ModelPrice] = {}
        for model, price in (prices or {}).items():
            if isinstance(price, Mapping):
                try:
                    price = ModelPrice(**price)
                except TypeError as exc:
                    raise ConfigError(f"prices[{model!r}]: {exc}") from None
            if not isinstance(price, ModelPrice):
                raise ConfigError(
                    f"prices[{model!r}] must be a ModelPrice(input_per_mtok=..., "
                    f"output_per_mtok=...), got {type(price).__name__}"
                )
            checked[str(model)] = price
        self.prices = checked
        self.catalogue = catalogue
        self._found: dict[str, ModelPrice | Cost | None] = {}
        self.recent: tuple[str | None, float, float] = (None, 0.0, 0.0)
        """``(model, input_per_mtok, output_per_mtok)`` of the last flat price
        :meth:`flat` found (``(None, 0.0, 0.0)``: none yet): a run's cost record starts
        from it, so each response of a run on one model is priced with one multiply-add."""

    def __repr__(self) -> str:
        return f"PriceTable({len(self.prices)} models, catalogue={self.catalogue})"

    @classmethod
    def of(cls, value: Any) -> PriceTable:
        """A table from itself, a mapping of prices, or ``None`` (the catalogue only).

        Raises:
            ConfigError: anything else.
        """
        if value is None:
            return cls()
        if isinstance(value, PriceTable):
            return value
        if isinstance(value, Mapping):
            return cls(value)
        raise ConfigError(
            f"prices= takes a PriceTable or a mapping of model names to ModelPrice, got "
            f"{type(value).__name__}"
        )

    def cost(self, model: str, usage: Usage) -> float | None:
        """US dollars of one call of ``model``, rounded to 12 decimals (``None``: the
        model has no price)."""
        dollars = self.dollars(model, usage)
        return None if dollars is None else round(dollars, 12)

    def dollars(self, model: str, usage: Usage) -> float | None:
        """US dollars of one call of ``model``, not rounded (``None``: no price)."""
        found = self._found.get(model, _MISSING)
        if found is _MISSING:
            found = self._found[model] = self._lookup(model)
        if found is None:
            return None
        return found.dollars(usage) if type(found) is ModelPrice else found(usage)

    def flat(self, model: str) -> ModelPrice | None:
        """The price of ``model`` when it is one rate per token kind (yours, or the
        catalogue's without tiers): a call without cache tokens then costs
        ``(input_tokens * input_per_mtok + output_tokens * output_per_mtok) / 1e6``;
        ``None`` when the model has no price or a tiered one. Remembered in
        :attr:`recent`.

        Example:
            >>> table = PriceTable({"m": ModelPrice(input_per_mtok=1, output_per_mtok=2)},
            ...                    catalogue=False)
            >>> table.flat("m").output_per_mtok, table.recent
            (2, ('m', 1, 2))
        """
        found = self._found.get(model, _MISSING)
        if found is _MISSING:
            found = self._found[model] = self._lookup(model)
        if type(found) is not ModelPrice:
            return None
        self.recent = (model, found.input_per_mtok, found.output_per_mtok)
        return found

    def known(self, model: str) -> bool:
        """True when ``model`` has a price."""
        self.cost(model, Usage())
        return self._found.get(model) is not None

    def _lookup(self, model: str) -> ModelPrice | Cost | None:
        bare = model.split(":", 1)[1] if ":" in model else model
        own = self.prices.get(model) or self.prices.get(bare)
        if own is not None:
            return own
        if not self.catalogue or not model:
            return None
        provider = model.split(":", 1)[0] if ":" in model else None
        return _catalogue(bare, provider)


_MISSING: Final[Any] = object()


def _catalogue(model: str, provider: str | None) -> ModelPrice | Cost | None:
    """genai-prices' price of ``model`` (``None``: not installed, or no such model)."""
    try:
        import genai_prices
    except ImportError:
        return None
    probe = genai_prices.Usage(input_tokens=1, output_tokens=1)
    try:
        found = genai_prices.calc_price(probe, model, provider_id=provider)
    except LookupError:
        if provider is None:
            return None
        try:  # a registry's own provider name: let the model name find its provider
            found = genai_prices.calc_price(probe, model)
        except LookupError:
            return None
    price = found.model_price
    rates = [getattr(price, name, None) for name in _RATES]
    if all(r is None or type(r).__name__ == "Decimal" for r in rates) and rates[0] is not None:
        flat = ModelPrice(
            input_per_mtok=float(rates[0]),
            output_per_mtok=float(rates[1] or 0),
            cache_read_per_mtok=None if rates[2] is None else float(rates[2]),
            cache_write_per_mtok=None if rates[3] is None else float(rates[3]),
        )
        return flat

    def tiered(usage: Usage) -> float:  # prices by tier: genai-prices computes them
        calc = price.calc_price(
            genai_prices.Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
            )
        )
        return float(calc["total_price"])

    return tiered


_RATES: Final = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
