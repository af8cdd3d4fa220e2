"""Prices of models, and the per-agent summary of a mission (runs, turns, tokens, time, cost)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from ptcflow.errors import UsageError
from ptcflow.providers import PriceTable
from ptcflow.signals import Usage
from ptcflow.trace._mission import Mission
from ptcflow.trace._node import Node

__all__ = ("AgentSummary", "Prices", "summarize")


class Prices:
    """What models cost, in US dollars per million tokens, to put a cost on a mission.

    Args:
        table: ``{model: {"input": usd_per_million, "output": usd_per_million}}``. A model
            is looked up by its exact name, then without a ``provider:`` prefix, so
            ``"gpt-4.1-mini"`` prices calls reported as ``openai:gpt-4.1-mini`` too.
        catalogue: where a model missing from ``table`` is priced (a
            :class:`~ptcflow.providers.PriceTable`: genai-prices' table with the
            ``prices`` extra, cache reads and writes at their own prices); ``None``: only
            ``table``. :meth:`default` is the catalogue alone.

    Raises:
        UsageError: a price is missing, negative or not a number.

    Example:
        >>> prices = Prices({"gpt-4.1-mini": {"input": 0.4, "output": 1.6}})
        >>> prices.cost("openai:gpt-4.1-mini", 1_000_000, 500_000)
        1.2
        >>> prices.cost("unknown", 10, 10) is None
        True
    """

    __slots__ = ("catalogue", "table")

    def __init__(
        self, table: Mapping[str, Mapping[str, float]], catalogue: PriceTable | None = None
    ) -> None:
        self.catalogue = catalogue
        checked: dict[str, tuple[float, float]] = {}
        for model, price in table.items():
            try:
                pair = (float(price["input"]), float(price["output"]))
            except (KeyError, TypeError, ValueError):
                raise UsageError(
                    f"prices: {model!r} needs numbers 'input' and 'output' (US dollars per "
                    f"million tokens), got {price!r}"
                ) from None
            if min(pair) < 0:
                raise UsageError(f"prices: {model!r} has a negative price {price!r}")
            checked[model] = pair
        self.table = checked

    def __repr__(self) -> str:
        return f"Prices({len(self.table)} models)"

    def __bool__(self) -> bool:
        return bool(self.table) or self.catalogue is not None

    @classmethod
    def default(cls) -> Prices:
        """No table of your own: genai-prices' (when installed) prices what it knows."""
        return cls({}, PriceTable())

    @classmethod
    def load(cls, path: str | Path) -> Prices:
        """Read prices from a TOML file (a ``[prices]`` table, or the file itself) or JSON.

        TOML: ``[prices."gpt-4.1-mini"]`` with ``input = 0.4`` and ``output = 1.6``.

        Raises:
            UsageError: the file cannot be read or holds no valid prices.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            data: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read prices from {path}: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("prices"), dict):
            data = data["prices"]
        if not isinstance(data, dict):
            raise UsageError(f"{path}: prices must be a table of models")
        return cls(data)

    def of(self, model: str) -> tuple[float, float] | None:
        """``(input, output)`` dollars per million tokens of ``model``, if priced."""
        found = self.table.get(model)
        if found is None and ":" in model:
            found = self.table.get(model.split(":", 1)[1])
        return found

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        """Dollars for the tokens of one model call (``None`` when the model has no price).

        ``table``'s prices count cache reads and writes as input tokens; the
        catalogue's price them as the provider does."""
        price = self.of(model)
        if price is None:
            if self.catalogue is None:
                return None
            usage = Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_tokens=cache_read_tokens,
                cache_write_tokens=cache_write_tokens,
            )
            return self.catalogue.cost(model, usage)
        return round((input_tokens * price[0] + output_tokens * price[1]) / 1e6, 9)

    def to_json(self) -> dict[str, dict[str, float]]:
        """The table as JSON data (what the page computes costs with)."""
        return {m: {"input": p[0], "output": p[1]} for m, p in self.table.items()}


class AgentSummary(msgspec.Struct, kw_only=True):
    """What the runs of one agent took, summed over the mission.

    Attributes:
        agent: the agent's name.
        runs: how many runs it made; ``ok``, ``failed``, ``running`` and ``paused``
            (waiting for a person's decision) of them.
        turns: model turns over all its runs.
        input_tokens: tokens read by its model calls; ``output_tokens`` written.
        duration_ms: wall time of its runs, summed (runs may overlap).
        cost: dollars, when every model it called has a price (else ``None``).
    """

    agent: str
    runs: int = 0
    ok: int = 0
    failed: int = 0
    running: int = 0
    paused: int = 0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: float = 0.0
    cost: float | None = None


def summarize(mission: Mission, prices: Prices | None = None) -> list[AgentSummary]:
    """One :class:`AgentSummary` per agent, in order of first appearance.

    Example:
        >>> summarize(Mission())
        []
    """
    out: dict[str, AgentSummary] = {}
    priced: dict[str, bool] = {}
    for run in mission.runs():
        row = out.setdefault(run.name, AgentSummary(agent=run.name, cost=0.0))
        row.runs += 1
        if run.status == "ok":
            row.ok += 1
        elif run.status == "running":
            row.running += 1
        elif run.status == "paused":
            row.paused += 1
        else:
            row.failed += 1
        end = run.end_ms if run.end_ms is not None else (mission.last_ms or run.start_ms)
        row.duration_ms += max(0.0, end - run.start_ms)
        for turn in _own(mission, run, "turn"):
            row.turns += 1
            for call in _own(mission, turn, "llm"):
                row.input_tokens += call.input_tokens
                row.output_tokens += call.output_tokens
                cost = (
                    prices.cost(
                        call.model,
                        call.input_tokens,
                        call.output_tokens,
                        call.cache_read_tokens,
                        call.cache_write_tokens,
                    )
                    if prices
                    else None
                )
                if cost is None:
                    priced[run.name] = False
                elif row.cost is not None:
                    row.cost += cost
    for name, row in out.items():
        if not prices or priced.get(name) is False:
            row.cost = None
    return list(out.values())


def _own(mission: Mission, node: Node, kind: str) -> list[Node]:
    return [mission.nodes[c] for c in node.children if mission.nodes[c].kind == kind]
