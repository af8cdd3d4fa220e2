"""The demo's tools: plain Python functions over the order data shipped in the package."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ("convert_currency", "load_orders", "load_rates", "search_orders", "total")


@cache
def load_orders() -> tuple[dict[str, Any], ...]:
    """Return the demo orders (``ptcflow/data/orders.json``), read once."""
    text = resources.files("ptcflow").joinpath("data/orders.json").read_text("utf-8")
    return tuple(json.loads(text)["orders"])


@cache
def load_rates() -> dict[str, float]:
    """Return the demo exchange rates per euro (``ptcflow/data/rates.json``), read once."""
    text = resources.files("ptcflow").joinpath("data/rates.json").read_text("utf-8")
    return {k: float(v) for k, v in json.loads(text)["rates"].items()}


def search_orders(
    customer: str | None = None, status: str | None = None, city: str | None = None
) -> list[dict[str, Any]]:
    """Find orders by customer, status and city (all optional, case-insensitive).

    Args:
        customer: the customer's first name, e.g. "Alice".
        status: "delivered", "shipped" or "cancelled".
        city: the delivery city.

    Returns:
        The matching orders: id, item, amount, currency, status, city, date.
    """
    out = []
    for order in load_orders():
        if customer and order["customer"].lower() != customer.lower():
            continue
        if status and order["status"] != status.lower():
            continue
        if city and order["city"].lower() != city.lower():
            continue
        out.append(
            {k: order[k] for k in ("id", "item", "amount", "currency", "status", "city", "date")}
        )
    return out


def convert_currency(amount: float, from_currency: str, to_currency: str = "EUR") -> float:
    """Convert an amount between currencies at the demo's fixed rates.

    Args:
        amount: the amount to convert.
        from_currency: ISO code of the amount's currency (EUR, USD, GBP, JPY, CHF).
        to_currency: ISO code to convert to.

    Returns:
        The converted amount, rounded to cents.

    Raises:
        ValueError: for a currency the demo has no rate for.
    """
    rates = load_rates()
    for code in (from_currency, to_currency):
        if code.upper() not in rates:
            raise ValueError(f"no rate for {code!r}; known: {', '.join(sorted(rates))}")
    return round(amount / rates[from_currency.upper()] * rates[to_currency.upper()], 2)


def total(values: list[float]) -> float:
    """Add up amounts.

    Args:
        values: the amounts to add.

    Returns:
        The sum, rounded to cents.
    """
    return round(sum(values), 2)
