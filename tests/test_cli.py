"""``ptcflow demo``: runs offline, prints the live signals and the right answer."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.cli import main
from ptcflow.demo import (
    CUSTOMERS,
    convert_currency,
    demo_agent,
    demo_model,
    demo_tools,
    load_orders,
    question_for,
    render_signal,
    run_demo,
    run_mission,
    search_orders,
    total,
)
from ptcflow.runtime import Runtime
from ptcflow.signals import Err, ErrorEnvelope, Ok, Signal, ToolResultData


def expected_total(customer: str) -> float:
    rates = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "JPY": 162.0}
    amounts: list[float] = [
        round(o["amount"] / rates[o["currency"]], 2)
        for o in load_orders()
        if o["customer"] == customer and o["status"] == "delivered"
    ]
    return round(sum(amounts), 2)


def test_demo_prints_live_signals_answer_and_throughput(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--agents", "30", "--latency-ms", "0"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("ptcflow demo, part 1: a SubAgent")
    assert "┌─ Turn 3 " in out and "│ Error: tool_error" in out  # the mistake, then the fix
    assert "Answer: Paris (21 delivered orders;" in out
    kinds = [line.split()[1] for line in lines if line.startswith("  #")]
    assert kinds[0] == "ai.request.started" and kinds[-1] == "ai.request.completed"
    assert kinds.index("ai.tool.started") < kinds.index("ai.tool.result")
    assert kinds.count("ai.llm.response") == 4
    answer = f"Answer: Alice spent €{expected_total('Alice'):,.2f} on delivered orders"
    assert any(line.startswith(answer) for line in lines), out
    assert "30/30 completed" in out and "runs/s" in out


def test_demo_rejects_negative_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--agents", "-1"])
    assert "must be >= 0" in capsys.readouterr().err


@pytest.mark.anyio
@pytest.mark.parametrize("customer", CUSTOMERS)
async def test_every_customer_gets_the_right_total(customer: str) -> None:
    async with Runtime(llm=demo_model(), tools=demo_tools()) as rt:
        step = await rt.run(demo_agent(), question_for(customer))
    assert step.ok, step.error
    assert f"€{expected_total(customer):,.2f}" in step.value


@pytest.mark.anyio
async def test_the_mission_recovers_from_its_mistake_and_answers_right() -> None:
    rates = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "JPY": 162.0}
    expected: dict[str, float] = {}
    for o in load_orders():
        if o["status"] == "delivered":
            eur = (
                o["amount"]
                if o["currency"] == "EUR"
                else round(o["amount"] / rates[o["currency"]], 2)
            )
            expected[o["city"]] = expected.get(o["city"], 0.0) + eur
    lines: list[str] = []
    step = await run_mission(out=lines.append)
    assert step.ok and step.turns == 3 and step.trace is not None
    assert step.value["revenue"] == {c: round(v, 2) for c, v in expected.items()}
    assert step.value["top_city"] == max(expected, key=lambda c: expected[c])
    second = step.trace.turns[1].execution
    assert (
        second.error is not None and "from_currency: missing required field" in second.error.message
    )
    third = step.trace.turns[2].execution.tool_calls
    assert len(third) == sum(
        1 for o in load_orders() if o["status"] == "delivered" and o["currency"] != "EUR"
    )


@pytest.mark.anyio
async def test_run_demo_reports_counts_without_the_concurrent_part() -> None:
    lines: list[str] = []
    report = await run_demo(agents=0, latency_ms=0, customer="Chen", out=lines.append)
    assert report.agents == 0 and "Chen spent" in report.answer and report.mission_ok
    assert any("ai.request.completed" in line for line in lines)


@pytest.mark.anyio
async def test_the_model_admits_a_failed_tool() -> None:
    def broken_total(values: list[float]) -> float:
        """Add up amounts (broken)."""
        raise RuntimeError("disk on fire")

    tools = {
        "search_orders": search_orders,
        "convert_currency": convert_currency,
        "total": broken_total,
    }
    async with Runtime(llm=demo_model(), tools=tools) as rt:
        step = await rt.run(demo_agent(), question_for("Alice"))
    assert step.ok and "could not finish" in step.value


def test_tools_work_as_plain_functions() -> None:
    alice = search_orders(customer="alice", status="delivered")
    assert alice and all(o["status"] == "delivered" for o in alice)
    assert search_orders(city="Osaka") and not search_orders(customer="Nobody")
    assert convert_currency(108.0, "USD") == 100.0
    assert convert_currency(100.0, "EUR", "GBP") == 85.0
    with pytest.raises(ValueError, match="no rate for 'XYZ'"):
        convert_currency(1.0, "XYZ")
    assert total([0.1, 0.2]) == 0.3


def test_render_signal_lines() -> None:
    ok = Signal.create(
        "ai.tool.result",
        ToolResultData(tool_name="t", result=Ok(payload=[1, 2]), duration_ms=1.25),
        run_id="r",
        call_id="c1",
        seq=7,
    )
    assert render_signal(ok) == "  #7   ai.tool.result        c1          ok [2 items] (1.2 ms)"
    err = Signal.create(
        "ai.tool.result",
        ToolResultData(tool_name="t", result=Err(error=ErrorEnvelope.make("timeout", "slow"))),
        seq=8,
    )
    assert render_signal(err).endswith("error timeout: slow")
    long = Signal.create("x.custom", "y" * 500, seq=9)
    assert render_signal(long, width=20).endswith("y…")
    assert len(render_signal(long, width=20)) == len(render_signal(long, width=30)) - 10


def test_demo_on_a_real_model_without_its_key_fails_before_any_call(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no ptcflow.toml / pyproject.toml config to pick up
    assert main(["demo", "--model", "openai:gpt-4.1-mini"]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err


def test_demo_on_an_unknown_alias_names_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--model", "no-such-alias"]) == 2
    assert "no-such-alias" in capsys.readouterr().err


def test_agents_given_as_option_equals_value_is_honoured(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--agents=3", "--latency-ms=0"]) == 0
    assert "3/3 completed" in capsys.readouterr().out
