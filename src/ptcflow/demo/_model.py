"""The demo's scripted model: reads the conversation and plays a sensible analyst.

It is a function script for :class:`~ptcflow.testing.ScriptedLLM` (like pydantic-ai's
``FunctionModel``): it decides each answer from the request alone, so a thousand runs can
share one model concurrently. For "How much has Alice spent on delivered orders?" it
searches the orders, converts the foreign-currency ones in parallel, adds them up and
answers.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ptcflow.runtime import LLMRequest
from ptcflow.signals import Message, Usage
from ptcflow.testing import ScriptedLLM, ScriptItem, Turn

__all__ = ("analyst", "demo_model", "question_for")

_decode = msgspec.json.Decoder().decode
_WHO = re.compile(r"\bhas\s+([A-Z][a-z]+)\b")


def question_for(customer: str) -> str:
    """The demo question about one customer."""
    return f"How much has {customer} spent on delivered orders, in euros?"


def demo_model(*, latency: float = 0.0) -> ScriptedLLM:
    """Return a :class:`ScriptedLLM` answering with :func:`analyst`."""
    return ScriptedLLM(analyst, latency=latency, model="demo-analyst")


def analyst(request: LLMRequest) -> ScriptItem:
    """Decide the next answer from the conversation so far (a ScriptedLLM function)."""
    messages = request.messages
    start = max(i for i, m in enumerate(messages) if m.role == "user")
    turn = messages[start + 1 :]
    question = messages[start].content
    last_call = _last_assistant(turn)
    results = _results(turn)
    if any(not ok for ok, _ in results.values()):
        failed = next(name for name, (ok, _) in results.items() if not ok)
        return _say(f"I could not finish: the {failed} tool failed, so I have no reliable total.")
    if last_call is None:
        found = _WHO.search(question)
        if found is None:
            return _say("Which customer do you mean? Ask e.g. 'How much has Alice spent?'")
        return ScriptedLLM.tool_call("search_orders", customer=found.group(1), status="delivered")
    name = last_call.tool_calls[0].name
    if name == "search_orders":
        orders = results["search_orders"][1]
        if not orders:
            return _say("I found no delivered orders for that customer.")
        foreign = [o for o in orders if o["currency"] != "EUR"]
        if not foreign:
            return ScriptedLLM.tool_call("total", values=[o["amount"] for o in orders])
        return [
            ScriptedLLM.tool_call(
                "convert_currency", amount=o["amount"], from_currency=o["currency"]
            )
            for o in foreign
        ]
    if name == "convert_currency":
        orders = _search_result(messages)
        euros = [o["amount"] for o in orders if o["currency"] == "EUR"]
        converted = [_payload(m) for m in turn[-len(last_call.tool_calls) :]]
        return ScriptedLLM.tool_call("total", values=euros + converted)
    total = results["total"][1]
    orders = _search_result(messages)
    currencies = sorted({o["currency"] for o in orders} - {"EUR"})
    note = f" ({len(orders)} orders; converted from {', '.join(currencies)})" if currencies else ""
    who = _WHO.search(question)
    return _say(
        f"{who.group(1) if who else 'The customer'} spent €{total:,.2f} on delivered orders{note}."
    )


def _say(text: str) -> Turn:
    return Turn(text=text, usage=Usage(input_tokens=120, output_tokens=len(text) // 4 + 1))


def _last_assistant(turn: tuple[Message, ...]) -> Message | None:
    for message in reversed(turn):
        if message.role == "assistant" and message.tool_calls:
            return message
    return None


def _payload(message: Message) -> Any:
    body = _decode(message.content)
    return body.get("result") if body.get("ok") else None


def _results(turn: tuple[Message, ...]) -> dict[str, tuple[bool, Any]]:
    """The latest result of each tool in this request: name -> (ok, payload)."""
    out: dict[str, tuple[bool, Any]] = {}
    for message in turn:
        if message.role == "tool" and message.name:
            body = _decode(message.content)
            out[message.name] = (bool(body.get("ok")), body.get("result"))
    return out


def _search_result(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    for message in reversed(messages):
        if message.role == "tool" and message.name == "search_orders":
            result = _payload(message)
            return list(result) if isinstance(result, list) else []
    return []
