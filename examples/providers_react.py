"""A ReAct agent with two tools on a real model, chosen with ``--model``.

    export OPENAI_API_KEY=sk-...           # or ANTHROPIC_API_KEY, or a local server:
    python examples/providers_react.py --model openai:gpt-4.1-mini
    python examples/providers_react.py --model anthropic:claude-sonnet-4-6 --stream
    PTCFLOW_OPENAI_COMPATIBLE_BASE_URL=http://localhost:11434/v1 \\
        python examples/providers_react.py --model openai-compatible:llama3.2

Without ``--model`` the default model of ``ptcflow.toml`` / ``[tool.ptcflow]`` is used. A
missing key or an unknown alias is reported before any call (exit code 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import anyio

from ptcflow.errors import ConfigError
from ptcflow.providers import ModelRegistry
from ptcflow.runtime import Runtime, Step
from ptcflow.signals import LLM_DELTA
from ptcflow.strategies import ReAct


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a * b


async def ask(question: str, *, model: str | None, stream: bool) -> Step:
    """Answer ``question`` with ReAct on ``model`` (a model string or an alias)."""
    async with ModelRegistry.from_config(default=model) as models:
        await models.connect()  # checks keys and aliases now, before any call
        async with Runtime(llm=models, tools=[add, multiply]) as rt:
            agent = ReAct(system_prompt="Use the tools for arithmetic. Be brief.", stream=stream)
            return await rt.run(agent, question, record=stream)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the agent, print the answer; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("question", nargs="?", default="What is 17 * 23 + 4?")
    parser.add_argument("--model", help="provider:model or an alias (default: from config)")
    parser.add_argument("--stream", action="store_true", help="stream the model's text")
    args = parser.parse_args(argv)
    try:
        step = anyio.run(lambda: ask(args.question, model=args.model, stream=args.stream))
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    if args.stream:
        deltas = [s.data.chunk.text for s in step.signals if s.type == LLM_DELTA]
        print(f"streamed {len(deltas)} deltas")
    if not step.ok:
        assert step.error is not None
        print(f"failed: {step.error.type}: {step.error.message}", file=sys.stderr)
        return 1
    print(step.value)
    model_calls = f"{step.turns} model call{'' if step.turns == 1 else 's'}"
    tool_calls = f"{step.tool_calls} tool call{'' if step.tool_calls == 1 else 's'}"
    print(f"{model_calls}, {tool_calls}, {step.usage.total_tokens} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
