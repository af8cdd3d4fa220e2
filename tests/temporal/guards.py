"""Guards the Temporal guardrail tests run on workers (imported by path there:
module-level, stateless, deterministic)."""

from __future__ import annotations

from typing import Any

from ptcflow.runtime import GuardInfo, Rewrite, Trip


def no_add(value: Any, info: GuardInfo) -> Trip | None:
    """Trip on a call of ``add``."""
    return Trip(f"{info.tool} is not allowed") if value["tool"] == "add" else None


async def shout(value: Any, info: GuardInfo) -> Rewrite:
    """Rewrite the output in capitals (an async guard)."""
    return Rewrite(str(value).upper())


def no_secrets(value: Any, info: GuardInfo) -> Trip | None:
    """Trip on an input that mentions a secret."""
    return Trip("the input mentions a secret") if "secret" in str(value) else None


def double_x(value: Any, info: GuardInfo) -> Rewrite:
    """Rewrite a tool call's ``x`` to twice its value."""
    args = dict(value["arguments"])
    args["x"] = args["x"] * 2
    return Rewrite({"tool": value["tool"], "arguments": args})


def boom(value: Any, info: GuardInfo) -> None:
    """Raise (a guard that fails)."""
    raise RuntimeError("the guard broke")


def analysts_do_not_add(value: Any, info: GuardInfo) -> Trip | None:
    """Trip on the analysts' tool calls (the planner's pass)."""
    return Trip("analysts do not add") if info.agent == "analyst" else None
