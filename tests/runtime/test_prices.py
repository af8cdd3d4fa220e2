"""Prices: the cost of each model call from its usage (cache reads and writes included),
your prices over genai-prices' table; an unknown model has an unknown cost, never zero."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, strategies as st

import ptcflow
from ptcflow import ModelPrice, PriceTable, UsageLimits
from ptcflow.errors import ConfigError
from ptcflow.runtime import Runtime, Step
from ptcflow.signals import Usage
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, Turn
from ptcflow.trace import Prices, summarize
from ptcflow.trace._mission import Mission

from .test_telemetry_genai import attrs, traced

pytestmark = pytest.mark.anyio

PRICE = ModelPrice(
    input_per_mtok=2.0, output_per_mtok=10.0, cache_read_per_mtok=0.5, cache_write_per_mtok=3.0
)
USAGE = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=400, cache_write_tokens=100)


def test_a_call_is_priced_with_its_cache_tokens() -> None:
    # 500 fresh * 2 + 400 read * 0.5 + 100 written * 3 + 100 out * 10, per million
    assert PRICE.cost(USAGE) == pytest.approx((1000 + 200 + 300 + 1000) / 1e6)
    plain = ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0)
    assert plain.cost(USAGE) == pytest.approx((2000 + 1000) / 1e6)  # cache at input price


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, True, "1"])
def test_a_price_must_be_a_number_at_least_zero(bad: Any) -> None:
    with pytest.raises(ConfigError, match=r"ModelPrice\.input_per_mtok must be a number"):
        ModelPrice(input_per_mtok=bad, output_per_mtok=1.0)


def test_a_table_entry_must_be_a_price() -> None:
    with pytest.raises(ConfigError, match=r"prices\['m'\] must be a ModelPrice"):
        PriceTable({"m": 3})  # type: ignore[dict-item]
    assert PriceTable({"m": {"input_per_mtok": 1, "output_per_mtok": 2}}).cost(
        "m", Usage(output_tokens=1_000_000)
    ) == pytest.approx(2.0)


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7))
def test_the_cost_grows_with_every_token(fresh: int, read: int, write: int, out: int) -> None:
    usage = Usage(
        input_tokens=fresh + read + write,
        output_tokens=out,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
    cost = PRICE.cost(usage)
    assert cost >= 0
    assert PRICE.cost(usage + Usage(output_tokens=1)) > cost


def test_your_price_wins_and_registry_prefixes_are_dropped() -> None:
    table = PriceTable({"gpt-4.1-mini": PRICE})
    assert table.cost("openai:gpt-4.1-mini", USAGE) == PRICE.cost(USAGE)


def test_the_catalogue_prices_known_models() -> None:
    genai_prices = pytest.importorskip("genai_prices")
    table = PriceTable()
    usage = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=500)
    expected = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=500),
        "gpt-4.1-mini",
        provider_id="openai",
    ).total_price
    assert table.cost("openai:gpt-4.1-mini", usage) == pytest.approx(float(expected))
    tiered = genai_prices.calc_price(genai_prices.Usage(**_raw(usage)), "claude-sonnet-4-5")
    assert table.cost("claude-sonnet-4-5", usage) == pytest.approx(float(tiered.total_price))
    assert table.cost("no-such-model-xyz", usage) is None
    assert PriceTable(catalogue=False).cost("gpt-4.1-mini", usage) is None


def _raw(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def _turns(n: int) -> list[Any]:
    call = Turn(tool_calls=(ScriptedLLM.tool_call("add", x=1, y=2),), usage=USAGE)
    return [call] * n + [Turn(text="done", usage=USAGE)]


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def _run(llm: Any, **options: Any) -> Step:
    async with Runtime(llm=llm, tools=[add], prices=options.pop("prices", None)) as rt:
        return await rt.run(ReAct(), "go", **options)


async def test_the_step_carries_the_cost() -> None:
    step = await _run(ScriptedLLM(_turns(2), model="mine"), prices={"mine": PRICE})
    assert step.ok and step.cost_usd == pytest.approx(3 * PRICE.cost(USAGE))
    assert step.unpriced_models == ()


async def test_an_unknown_model_has_an_unknown_cost() -> None:
    step = await _run(ScriptedLLM(_turns(1), model="mine"), prices={"other": PRICE})
    assert step.ok and step.cost_usd is None and step.unpriced_models == ("mine",)


async def test_runs_are_not_priced_unless_asked() -> None:
    # nothing looked up per response: not even a model genai-prices knows is priced
    for model in ("mine", "gpt-4.1-mini"):
        step = await _run(ScriptedLLM(_turns(1), model=model))
        assert step.ok and step.cost_usd is None and step.unpriced_models == ()


async def test_a_cost_budget_ends_the_run() -> None:
    llm = ScriptedLLM(_turns(5), model="mine")
    limits = UsageLimits(max_cost_usd=2.5 * PRICE.cost(USAGE))
    step = await _run(llm, prices={"mine": PRICE}, usage_limits=limits)
    assert not step.ok and step.error is not None
    assert step.error.type == "usage_limit_exceeded"
    assert step.error.details["budget"] == "max_cost_usd" and llm.calls == 3
    assert step.cost_usd == pytest.approx(3 * PRICE.cost(USAGE))


async def test_a_cost_budget_with_an_unpriced_model_is_a_defined_error() -> None:
    llm = ScriptedLLM(_turns(5), model="mine")
    step = await _run(llm, usage_limits=UsageLimits(max_cost_usd=1.0))
    assert not step.ok and step.error is not None and step.error.type == "price_unknown"
    assert "model 'mine' has no price" in step.error.message and llm.calls == 1


async def test_spans_carry_cache_tokens_and_cost() -> None:
    exporter, telemetry = traced()
    async with Runtime(
        llm=ScriptedLLM(_turns(0), model="mine"), telemetry=telemetry, prices={"mine": PRICE}
    ) as rt:
        await rt.run(ReAct(), "go")
    async with Runtime(
        llm=ScriptedLLM(_turns(0), model="other"), telemetry=telemetry, prices={"mine": PRICE}
    ) as rt:
        await rt.run(ReAct(), "go")
    spans = {s.name: attrs(s) for s in exporter.get_finished_spans()}
    chat = spans["chat mine"]
    runs = [a for n, a in spans.items() if n.startswith("invoke_agent")]
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 400
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert chat["ptcflow.cost_usd"] == pytest.approx(PRICE.cost(USAGE))
    assert spans["chat other"]["ptcflow.cost_unknown"] == "no price for other"
    assert "ptcflow.cost_usd" not in spans["chat other"]
    assert runs and all("ptcflow.cost_unknown" in a or "ptcflow.cost_usd" in a for a in runs)


async def test_the_trace_summary_prices_cache_tokens() -> None:
    llm = ScriptedLLM(_turns(1), model="gpt-4.1-mini")
    async with Runtime(llm=llm, tools=[add], prices=PriceTable()) as rt:
        step = await rt.run(ReAct(), "go", record=True)
    mission = Mission()
    for signal in step.signals:
        mission.add(signal)
    [row] = summarize(mission, Prices({"gpt-4.1-mini": {"input": 2.0, "output": 10.0}}))
    assert row.cost == pytest.approx(2 * (1000 * 2.0 + 100 * 10.0) / 1e6)
    pytest.importorskip("genai_prices")
    [row] = summarize(mission, Prices.default())
    assert row.cost == pytest.approx(step.cost_usd)
    assert ptcflow.PriceTable is PriceTable


class _Models:
    """A provider whose responses name the models of ``models`` in turn (one run may call
    several), with the usage of ``usages`` in turn (cache tokens or not)."""

    name = "models"
    model = "a"

    def __init__(self, models: list[str], usages: list[Usage]) -> None:
        self.inner = ScriptedLLM(_turns(len(models) - 1))
        self.models, self.usages = models, usages

    async def generate(self, request: Any) -> Any:
        response = await self.inner.generate(request)
        n = self.inner.calls - 1
        return msgspec.structs.replace(
            response, model=self.models[n], usage=self.usages[n % len(self.usages)]
        )


FLAT = Usage(input_tokens=1234, output_tokens=567)


async def test_a_run_on_several_models_is_priced_call_by_call() -> None:
    # every response priced with its own model's price, as ModelPrice.dollars prices it
    # (a run's model at its flat price without a call, the others looked up), to the bit
    b = ModelPrice(input_per_mtok=0.3, output_per_mtok=1.7, cache_read_per_mtok=0.03)
    table = PriceTable({"a": PRICE, "b": b}, catalogue=False)
    models = ["a", "a", "b", "a", "b", "b"]
    usages = [FLAT, USAGE, Usage(input_tokens=7, output_tokens=3)]
    prices = {"a": PRICE, "b": b}
    expected = before_last = 0.0
    for i, m in enumerate(models):
        before_last = expected
        expected += prices[m].dollars(usages[i % len(usages)])
    for _ in range(2):  # the second run starts from the table's last flat price: b
        step = await _run(_Models(models, usages), prices=table)
        assert step.ok and step.cost_usd == round(expected, 12)
    budget = UsageLimits(max_cost_usd=(before_last + expected) / 2)  # passed by the last call
    llm = _Models(models, usages)
    step = await _run(llm, prices=table, usage_limits=budget)
    assert step.error is not None and step.error.details["budget"] == "max_cost_usd"
    assert llm.inner.calls == len(models)
    assert step.cost_usd == round(expected, 12)


async def test_a_run_that_also_calls_an_unpriced_model_has_an_unknown_cost() -> None:
    table = PriceTable({"a": PRICE}, catalogue=False)
    step = await _run(_Models(["a", "x", "a"], [FLAT]), prices=table)
    assert step.ok and step.cost_usd is None and step.unpriced_models == ("x",)
    step = await _run(_Models(["a", "a"], [FLAT]), prices=table)
    assert step.ok and step.cost_usd == round(2 * PRICE.dollars(FLAT), 12)


@pytest.mark.parametrize(
    ("budget", "calls"),
    [("max_total_tokens", 3), ("max_input_tokens", 2), ("max_output_tokens", 4)],
)
async def test_token_budgets_of_a_priced_run_stop_at_the_call_that_passes_them(
    budget: str, calls: int
) -> None:
    # a priced run counts each response where it prices it: the budget stops the run at
    # the response that passes it, as an unpriced run's does
    per_call = {
        "max_total_tokens": FLAT.input_tokens + FLAT.output_tokens,
        "max_input_tokens": FLAT.input_tokens,
        "max_output_tokens": FLAT.output_tokens,
    }[budget]
    limits = msgspec.structs.replace(
        UsageLimits(max_cost_usd=1e6), **{budget: per_call * calls - 1}
    )
    table = PriceTable({"a": PRICE}, catalogue=False)
    llm = _Models(["a"] * 6, [FLAT])
    step = await _run(llm, prices=table, usage_limits=limits)
    assert step.error is not None and step.error.type == "usage_limit_exceeded"
    assert step.error.details == {
        "budget": budget,
        "used": per_call * calls,
        "allowed": per_call * calls - 1,
    }
    assert llm.inner.calls == calls
    assert step.cost_usd == round(sum(PRICE.dollars(FLAT) for _ in range(calls)), 12)
