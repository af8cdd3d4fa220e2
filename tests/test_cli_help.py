"""``ptcflow --help`` reads as plain text, and ``ptcflow model-server`` serves until stopped."""

from __future__ import annotations

import signal
import subprocess
import sys

import anyio
import pytest

from ptcflow.cli import main
from ptcflow.providers import OpenAIProvider
from ptcflow.runtime import LLMRequest
from ptcflow.signals import Message


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["demo", "--help"],
        ["model-server", "--help"],
        ["worker", "--help"],
        ["mcp", "serve", "--help"],
    ],
)
def test_help_has_no_markup(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "usage: ptcflow" in out and "``" not in out and ":func:" not in out


def test_model_server_from_the_command_line() -> None:
    command = [sys.executable, "-m", "ptcflow.cli", "model-server", "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            head = process.stdout.readline()
            assert head.startswith("ptcflow model server on http://127.0.0.1:"), head
            exports = dict(
                process.stdout.readline().removeprefix("export ").strip().split("=", 1)
                for _ in range(5)
            )
            url = exports["OPENAI_BASE_URL"]

            async def ask() -> str:
                async with OpenAIProvider(base_url=url, api_key="sk-local") as p:
                    hi = (Message(role="user", content="hi"),)
                    return (await p.generate(LLMRequest(model="m", messages=hi))).text

            assert anyio.run(ask) == "Hello from the local model server."
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
