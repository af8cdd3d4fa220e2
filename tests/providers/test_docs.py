"""examples/providers_react.py runs as written (docs/providers.md: tests/test_docs_run.py).

The SDKs are pointed at a local server that speaks both wire protocols (the environment
variables a user would set for a proxy), so every run makes real HTTP calls.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

from ptcflow.testing._server import ModelServer, open_model_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_model_server()) as served,
    ):
        yield served


@pytest.fixture
def local_env(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> ModelServer:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-key-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base_url}/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-key-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("PTCFLOW_OPENAI_COMPATIBLE_BASE_URL", f"{server.base_url}/v1")
    return server


def load_example() -> object:
    spec = importlib.util.spec_from_file_location(
        "providers_react", ROOT / "examples" / "providers_react.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv",
    [
        ["--model", "openai:gpt-4.1-mini"],
        ["--model", "anthropic:claude-sonnet-4-6", "--stream"],
        ["--model", "openai-compatible:llama3.2:3b", "What is 2 + 2?"],
    ],
)
def test_the_cli_example_runs_with_model(
    argv: list[str], local_env: ModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_example()
    assert module.main(argv) == 0  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert "2 model calls, 1 tool call, " in out
    sent = local_env.requests[-1].json()
    assert sent["model"] == argv[1].split(":", 1)[1]


def test_the_cli_example_reports_a_missing_key_before_any_call(
    local_env: ModelServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    before = len(local_env.requests)
    module = load_example()
    assert module.main(["--model", "anthropic:claude-sonnet-4-6"]) == 2  # type: ignore[attr-defined]
    assert "export ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert len(local_env.requests) == before
